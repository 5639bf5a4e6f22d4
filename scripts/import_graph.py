"""Print which part of vizdebug imports which, and any import cycle between modules.

    python scripts/import_graph.py            # the layer graph, the upward imports, cycles
    python scripts/import_graph.py --modules  # every module-level edge as well
    python scripts/import_graph.py --tree DIR # another checkout (e.g. an older commit)

Reads the sources with ``ast`` (nothing is imported). An import inside a function is
"lazy" and listed apart: the layer rule allows exactly one kind of upward step, the
lazy ``views`` import behind ``dashboard()`` / ``to_html()``. Exits 1 when a
module-level cycle exists or a layer imports upward outside that rule, so it can run in
the test suite.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "vizdebug"
# bottom to top. The store sits below collect here: the Session (collect/) creates its
# writer and hands it deltas, while the store imports nothing from collect/ (DESIGN.md:
# "knows neither collect/ nor views/"). The package face, demo and __main__ sit on top.
LAYERS = ["records", "findings_format", "findings", "errors", "_env", "_version", "_viewable",
          "reproducibility", "progress",
          "data", "analysis",
          "store", "collect", "integrations", "views", "report", "__init__", "demo", "cli", "__main__"]
BOTTOM = {"records", "findings_format", "findings", "errors", "_env", "_version", "_viewable",
          "reproducibility", "progress"}
LAZY_UPWARD_OK = {("_viewable", "views")}


def _package() -> Path:
    if "--tree" in sys.argv:
        return Path(sys.argv[sys.argv.index("--tree") + 1]).resolve() / "vizdebug"
    return PACKAGE


def module_name(path: Path) -> str:
    rel = path.relative_to(_package().parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def resolve(current: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    base = current.split(".") if is_package else current.split(".")[:-1]
    if node.level:
        base = base[: len(base) - node.level + 1]
        stem = ".".join([*base, node.module] if node.module else base)
    else:
        stem = node.module or ""
    if not stem.startswith("vizdebug"):
        return []
    return [f"{stem}.{a.name}" for a in node.names] + [stem]


def edges() -> list[tuple[str, str, bool]]:
    """``(importer, imported, lazy)`` for every vizdebug-internal import (imports under
    ``if TYPE_CHECKING:`` are annotations only, not counted)."""
    modules = {module_name(p) for p in _package().rglob("*.py")}
    out = []
    for path in sorted(_package().rglob("*.py")):
        name = module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        for node, lazy in _imports(tree):
            targets = (resolve(name, path.name == "__init__.py", node)
                       if isinstance(node, ast.ImportFrom)
                       else [a.name for a in node.names if a.name.startswith("vizdebug")])
            found = [t for t in targets if t in modules]
            if found:  # the most specific module named
                out.append((name, max(found, key=len), lazy))
    return sorted(set(out))


def _imports(tree: ast.Module):
    def walk(node: ast.AST, lazy: bool, typing_only: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # annotations only: not an import at run time
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, lazy
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            yield from walk(child, inner, typing_only)

    yield from walk(tree, False, False)


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def report(show_modules: bool = False) -> int:
    all_edges = edges()
    eager: dict[str, set[str]] = defaultdict(set)
    layers: dict[tuple[str, str], list[str]] = defaultdict(list)
    problems = []
    for src, dst, lazy in all_edges:
        if not (lazy and (layer(src), layer(dst)) in LAZY_UPWARD_OK):
            eager[src].add(dst)  # a lazy import still makes a cycle (it runs, later)
        a, b = layer(src), layer(dst)
        if a == b or src == "vizdebug":
            continue
        layers[(a, b)].append(f"{src} -> {dst}{' (lazy)' if lazy else ''}")
        up = LAYERS.index(b) > LAYERS.index(a) and not (a in BOTTOM and b in BOTTOM)
        if up and not (lazy and (a, b) in LAZY_UPWARD_OK):
            problems.append(f"upward: {src} -> {dst}{' (lazy)' if lazy else ''}")
    print("layer imports (importer -> imported: count of module edges)")
    for (a, b), items in sorted(layers.items(), key=lambda kv: (LAYERS.index(kv[0][0]), kv[0][1])):
        lazy = sum("(lazy)" in i for i in items)
        print(f"  {a:>12} -> {b:<12} {len(items):3d}" + (f"  ({lazy} lazy)" if lazy else ""))
        if show_modules:
            for item in items:
                print(f"      {item}")
    loops = cycles(eager)
    for loop in loops:
        problems.append("cycle: " + " <-> ".join(loop))
    print("\n" + ("\n".join(problems) if problems else "no cycles, no upward imports"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(report("--modules" in sys.argv))
