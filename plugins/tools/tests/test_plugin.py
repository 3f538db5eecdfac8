"""The ``tools`` plugin registers its commands like a third party: lazily, on the public API only."""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import pathlib
import subprocess
import sys

import pytest

from rlengine import cli

COMMANDS = ["eval", "export", "play", "plot", "runs"]
PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "rlengine_tools"
# What a plugin may import of rlengine (the facade and its public kits); rlengine.run, .plugin,
# .config and .pipelines are the core's own.
PUBLIC = ("rlengine", "rlengine.api", "rlengine.collect", "rlengine.learn", "rlengine.testing")


def run_main(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plugins_lists_the_four_commands_under_tools(capsys):
    code, out, err = run_main(capsys, "plugins", "--json")
    [tools] = [row for row in json.loads(out) if row["name"] == "tools"]

    assert code == 0 and err == ""
    assert tools["distribution"] == "rlengine-tools"
    assert tools["version"] == md.version("rlengine-tools")
    assert tools["commands"] == COMMANDS
    assert all(tools[kind] == [] for kind in ("algorithms", "environments", "writers"))


def test_plugins_table_names_the_commands(capsys):
    _, out, _ = run_main(capsys, "plugins")

    [line] = [line for line in out.splitlines() if line.startswith("tools ")]
    assert line.split()[1] == "rlengine-tools"
    assert line.endswith("commands: " + ", ".join(COMMANDS))


def test_help_lists_the_four_commands(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    out = capsys.readouterr().out

    assert info.value.code == 0
    for command, words in [("eval", "evaluate the greedy policy"), ("play", "run the greedy policy"),
                           ("export", "TensorFlow SavedModel"), ("plot", "draw learning curves")]:
        [line] = [line for line in out.splitlines() if line.split()[:1] == [command]]
        assert words in line


def test_disabling_tools_removes_its_commands(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--disable-plugin", "tools", "eval", "runs/x"])

    assert info.value.code == 2
    assert "invalid choice: 'eval'" in capsys.readouterr().err


def test_the_plugin_and_its_commands_import_no_tensorflow():
    # rlengine --help imports every command class; TensorFlow is for the command that runs.
    code = ("import sys\nimport rlengine_tools.plugin, rlengine_tools.commands, rlengine_tools.rundir, "
            "rlengine_tools.plot\nsys.exit('tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, f"TensorFlow was imported\n{done.stderr[-2000:]}"


def rlengine_imports(path: pathlib.Path) -> list:
    """Every ``rlengine...`` module ``path`` imports, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return [name for name in found if name.split(".")[0] == "rlengine"]


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_the_package_imports_only_public_rlengine_modules(path):
    private = [name for name in rlengine_imports(path)
               if not any(name == p or name.startswith(p + ".") and p != "rlengine" for p in PUBLIC)]

    assert private == [], f"{path.name} imports private rlengine modules; use rlengine.Engine and the public API"
