"""Reference pages generated from the code, so the docs cannot drift from it.

``python -m rlengine.docgen`` rewrites ``docs/hooks.md``; a test fails when
the committed page differs from what the hook specs say.
"""

from __future__ import annotations

import inspect
import os
import sys

from rlengine import hookspecs

HOOKS_PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "hooks.md")


def hook_reference() -> str:
    lines = ["# Hook reference", "",
             "Every hook rlengine calls, generated from `rlengine/hookspecs.py` by",
             "`python -m rlengine.docgen`. Implement one with `@rlengine.hookimpl` in the module",
             "your `rlengine` entry point names; an implementation may take any subset of the arguments.",
             ""]
    for name in hookspecs.hook_names():
        fn = getattr(hookspecs, name)
        signature = str(inspect.signature(fn)).replace("'", "")
        lines += [f"## {name}", "", "```python", f"{name}{signature}", "```", "", inspect.getdoc(fn), ""]
    return "\n".join(lines)


def main() -> int:
    with open(HOOKS_PAGE, "w") as f:
        f.write(hook_reference())
    print(f"wrote {HOOKS_PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
