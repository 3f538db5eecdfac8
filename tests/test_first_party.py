"""The lists of first-party plugin packages outside the tests name the packages of ``plugins/*/setup.py``.

``.importlinter``, ``tox.ini`` and ``requirements.txt`` spell the list
themselves (their formats have no import); a package added to ``plugins/``
and left out of one of them fails here with one line naming the file and
the fix. The tests themselves take the list from ``tests.first_party``.
"""

from __future__ import annotations

import configparser
import re

import pytest

from tests.first_party import PACKAGES, ROOT

NOT_PLUGINS = {"template"}  # under plugins/ but rendered by cookiecutter, not installed


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _ini(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / name)
    return parser


def _plugin_directories(lines: list[str]) -> set[str]:
    """The ``X`` of every ``plugins/X`` the lines install (extras such as ``[mlflow]`` dropped)."""
    return {m.group(1) for line in lines for m in [re.search(r"plugins/([\w.-]+)", line)] if m} - NOT_PLUGINS


def _differences(where: str, found: set[str], expected: set[str], fix: str) -> list[str]:
    """One line per name missing from ``where`` (``fix``, its ``<package>`` filled in) or named there in vain."""
    return ([f"{where} lacks {name}: {fix.replace('<package>', name)}" for name in sorted(expected - found)]
            + [f"{where} names {name}, which is no first-party plugin package (plugins/*/setup.py): remove it"
               for name in sorted(found - expected)])


def _importlinter() -> list[str]:
    config = _ini(".importlinter")
    packages = {p.package for p in PACKAGES}
    roots = set(_lines(config["importlinter"]["root_packages"])) - {"rlengine"}
    sources = set(_lines(config["importlinter:contract:first-party-plugins"]["source_modules"]))
    return (_differences(".importlinter root_packages", roots, packages, "add it so lint-imports reads it")
            + _differences(".importlinter contract first-party-plugins source_modules", sources, packages,
                           "add it so it is held to the public core"))


def _tox() -> list[str]:
    config = _ini("tox.ini")
    directories = {p.directory for p in PACKAGES}
    envs = {env.strip() for env in config["tox"]["envlist"].split(",")}
    own_tests = {d for d in directories if f"plugins/{d}/tests" in config.get(f"testenv:{d}", "commands",
                                                                            fallback="")}
    lint_deps = _plugin_directories(_lines(config["testenv:lint"]["deps"]))
    return (_differences("tox.ini envlist", envs & directories, directories, "add the package's env to envlist")
            + _differences("tox.ini [testenv:*]", own_tests, directories,
                           "add a [testenv:<package>] section whose commands run plugins/<package>/tests")
            + _differences("tox.ini [testenv:lint] deps", lint_deps, directories,
                           "add -e {toxinidir}/plugins/<package> so lint-imports finds it"))


def _requirements() -> list[str]:
    installs = _plugin_directories(_lines((ROOT / "requirements.txt").read_text()))
    return _differences("requirements.txt", installs, {p.directory for p in PACKAGES},
                        "add -e plugins/<package> so the README's install includes it")


def test_the_first_party_packages_are_read_from_their_setup_files():
    assert PACKAGES, "no plugins/*/setup.py found"
    for package in PACKAGES:  # the package sits beside its setup.py
        assert (ROOT / "plugins" / package.directory / package.package / "__init__.py").is_file(), package


@pytest.mark.parametrize("check", [_importlinter, _tox, _requirements], ids=lambda check: check.__name__[1:])
def test_every_list_of_first_party_packages_names_them_all(check):
    problems = check()
    assert not problems, "\n".join(problems)
