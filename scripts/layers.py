"""Check that assay's folders import only from earlier stages (exit 1 and list what does not).

The stages follow the flow of data (docs/architecture.md): a folder may import the base
(errors, the registry, the private utilities), the nouns (``types``) and any stage before its
own, never one after it. Every import counts, module-level or inside a function, except those
under ``if TYPE_CHECKING:`` (annotations only). The package root (``assay/__init__.py``, the
public API) and the command's entry point are above every stage.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "assay"

STAGES: list[tuple[str, ...]] = [
    ("errors", "_version", "_util", "_moved", "registry"),  # the base
    ("types",),          # the nouns
    ("traces",),         # what an execution says
    ("llm",),            # the judge engine
    ("judges",),         # evaluators
    ("targets",),        # running the agent
    ("suites",),         # cases in
    ("store",),          # runs kept
    ("calibration",),    # judges against human labels
    ("run",),            # the trunk: evaluate, score, runner, policies
    ("analysis",),       # what stored runs say: comparison, diffs, statistics
    ("report",),         # for people: terminal, files, HTML, the UI's pages
    ("server",),         # assay serve
    ("integrations",),   # other frameworks' entry points
    ("authoring",),      # writing suites
    ("testing",),        # stand-ins for tests and demos
    ("cli",),            # the command
]
TOP = {"assay", "assay.__main__"}
"""The public API and the command's entry point: they may import anything."""


def stage_of(folder: str) -> int:
    for index, names in enumerate(STAGES):
        if folder in names:
            return index
    raise KeyError(folder)


def module_name(path: Path) -> str:
    name = "assay." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def folder(module: str) -> str:
    """The top-level unit of a module: ``assay.run.runner`` -> ``run``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imported(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of every assay import outside ``if TYPE_CHECKING:``."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "assay":
            if node.module == "assay":  # a module, or the version the package re-exports
                found += [(node.lineno, "assay._version" if a.name == "__version__"
                           else f"assay.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names
                      if a.name.split(".")[0] == "assay"]
    return found


def violations() -> list[str]:
    problems = []
    for path in sorted(ROOT.rglob("*.py")):
        name = module_name(path)
        if name in TOP:
            continue
        own = stage_of(folder(name))
        for line, target in imported(ast.parse(path.read_text())):
            if target in TOP:
                problems.append(f"{path.relative_to(ROOT.parent)}:{line}: imports the package "
                                f"root ({target}); import the module that defines the name")
                continue
            other = stage_of(folder(target))
            if other > own:
                problems.append(f"{path.relative_to(ROOT.parent)}:{line}: {folder(name)} "
                                f"(stage {own}) imports {target} ({folder(target)}, a later "
                                f"stage {other})")
    return problems


def main() -> int:
    found = violations()
    for problem in found:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
