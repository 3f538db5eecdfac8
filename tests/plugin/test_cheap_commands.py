"""``rlengine --version``, ``--help`` and ``plugins`` import no TensorFlow.

Each runs in a fresh interpreter with the installed entry points, so a
plugin whose entry-point module (or package ``__init__``) imports TensorFlow
at the top, or registers a class instead of a ``"module:Class"`` string,
fails here. The rendered plugin template is held to the same rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import first_party
from tests.plugin_packages import run_python

#: What must stay out of a cheap command's process.
HEAVY = ("tensorflow", "tensorflow_probability", "keras", "tf_keras")

MARKER = "PROBE-RESULT="

# Runs the CLI in-process (argparse's --help exits with SystemExit), then reports what it imported.
PROBE = """
import json
import sys
import rlengine.cli as c
try:
    rc = c.main({argv!r})
except SystemExit as exc:
    rc = exc.code
print({marker!r} + json.dumps(sorted(sys.modules)))
sys.exit(rc or 0)
"""


def _run(argv: list[str], tmp_path: Path):
    """``(process, modules)``: the finished probe and every module it had imported."""
    process = run_python("-c", PROBE.format(argv=argv, marker=MARKER), pythonpath=[], cwd=tmp_path, timeout=120)
    lines = [line for line in process.stdout.splitlines() if line.startswith(MARKER)]
    assert lines, f"the probe did not finish:\n{process.stdout[-2000:]}\n{process.stderr[-3000:]}"
    return process, set(json.loads(lines[-1][len(MARKER):]))


def _installed_first_party() -> dict[str, str]:
    """Entry-point name -> package, of the first-party plugins installed here."""
    return {p.entry_point: p.package for p in first_party.installed()}


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["plugins"]], ids=" ".join)
def test_cheap_command_imports_no_tensorflow(argv, tmp_path):
    process, modules = _run(argv, tmp_path)

    assert process.returncode == 0, process.stderr[-3000:]
    heavy = sorted(modules & set(HEAVY))
    assert heavy == [], (f"rlengine {' '.join(argv)} imported {heavy}; register classes as 'module:Class' "
                         "strings and keep entry-point modules (and their packages' __init__) light")
    if argv != ["--version"]:  # the entry points were loaded, so the check above covered every installed plugin
        installed = _installed_first_party()
        assert {f"{package}.plugin" for package in installed.values()} <= modules
        if argv == ["plugins"]:
            listed = {line.split()[0] for line in process.stdout.splitlines() if line.strip()}
            assert set(installed) <= listed, process.stdout


@pytest.mark.first_party
def test_every_lazy_reference_of_the_first_party_plugins_resolves():
    """A ``"module:Class"`` typo would surface only on first use; resolve (and check) them all here."""
    from rlengine.plugin.manager import build_plugins
    from rlengine.plugin.registry import KINDS

    installed = _installed_first_party()
    plugins = build_plugins()
    entries = [e for kind in KINDS if kind.name != "preset" for e in plugins.registries[kind.name]
               if e.plugin in installed]
    presets = [e for e in plugins.registries.presets if e.plugin in installed]  # paths: nothing to import

    assert {e.plugin for e in entries} == set(installed)
    assert all(e.lazy for e in entries), [e.name for e in entries if not e.lazy]
    for entry in entries:
        assert entry.obj.__name__ == entry.reference.rpartition(":")[2]  # imports it and checks its base class
    assert all(isinstance(e.obj, Path) and e.obj.is_file() for e in presets), [e.name for e in presets]


def test_the_rendered_template_plugin_registers_without_tensorflow(tmp_path):
    cookiecutter = pytest.importorskip("cookiecutter.main").cookiecutter
    template = Path(__file__).resolve().parents[2] / "plugins" / "template"
    project = Path(cookiecutter(str(template), no_input=True, output_dir=str(tmp_path / "out"),
                                extra_context={"plugin_name": "cheapcheck"}))
    # Loads the entry-point module and calls its registration hook, as `rlengine plugins` does.
    code = f"""
import sys
import rlengine_cheapcheck.plugin as plugin
registered = []
plugin.rlengine_register_algorithms(register=lambda name, obj, *extra: registered.append((name, obj)))
assert registered == [("cheapcheck_pg", "rlengine_cheapcheck.algorithm:PolicyGradient")], registered
print(",".join(m for m in {HEAVY!r} if m in sys.modules) or "no heavy module")
"""
    process = run_python("-c", code, pythonpath=[project], cwd=tmp_path, timeout=120)

    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stdout.strip().splitlines()[-1] == "no heavy module"
