"""Prompt templates checked before any call: every variable known, none written almost right.

A variable spelled almost right (``{candidate_answer}`` with single braces, ``{{ candidate-
answer }}``, ``{{Candidate_Answer}}``) is not substituted: the judge would read the literal
text and never see what it was meant to judge, and still answer with a score. Such a spelling
is an error that names the variable meant ("did you mean ..."), with its line and column in
the prompt. Variables that are right but unknown are reported by
:func:`assay.judges.llm.templates.check_variables`, which this runs too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from assay.errors import TemplateError
from assay.judges.llm.templates import check_variables, variables

_BRACED = re.compile(r"(\{+)[ \t]*([A-Za-z][A-Za-z0-9_ \t-]*?)[ \t]*(\}+)")
"""Something in braces that looks like a variable name, however many braces and however
spelled (dashes and spaces included)."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _normal(name: str) -> str:
    """A name with case, camelCase, dashes and spaces folded: ``Candidate-Answer`` and
    ``candidateAnswer`` both become ``candidate_answer``."""
    return re.sub(r"[\s_-]+", "_", _CAMEL.sub("_", name.strip())).lower()


def near_misses(template: str, accepted: Iterable[str]) -> list[str]:
    """Each variable written almost right, as ``'{text}' at line L, column C: did you mean
    {{name}}?``, in order of appearance."""
    known = {_normal(name): name for name in accepted}
    found: list[str] = []
    for match in _BRACED.finditer(template):
        opening, name, closing = match.groups()
        meant = known.get(_normal(name))
        if meant is None:
            continue
        if len(opening) >= 2 and len(closing) >= 2 and name == meant:
            continue  # written right (extra braces around it stay literal text)
        line = template.count("\n", 0, match.start()) + 1
        column = match.start() - (template.rfind("\n", 0, match.start()) + 1) + 1
        found.append(f"{match.group(0)!r} at line {line}, column {column}: did you mean "
                     f"{{{{{meant}}}}}?")
    return found


def check_prompt(template: str, accepted: Iterable[str], where: str = "prompt") -> None:
    """Raise TemplateError for a variable written almost right, or one that is unknown."""
    allowed = list(accepted)
    misses = near_misses(template, allowed)
    if misses:
        raise TemplateError(f"{where} writes a variable almost right, so it would not be "
                            f"filled in: {'; '.join(misses)}")
    check_variables(template, allowed, where)


def uses_any(template: str, names: Iterable[str]) -> bool:
    """Whether the template uses (correctly written) any of ``names``."""
    return not set(names).isdisjoint(variables(template))
