"""``{{ variable }}`` prompt templates that fail early on unknown variables.

Values that are not strings are serialised as JSON, never Python repr. Values that come from
the agent are wrapped in a named tag (``<actual_output>...</actual_output>``) so the judge can
tell data from instructions; a closing tag inside the value is neutralised so the data cannot
end its own delimiter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from assay.errors import TemplateError
from assay.model import dump_json

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def variables(template: str) -> list[str]:
    """The variable names a template uses, in order of first use."""
    seen: dict[str, None] = {}
    for match in VARIABLE.finditer(template):
        seen.setdefault(match.group(1), None)
    return list(seen)


def check_variables(template: str, accepted: Iterable[str], where: str = "prompt") -> None:
    """Raise TemplateError naming each unknown variable and listing the accepted ones."""
    allowed = list(accepted)
    unknown = [v for v in variables(template) if v not in allowed]
    if unknown:
        names = ", ".join("{{" + v + "}}" for v in unknown)
        ok = ", ".join("{{" + v + "}}" for v in allowed)
        raise TemplateError(f"{where} uses unknown variable(s) {names}; accepted: {ok}")


def as_text(value: Any) -> str:
    """A value as prompt text: strings unchanged, everything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return dump_json(value)


def delimit(tag: str, value: Any) -> str:
    """``value`` as text inside ``<tag>...</tag>``, unable to close the tag itself."""
    text = as_text(value).replace(f"</{tag}>", f"<\\/{tag}>")
    return f"<{tag}>\n{text}\n</{tag}>"


def render(template: str, values: Mapping[str, str]) -> str:
    """Substitute variables in one pass (a value containing ``{{x}}`` is not re-expanded)."""
    return VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), template)
