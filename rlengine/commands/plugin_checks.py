"""The plugin contract checks of ``rlengine plugins --check``, run on every installed plugin at once.

A run checks a plugin where it meets it, and only the plugins it uses. This
runs the same checks on everything installed, so a broken plugin shows before
a run needs it. Without TensorFlow (``--check``): what loading already found
(an import that fails, an API version that does not fit or is missing, a
name two plugins register), every registered ``"module:Class"`` string
resolved without importing it (:mod:`rlengine.commands.reference_checks`),
and every command imported and made (the command line imports them all, so
they must come without TensorFlow). With ``--check --build`` too: every
registered class imported and held to its kind's base class, every encoder
built on small observation specs and checked by
:func:`~rlengine.api.network.check_encoder`, and every graph environment made
and reset against its ``time_step_spec()``. Python environment providers serve
ids they cannot list (any Gymnasium id), so none is made here: a run checks
each time step of theirs (:mod:`rlengine.collect.env_checks`).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Iterator

import attrs

from rlengine.errors import one_line
from rlengine.plugin.manager import Plugins


@attrs.frozen
class Problem:
    """One broken rule (``error``) or one thing to fix that breaks nothing yet (a warning)."""

    line: str
    error: bool = True


#: What ``--check`` leaves to ``--check --build``: the checks that import TensorFlow.
BUILD_CHECKS = ("registered classes imported and held to their kind's base class", "encoders built",
                "graph environments reset")


def problems(plugins: Plugins, build: bool = False) -> Iterator[Problem]:
    """Every problem of the installed plugins, one line each naming the plugin, its distribution and the rule.

    What loading found comes first; then each registration, imported and built with ``build`` (which imports
    TensorFlow), else resolved without importing (commands excepted: every command line imports them).
    """
    yield from (Problem(notice, error=False) for notice in plugins.notices)
    yield from (Problem(failure.message) for failure in plugins.failures)
    if build:
        from rlengine.quiet_tensorflow import import_tensorflow

        import_tensorflow()  # quietly, and lean, before the plugins' classes import it
    for entry in _entries(plugins):
        found = _entry_problems(entry) if build or entry.kind_name == "command" else _reference_problems(entry)
        yield from (Problem(_named(plugins, entry, line), error) for line, error in found)


def _entries(plugins: Plugins) -> Iterator[Any]:
    from rlengine.plugin.registry import KINDS

    for kind in KINDS:
        yield from plugins.registries[kind.name]


def _named(plugins: Plugins, entry: Any, line: str) -> str:
    """``line`` led by the plugin that registered ``entry`` and its distribution (once)."""
    lead = f"plugin {entry.plugin!r}"
    return f"{lead}{plugins.origin(entry.plugin)}: {line.removeprefix(lead + ' ')}"


def _reference_problems(entry: Any) -> list[tuple[str, bool]]:
    """The rule a lazy registration breaks that shows without importing it (a class is held to its base
    when it is registered)."""
    from rlengine.commands.reference_checks import reference_problem

    problem = reference_problem(entry.reference) if entry.lazy else ""
    if not problem:
        return []
    return [(f"plugin {entry.plugin!r} registered {entry.kind_name} {entry.name!r} as {entry.reference!r}, "
             f"which cannot be imported: {problem}", True)]


def _entry_problems(entry: Any) -> list[tuple[str, bool]]:
    """(line, error) for each rule ``entry`` breaks: importable, of its kind's base, then its kind's own."""
    from rlengine.errors import RLEngineError

    try:
        obj = entry.obj
    except RLEngineError as exc:  # it cannot be imported, or is not a subclass of its kind's base class
        return [(one_line(exc), True)]
    check = KIND_CHECKS.get(entry.kind_name)
    if check is None:
        return []
    try:
        return check(entry.name, obj)
    except Exception as exc:  # a plugin's code raised where the check called it
        return [(f"{entry.kind_name} {entry.name!r} raised {type(exc).__name__}: {one_line(exc)}", True)]


def _command(name: str, cls: type) -> list:
    cls().add_arguments(argparse.ArgumentParser(prog=f"rlengine {name}"))
    return []


def _default_config(cls: type) -> Any:
    config_class = getattr(cls, "config_class", None)
    return config_class() if config_class is not None else None


def _small_specs() -> list:
    """Observations an encoder may be built on: a vector, an image, a dict of both."""
    import tensorflow as tf

    vector, image = tf.TensorSpec([4], tf.float32), tf.TensorSpec([64, 64, 3], tf.uint8)
    return [vector, image, {"image": image, "vector": vector}]


def _network(name: str, cls: type) -> list:
    from rlengine.api.network import check_encoder
    from rlengine.errors import PluginError

    refused = []
    for spec in _small_specs():
        try:
            encoder = cls(spec, _default_config(cls), name=f"check_{name}")
        except Exception as exc:  # not an observation this encoder reads: the next one may be
            refused.append(f"{type(exc).__name__}: {one_line(exc)}")
            continue
        try:
            check_encoder(encoder, f"encoder {name!r}")
        except PluginError as exc:
            return [(one_line(exc), True)]
        return []
    return [(f"encoder {name!r} could not be built on a vector, an image or a dict of both ({refused[0]}), so "
             "its contract is not checked here; a run checks it where it is built", False)]


def _graph_environment(name: str, cls: type) -> list:
    import tensorflow as tf

    from rlengine.collect.env_checks import TimeStepCheck
    from rlengine.errors import EnvironmentFault

    env = cls(env_id=name, num_envs=2, seed=0, first_env_id=0, config=_default_config(cls))
    try:
        _, time_step = env.reset(tf.constant([0, 0], tf.int32))
        TimeStepCheck(env.time_step_spec(), 2, f"graph environment {name!r}").check_spec(time_step, "reset")
    except EnvironmentFault as exc:
        return [(one_line(exc), True)]
    finally:
        env.close()
    return []


#: The checks of a kind beyond importing its class and its base class, by kind name.
KIND_CHECKS: dict[str, Callable[[str, Any], list]] = {
    "command": _command,
    "network": _network,
    "graph_environment": _graph_environment,
}
