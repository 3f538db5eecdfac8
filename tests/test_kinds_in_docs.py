"""Every plugin kind is named wherever the docs list the kinds (the README, the docs' front page, the plugin
guide), so a kind added to the registry table cannot be left out of what a reader sees first."""

from __future__ import annotations

import os
import re

import pytest

from rlengine.plugin.registry import KINDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: How the prose names each kind of :data:`KINDS`.
PROSE = {"algorithm": "algorithms", "environment": "environments", "graph_environment": "graph environments",
         "transformer": "observation transformers", "writer": "summary writers", "pipeline": "pipelines",
         "distribution": "distribution converters", "command": "commands", "callback": "callbacks",
         "network": "networks", "preset": "presets"}
#: The plugin guide's section heading of each kind.
HEADINGS = {"algorithm": "An algorithm", "environment": "An environment", "graph_environment": "A graph environment",
            "transformer": "An observation transformer", "writer": "A summary writer", "pipeline": "A pipeline",
            "distribution": "A distribution converter", "command": "A command", "callback": "A callback",
            "network": "A network (encoder)", "preset": "A preset"}


def _paragraphs(path: str) -> list:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return [" ".join(p.split()) for p in f.read().split("\n\n")]


def test_every_kind_has_its_prose_name_and_heading():
    assert set(PROSE) == set(HEADINGS) == {kind.name for kind in KINDS}


@pytest.mark.parametrize("path, opening", [("README.md", "A plugin-based reinforcement-learning engine"),
                                           ("README.md", "kinds of plugin, each registered through its own hook"),
                                           ("docs/index.md", "rlengine is a plugin-based")])
def test_the_paragraph_that_lists_the_kinds_names_every_one(path, opening):
    (paragraph,) = [p for p in _paragraphs(path) if opening in p]
    text = paragraph.lower()

    missing = [name for name in PROSE.values() if name not in text]
    assert not missing, f"{path}: the paragraph that lists the plugin kinds does not name {missing}"


def test_the_readme_counts_the_kinds_it_lists():
    numbers = {"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14}
    (paragraph,) = [p for p in _paragraphs("README.md") if "kinds of plugin, each registered" in p]
    count = re.match(r"(\w+) kinds of plugin", paragraph)

    assert count is not None and numbers.get(count[1].lower()) == len(KINDS), paragraph[:60]


def test_the_plugin_guide_has_a_section_per_kind():
    with open(os.path.join(ROOT, "docs", "plugins.md"), encoding="utf-8") as f:
        headings = set(re.findall(r"^## (.+)$", f.read(), re.M))

    assert not [h for h in HEADINGS.values() if h not in headings]
