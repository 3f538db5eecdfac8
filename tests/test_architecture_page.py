"""docs/architecture.md says what the code is: its layer diagram is the layers contract of
``.importlinter``, its package tree names every room of ``rlengine`` and nothing that is gone, and
the paths it and docs/performance.md name exist."""

import configparser
import os
import re

import pytest

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO_DIR, "docs", "architecture.md")
IMPORTLINTER = os.path.join(REPO_DIR, ".importlinter")
PACKAGE_DIR = os.path.join(REPO_DIR, "rlengine")


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _layer(line: str) -> frozenset:
    """One layer as a set of sibling names: ``"commands | builtin"`` -> ``{"commands", "builtin"}``."""
    return frozenset(name.strip() for name in line.split("|"))


def contract_layers(text: str) -> list:
    """The layers of the ``layers`` contract of an ``.importlinter`` file, high to low (configparser,
    as import-linter reads it)."""
    config = configparser.ConfigParser()
    config.read_string(text)
    return [_layer(line) for line in config["importlinter:contract:layers"]["layers"].split("\n") if line.strip()]


def page_section(page: str, heading: str) -> str:
    """The text of one ``## heading`` section of a Markdown page."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", page, re.S | re.M)
    assert match, f"docs/architecture.md has no '## {heading}' section"
    return match.group(1)


def first_block(section: str) -> list:
    """The lines of the first fenced block of a section."""
    match = re.search(r"^```\w*\n(.*?)^```", section, re.S | re.M)
    assert match, "the section has no fenced block"
    return match.group(1).splitlines()


def diagram_layers(page: str) -> list:
    """The layers of the page's diagram, high to low; the ``high``/``low`` marks beside it are not layers."""
    lines = first_block(page_section(page, "Layers"))
    return [_layer(re.sub(r"\s{2,}(high|low)\s*$", "", line)) for line in lines if line.strip()]


def tree_entries(page: str) -> set:
    """The paths the package tree gives under ``rlengine/``, as ``"run/checkpoints"`` or ``"cli.py"``."""
    entries, inside = set(), False
    for line in first_block(page_section(page, "The package tree")):
        if not line.startswith(" "):
            inside = line == "rlengine/"
        elif inside and not line.startswith("   "):  # an entry; deeper lines continue its description
            entries.add(line.split()[0].rstrip("/"))
    return entries


def package_rooms(root: str = PACKAGE_DIR) -> set:
    """Every subpackage of ``root`` (at any depth, as ``"run/checkpoints"``) and every module at its top."""
    rooms = {name for name in os.listdir(root) if name.endswith(".py")}
    for folder, _, files in os.walk(root):
        if folder != root and "__init__.py" in files:
            rooms.add(os.path.relpath(folder, root).replace(os.sep, "/"))
    return rooms


def test_the_layer_diagram_is_the_import_contract():
    in_page, in_contract = diagram_layers(_read(PAGE)), contract_layers(_read(IMPORTLINTER))
    assert in_page == in_contract, (
        "the layer diagram of docs/architecture.md differs from the layers of .importlinter; "
        f"write the contract's layers there, high to low:\n{in_contract}")


def test_the_package_tree_names_every_room_and_no_other():
    in_page, in_package = tree_entries(_read(PAGE)), package_rooms()
    named = {"/".join(entry.split("/")[:depth]) for entry in in_page for depth in range(1, entry.count("/") + 2)}
    assert in_package - named == set(), "docs/architecture.md's package tree misses these rooms of rlengine"
    assert in_page - in_package == set(), "docs/architecture.md's package tree names what rlengine no longer has"


@pytest.mark.parametrize("page", ["architecture.md", "performance.md"])
def test_every_path_the_page_names_exists(page):
    text = _read(os.path.join(REPO_DIR, "docs", page))
    paths = set(re.findall(r"`((?:rlengine|plugins|benchmarks|examples|tests|devtools)/[\w./-]+)`", text))
    assert paths, f"docs/{page} names no path: the pattern is wrong"
    gone = sorted(p for p in paths if not os.path.exists(os.path.join(REPO_DIR, p)))
    assert not gone, f"docs/{page} names paths that do not exist: {gone}"


def test_a_diagram_that_differs_is_seen():
    contract = "[importlinter:contract:layers]\nlayers =\n    cli\n    run | policy\n    errors\n"
    page = "## Layers\n\n```\ncli          high\npolicy | run\nerrors       low\n```\n"
    assert contract_layers(contract) == diagram_layers(page)  # the order of siblings does not matter
    assert contract_layers(contract) != diagram_layers(page.replace("policy | run", "run\npolicy"))
    assert contract_layers(contract) != diagram_layers(page.replace("policy | run", "policy"))
