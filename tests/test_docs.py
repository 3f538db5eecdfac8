"""The reference pages are generated from the code; they must be committed up to date."""

import os
import re

import attrs
import pluggy
import pytest

from rlengine.plugin import hookspecs
from devtools.docgen import CLI_PAGE, CONFIG_PAGE, DOCS_DIR, HOOKS_PAGE, cli_reference, hook_reference
from devtools.docgen_config import (
    config_reference,
    engine_sections,
    plugin_sections,
    section_table,
    undocumented_fields,
)

REGENERATE = "run python -m devtools.docgen"
MKDOCS_YML = os.path.join(os.path.dirname(DOCS_DIR), "mkdocs.yml")


def _read(path):
    with open(path) as f:
        return f.read()


def test_hook_reference_matches_the_hook_specs():
    assert _read(HOOKS_PAGE) == hook_reference(), f"docs/hooks.md is stale: {REGENERATE}"


def test_cli_reference_matches_the_parser():
    assert _read(CLI_PAGE) == cli_reference(), f"docs/cli.md is stale: {REGENERATE}"


def test_cli_reference_documents_every_subcommand():
    from rlengine.cli import parser

    commands = next(a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction").choices
    page = cli_reference()
    for name in commands:
        assert f"## `rlengine {name}`" in page, f"docs/cli.md has no section for rlengine {name}"


def test_config_reference_documents_the_engine_sections_as_the_classes_say():
    """Runs without any plugin: the engine's sections alone must be in the committed page."""
    committed = _read(CONFIG_PAGE)
    for name, cls in engine_sections():
        table = "\n".join(section_table(f"`[{name}]`", f"The engine's `{cls.__name__}` (`{cls.__module__}`).", cls))
        assert table in committed, f"the [{name}] section of docs/config-reference.md is stale: {REGENERATE}"


@pytest.mark.first_party
def test_config_reference_matches_the_config_classes():
    assert _read(CONFIG_PAGE) == config_reference(), f"docs/config-reference.md is stale: {REGENERATE}"


@pytest.mark.first_party
def test_config_reference_gives_every_key_a_type_a_default_and_a_meaning():
    rows = [line for line in config_reference().splitlines() if line.startswith("| ") and not line.startswith("| key")]
    assert rows
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == 4 and all(cells), f"incomplete row in docs/config-reference.md: {row}"


def _fields_without_comment(sections) -> list[str]:
    return [f"[{name}] {field} ({cls.__module__})" for name, cls in sections for field in undocumented_fields(cls)]


def test_every_engine_config_field_has_a_comment():
    missing = _fields_without_comment(engine_sections())
    assert not missing, f"config fields without a comment (add a trailing '# ...' or a '#:' line above): {missing}"


@pytest.mark.first_party
def test_every_first_party_plugin_config_field_has_a_comment():
    missing = _fields_without_comment((name, cls) for name, _, _, cls in plugin_sections())
    assert not missing, f"config fields without a comment (add a trailing '# ...' or a '#:' line above): {missing}"


@attrs.define
class _PartlyCommented:
    commented: int = 1  # has a meaning
    #: a meaning on the line above
    above: int = 2
    bare: int = 3


@attrs.define
class _Override(_PartlyCommented):
    """Overrides without a comment inherit the base's; ``bare`` has none to inherit."""

    commented: int = 4
    bare: float = 5.0


def test_a_field_without_a_comment_is_named():
    assert undocumented_fields(_PartlyCommented) == ["_PartlyCommented.bare"]
    assert undocumented_fields(_Override) == ["_Override.bare"]


def test_every_page_is_in_the_site_navigation():
    nav = _read(MKDOCS_YML)
    for page in sorted(os.listdir(DOCS_DIR)):
        if page.endswith(".md"):
            assert re.search(rf":\s*{re.escape(page)}\s*$", nav, re.MULTILINE), f"docs/{page} is not in mkdocs.yml nav"


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


# -- the worked examples of docs/plugins.md are real code ------------------------------------
def plugin_page_files() -> dict[str, str]:
    """``my_plugin/<file>.py`` -> source, for every Python block of docs/plugins.md that starts with its path."""
    blocks = re.findall(r"```python\n# (my_plugin/\w+\.py)\n(.*?)```", _read(os.path.join(DOCS_DIR, "plugins.md")), re.S)
    return dict(blocks)


@pytest.fixture
def my_plugin(tmp_path, monkeypatch):
    import importlib
    import sys

    files = plugin_page_files()
    assert set(files) == {f"my_plugin/{m}.py" for m in ("plugin", "algorithm", "environment", "transformer", "writer")}
    (tmp_path / "pkg" / "my_plugin").mkdir(parents=True)
    (tmp_path / "pkg" / "my_plugin" / "__init__.py").write_text("")
    for path, source in files.items():
        (tmp_path / "pkg" / path).write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    yield importlib.import_module("my_plugin.plugin")
    for name in [m for m in sys.modules if m == "my_plugin" or m.startswith("my_plugin.")]:
        del sys.modules[name]


def test_plugins_page_examples_register_and_train_together(my_plugin, tmp_path):
    import csv

    from rlengine.run.engine import Engine

    root = tmp_path / "run"
    raw = {"train": dict(algorithm="vpg", env="linewalk", transformers=["scale_by_max"], writers=["csv"],
                         num_envs=8, unroll_length=16, num_env_steps=2048, eval_interval=8, num_eval_episodes=4,
                         seed=1, root_dir=str(root)),
           "vpg": {"learning_rate": 0.05}}
    engine = Engine(raw, extra_plugins=[("my-plugin", my_plugin)])
    assert engine.plugins.registered_by("my-plugin") == {
        "algorithms": ["vpg"], "environments": ["linewalk"], "transformers": ["scale_by_max"], "writers": ["csv"],
        "distributions": []}
    result = engine.train()
    with open(root / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows if not r["eval/average_return"]] == list(range(1, 17))
    returns = [float(r["train/episode_return"]) for r in rows if r["train/episode_return"]]
    assert returns[0] < 0.7 and min(returns[-4:]) > 0.95  # the first, random walks often time out
    assert result.eval_return == 1.0  # the greedy policy walks straight to the goal
