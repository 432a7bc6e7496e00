"""Print the import cycles between assay's modules and packages (exit 1 if there is one).

Every import counts, module-level or inside a function (a lazy import is still a
dependency), except those under ``if TYPE_CHECKING:``. ``from assay import name`` counts as an
import of ``assay.name`` when that is a module, else of the package root.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "assay"


def module_name(path: Path) -> str:
    name = "assay." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def unit(name: str) -> str:
    """The unit cycles are checked between: a top-level module or subpackage."""
    return ".".join(name.split(".")[:2])


def imports(tree: ast.Module, modules: set[str]) -> set[str]:
    found: set[str] = set()
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("assay"):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("assay"))
    return found


def main() -> int:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(files)
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in files.items():
        for target in imports(ast.parse(path.read_text()), modules):
            if unit(target) != unit(name) and unit(name) != "assay":
                edges[unit(name)].add(unit(target))

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            for nxt in edges[node]:
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    pairs = [(a, b) for a in list(edges) for b in sorted(edges[a])]
    cycles = sorted({tuple(sorted((a, b))) for a, b in pairs if reaches(b, a)})
    for a, b in cycles:
        print(f"import cycle: {a} <-> {b}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
