"""The hook reference is generated from the hook specs; it must be committed up to date."""

import pluggy

from rlengine import hookspecs
from rlengine.docgen import HOOKS_PAGE, hook_reference


def test_hook_reference_matches_the_hook_specs():
    with open(HOOKS_PAGE) as f:
        committed = f.read()
    assert committed == hook_reference(), "docs/hooks.md is stale: run python -m rlengine.docgen"


def test_every_hook_is_prefixed_typed_and_documented():
    pm = pluggy.PluginManager("rlengine")
    pm.add_hookspecs(hookspecs)
    names = hookspecs.hook_names()
    assert sorted(names) == sorted(n for n in dir(pm.hook) if not n.startswith("_"))
    for name in names:
        fn = getattr(hookspecs, name)
        assert name.startswith("rlengine_")
        assert "return" in fn.__annotations__, f"{name} has no return annotation"
        assert all(arg in fn.__annotations__ for arg in fn.__code__.co_varnames[: fn.__code__.co_argcount])
        doc = fn.__doc__ or ""
        assert "Called" in doc or "called" in doc, f"{name}: docstring must say when it is called"
        assert "return" in doc.lower(), f"{name}: docstring must say what the return means"
