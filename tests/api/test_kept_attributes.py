"""Each plugin base class says, in its docstring, every attribute its ``__init__`` keeps (``self.config``,
...), so a plugin author knows what ``super().__init__`` gives them without reading the core."""

from __future__ import annotations

import ast
import inspect

import pytest

from rlengine.api.algorithm import Algorithm
from rlengine.api.environment import EnvironmentCopies
from rlengine.api.network import Encoder
from rlengine.api.pipeline import Pipeline
from rlengine.api.transformer import ObservationTransformer
from rlengine.api.writer import SummaryWriter

BASES = (Algorithm, EnvironmentCopies, Encoder, Pipeline, ObservationTransformer, SummaryWriter)


def kept_attributes(cls: type) -> set:
    """Names ``cls.__init__`` sets on ``self``: ``self.x = ...``, ``untracked(self, "x", ...)``,
    ``object.__setattr__(self, "x", ...)``."""
    tree = ast.parse(inspect.getsource(cls.__init__).strip().replace("\n    ", "\n"))
    names = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        names |= {t.attr for t in targets if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self"}
        if isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and getattr(node.args[0], "id", "") == "self":
            names.add(node.args[1].value)
    return names


@pytest.mark.parametrize("cls", BASES, ids=lambda c: c.__name__)
def test_the_docstring_names_every_attribute_init_keeps(cls):
    kept = kept_attributes(cls)
    doc = inspect.getdoc(cls) or ""

    assert kept, f"{cls.__name__}.__init__ keeps nothing the check could find"
    missing = sorted(name for name in kept if f"``self.{name}``" not in doc)
    assert not missing, f"{cls.__name__}'s docstring does not say it keeps {missing} (write ``self.NAME``)"
