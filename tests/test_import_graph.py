"""The import graph of the core (and of the installed first-party plugins) has no cycle.

The layer contracts in ``.importlinter`` (``lint-imports``) catch a cycle
that crosses layers; this catches any cycle between two modules, inside a
layer too. The graph is grimp's (import-linter's), read from the sources:
an import inside a function counts, an import under ``if TYPE_CHECKING:``
does not (it never runs).
"""

from __future__ import annotations

import pytest

from tests import first_party

grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install import-linter)")


def strongly_connected_components(graph) -> list[list[str]]:
    """Each set of modules that import one another, directly or not (Tarjan's algorithm, iterative)."""
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in imports:
        if root in index:
            continue
        index[root] = lowlink[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(imports[root]))]
        while work:
            module, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = lowlink[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(imports[successor])))
                    break
                if successor in on_stack:
                    lowlink[module] = min(lowlink[module], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    lowlink[parent] = min(lowlink[parent], lowlink[module])
                if lowlink[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1 or module in imports[module]:
                        components.append(sorted(component))
    return components


def describe_cycle(graph, component: list[str]) -> str:
    """One cycle through ``component``'s first module, with the line of each import."""
    first = component[0]
    back = next(m for m in component if graph.direct_import_exists(importer=m, imported=first))
    chain = list(graph.find_shortest_chain(importer=first, imported=back) or (first,)) + [first]
    steps = []
    for importer, imported in zip(chain, chain[1:]):
        lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
        steps.append(f"{importer} -> {imported} (l.{', l.'.join(map(str, lines))})")
    return "\n  ".join(steps)


def build_graph():
    packages = [p.package for p in first_party.installed()]
    return grimp.build_graph("rlengine", *packages, exclude_type_checking_imports=True, cache_dir=None)


def test_the_import_graph_has_no_cycle():
    graph = build_graph()

    cycles = strongly_connected_components(graph)

    assert not cycles, "import cycles (break each by moving the shared code to the lower module):\n" + "\n".join(
        f"- {', '.join(c)}:\n  {describe_cycle(graph, c)}" for c in cycles)


def test_the_cycle_finder_finds_a_cycle_and_its_chain():
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b", line_number=3, line_contents="import pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c", line_number=4, line_contents="import pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a", line_number=5, line_contents="import pkg.a")
    graph.add_import(importer="pkg.c", imported="pkg.d", line_number=6, line_contents="import pkg.d")

    cycles = strongly_connected_components(graph)

    assert cycles == [["pkg.a", "pkg.b", "pkg.c"]]
    assert describe_cycle(graph, cycles[0]) == "pkg.a -> pkg.b (l.3)\n  pkg.b -> pkg.c (l.4)\n  pkg.c -> pkg.a (l.5)"
