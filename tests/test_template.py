"""The plugin template renders into a package that installs, passes its own tests and lists in rlengine."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from cookiecutter.exceptions import FailedHookException
from cookiecutter.main import cookiecutter

from tests.plugin_packages import pip_install, run_python, run_rlengine

TEMPLATE = Path(__file__).resolve().parent.parent / "plugins" / "template"
# Not the defaults, so that a name left hard-coded in the template shows up.
CONTEXT = {"plugin_name": "tabular-pg", "algorithm_name": "tabular_softmax", "author": "A. Author",
           "version": "0.2.0"}
DISTRIBUTION, PACKAGE = "rlengine-tabular-pg", "rlengine_tabular_pg"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """``(root, project, site)``: the rendered project and the pip --target directory it is installed in."""
    root = tmp_path_factory.mktemp("template")
    project = Path(cookiecutter(str(TEMPLATE), no_input=True, output_dir=str(root), extra_context=CONTEXT))
    pip_install(project, root / "site")
    return root, project, root / "site"


def test_rendering_fills_in_every_name(rendered):
    _, project, site = rendered
    files = [path for path in project.rglob("*") if path.is_file()]

    assert project.name == DISTRIBUTION
    assert {p.relative_to(project).as_posix() for p in files} >= {
        "pyproject.toml", "README.md", "tox.ini", "tests/test_plugin.py",
        f"{PACKAGE}/__init__.py", f"{PACKAGE}/plugin.py", f"{PACKAGE}/algorithm.py"}
    leftovers = [p.name for p in files if "cookiecutter" in p.read_text() or "{{" in p.read_text()]
    assert not leftovers, f"unrendered placeholders in {leftovers}"
    entry_points = (site / f"{PACKAGE}-0.2.0.dist-info" / "entry_points.txt").read_text()
    assert "[rlengine]" in entry_points and f"tabular-pg = {PACKAGE}.plugin" in entry_points


def _core_modules_imported(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        yield from (name for name in names if name.split(".")[0] == "rlengine")


def test_the_rendered_package_imports_only_the_public_core_module(rendered):
    _, project, _ = rendered

    imported = {name for path in (project / PACKAGE).glob("*.py") for name in _core_modules_imported(path)}

    assert imported == {"rlengine"}  # rlengine.__all__: the rest of the core is private


@pytest.mark.slow  # tox -e template (CI) renders, installs and runs the package's tests the same way
def test_the_rendered_package_passes_its_own_tests(rendered):
    root, project, site = rendered

    # Run from outside the project, so the package is imported from the install, not the sources.
    process = run_python("-m", "pytest", "-q", str(project / "tests"), pythonpath=[site], cwd=root)

    summary = process.stdout.strip().splitlines()[-1] if process.stdout.strip() else ""
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-2000:]
    assert " passed" in summary and "skipped" not in summary, summary


def test_rlengine_plugins_lists_the_rendered_plugin_with_its_distribution(rendered):
    root, _, site = rendered

    process = run_rlengine("plugins", "--json", pythonpath=[site], cwd=root)

    assert process.returncode == 0, process.stderr
    rows = {row["name"]: row for row in json.loads(process.stdout)}
    plugin = rows["tabular-pg"]
    assert plugin["distribution"] == DISTRIBUTION and plugin["version"] == "0.2.0"
    assert plugin["algorithms"] == ["tabular_softmax"]
    assert plugin["environments"] == plugin["writers"] == plugin["transformers"] == []


def test_a_package_name_python_cannot_import_is_refused_before_rendering(tmp_path, capfd):
    with pytest.raises(FailedHookException):
        cookiecutter(str(TEMPLATE), no_input=True, output_dir=str(tmp_path),
                     extra_context={"package_name": "my-plugin"})

    assert "package_name 'my-plugin' is not a Python identifier" in capfd.readouterr().err
    assert not list(tmp_path.iterdir())
