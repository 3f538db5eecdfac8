"""Every promise of docs/resume.md and docs/trackers.md has a test that exercises it.

Each paragraph and each list item of those pages ends with a marker naming what holds it to its word:

* ``<!-- tested: tests/run/test_resume.py::test_name, plugins/writers/tests/test_mlflow.py::test_other -->``:
  the tests (a file of the checkout and a test function in it) that exercise the promise;
* ``<!-- measured: benchmarks/checkpoint_size.py -->``: a figure, printed by that script (no test asserts
  timings).

Code blocks, tables, headings and images are what the paragraph around them says, and carry none; nor
does a list's lead-in (a paragraph ending in ``:`` before it), whose items carry theirs. A
paragraph or item added without a marker fails here, and so does a marker naming a test that no longer
exists (renamed, or removed with its promise).
"""

from __future__ import annotations

import ast
import functools
import os
import re

import pytest

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ("docs/resume.md", "docs/trackers.md")
MARKER = re.compile(r"<!-- (tested|measured): ([^>]*?) -->")
ITEM = re.compile(r"^(\*|-|\d+\.) ")


def promises(text: str) -> list[str]:
    """The paragraphs and list items of a Markdown page, without code blocks, tables, headings and images."""
    units: list[list[str]] = []
    fenced = False
    current: list[str] = []

    def end() -> None:
        if current:
            units.append(list(current))
            current.clear()

    for line in text.splitlines():
        if line.startswith("```"):
            end()
            fenced = not fenced
            continue
        if fenced or not line.strip() or line.startswith(("#", "|", "![")):
            end()
            continue
        if ITEM.match(line):
            end()
        current.append(line)
    end()
    return ["\n".join(unit) for unit in units]


@functools.lru_cache(maxsize=None)
def functions_of(path: str) -> frozenset:
    """Names of the test functions of a test file of the checkout (empty if it does not exist)."""
    full = os.path.join(REPO_DIR, path)
    if not os.path.isfile(full):
        return frozenset()
    with open(full, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return frozenset(node.name for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"))


def broken_references(kind: str, names: str) -> list[str]:
    """What a marker names that does not exist."""
    broken = []
    for name in (n.strip() for n in names.split(",")):
        if kind == "measured":
            if not os.path.isfile(os.path.join(REPO_DIR, name)):
                broken.append(f"{name}: no such script")
            continue
        path, _, function = name.partition("::")
        if not function or function not in functions_of(path):
            broken.append(f"{name}: no such test")
    return broken


def problems(page: str) -> list[str]:
    with open(os.path.join(REPO_DIR, page), encoding="utf-8") as f:
        text = f.read()
    found = []
    units = promises(text)
    for unit, after in zip(units, [*units[1:], ""]):
        if unit.endswith(":") and ITEM.match(after):  # a list's lead-in: its items are the promises
            continue
        markers = MARKER.findall(unit)
        first_line = unit.splitlines()[0][:70]
        if not markers:
            found.append(f"{page}: no test named for: {first_line!r}")
        for kind, names in markers:
            found += [f"{page}: {first_line!r} names {broken}" for broken in broken_references(kind, names)]
    return found


@pytest.mark.parametrize("page", PAGES)
def test_every_promise_names_the_tests_that_exercise_it(page):
    assert not problems(page), "\n".join(problems(page))


def test_a_paragraph_without_a_marker_or_with_a_test_that_does_not_exist_is_named(tmp_path, monkeypatch):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text("# Title\n\nA promise.\n<!-- tested: tests/test_doc_promises.py::test_no_such_test -->\n\n"
                    "* an item with none;\n* an item measured.\n  <!-- measured: benchmarks/no_such.py -->\n\n"
                    "```bash\nrlengine train\n```\n\nHeld.\n<!-- tested: tests/test_doc_promises.py::"
                    "test_every_promise_names_the_tests_that_exercise_it -->\n")
    monkeypatch.setattr(f"{__name__}.REPO_DIR", str(tmp_path))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_doc_promises.py").write_text(open(__file__, encoding="utf-8").read())
    functions_of.cache_clear()
    try:
        assert problems("docs/page.md") == [
            "docs/page.md: 'A promise.' names tests/test_doc_promises.py::test_no_such_test: no such test",
            "docs/page.md: no test named for: '* an item with none;'",
            "docs/page.md: '* an item measured.' names benchmarks/no_such.py: no such script",
        ]
    finally:
        functions_of.cache_clear()
