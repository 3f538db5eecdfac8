"""docs/graph-environments.md: its Python blocks run, in order, in one namespace (they build on one another)."""

import os
import re

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "graph-environments.md")


def test_the_graph_environments_page_examples_run():
    with open(DOCS) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 4
    namespace = {"__name__": "graph_environments_page"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/graph-environments.md block {i}", "exec"), namespace)  # noqa: S102
