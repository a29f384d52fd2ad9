"""No import cycle anywhere in `src/`.

A cycle is a set of modules each of which reaches the others by imports: at module level, inside
a function (a "lazy" import that only hides the cycle from the interpreter) or under
`if TYPE_CHECKING:` (the modules still depend on each other's names). Each cycle is reported
once, as the shortest chain of imports round one of its modules, with the line of each import.
The fix is a module below both that holds what they share, or a protocol the lower one is
typed against.

The import graph comes from grimp (installed with import-linter, which reads the same graph for
`.importlinter`'s contracts); finding the cycles in it is Tarjan's algorithm, written out here
because grimp answers questions about chains between named modules but lists no cycles.

    python tools/check_import_cycles.py [SRC]   # default: src
"""

from __future__ import annotations

import itertools
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path

import grimp

DEFAULT_SRC = "src"

Graph = Mapping[str, frozenset[str]]


def packages(src: Path) -> list[str]:
    """The top-level packages under `src` (directories with an `__init__.py`)."""
    return sorted(p.parent.name for p in src.glob("*/__init__.py"))


def import_graph(src: Path) -> tuple[Graph, dict[tuple[str, str], int]]:
    """Each module of `src`'s packages -> the modules of them it imports, and the line of one
    import for each such edge."""
    names = packages(src)
    sys.path.insert(0, str(src))
    try:
        graph = grimp.build_graph(*names, cache_dir=None)
    finally:
        sys.path.remove(str(src))
    edges: dict[str, frozenset[str]] = {}
    lines: dict[tuple[str, str], int] = {}
    for module in graph.modules:
        targets = frozenset(graph.find_modules_directly_imported_by(module))
        edges[module] = targets
        for target in targets:
            details = graph.get_import_details(importer=module, imported=target)
            lines[module, target] = min((d["line_number"] for d in details), default=0)
    return edges, lines


def strongly_connected(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted, in order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        # Iterative Tarjan: (node, the targets still to visit) frames instead of recursion.
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        frames = [(root, iter(sorted(graph.get(root, ()))))]
        while frames:
            node, targets = frames[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    frames.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            frames.pop()
            if frames:
                parent = frames[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def shortest_cycle(graph: Graph, component: Sequence[str]) -> list[str]:
    """The shortest chain of imports from the component's first module back to itself."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(graph.get(node, ())):
            if target == start:
                chain = [node]
                while chain[-1] != start:
                    chain.append(came_from[chain[-1]])
                return [*reversed(chain), start]
            if target in members and target not in came_from:
                came_from[target] = node
                queue.append(target)
    raise AssertionError(f"{start} is in no cycle of {component}")


def report(graph: Graph, lines: Mapping[tuple[str, str], int]) -> list[str]:
    """One line per cycle: `a -> b (line N of a) -> ... -> a`."""
    out: list[str] = []
    for component in strongly_connected(graph):
        chain = shortest_cycle(graph, component)
        steps = [chain[0]]
        for importer, imported in itertools.pairwise(chain):
            steps.append(f"{imported} (line {lines.get((importer, imported), 0)} of {importer})")
        out.append(f"import cycle of {len(component)} modules: " + " -> ".join(steps))
    return out


def main(argv: Sequence[str]) -> int:
    src = Path(argv[0] if argv else DEFAULT_SRC).resolve()
    graph, lines = import_graph(src)
    problems = report(graph, lines)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} import cycle(s) in {src}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
