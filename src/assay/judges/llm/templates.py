"""``{{ variable }}`` prompt templates that fail early on unknown variables.

Values that are not strings are serialised as JSON, never Python repr. Values that come from
the agent or a dataset are framed by :func:`delimit` in a tag that carries a boundary code
(``<actual_output_3f9a1c2b7d4e>...</actual_output_3f9a1c2b7d4e>``) so the judge can tell data
from instructions. The code is checked to be absent from the value, so no text inside can end
the frame (``</actual_output>``, ``</ACTUAL_OUTPUT >`` and the like are just data), and it is
derived from the value (not drawn at random) so an unchanged prompt keeps its cache key. The
section headers of assay's own prompts (``[[ ## name ## ]]``) are broken up inside data, so a
value cannot open a section of its own either.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from assay.errors import TemplateError
from assay.types.json import dump_json

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
BOUNDARY_CHARS = 12
_HEADER = re.compile(r"\[\[(\s*##)|(##\s*)\]\]")


def variables(template: str) -> list[str]:
    """The variable names a template uses, in order of first use."""
    seen: dict[str, None] = {}
    for match in VARIABLE.finditer(template):
        seen.setdefault(match.group(1), None)
    return list(seen)


@functools.lru_cache(maxsize=256)
def used_variables(template: str) -> tuple[str, ...]:
    """:func:`variables`, remembered: a judge asks for its template's names on every case."""
    return tuple(variables(template))


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
    """``value`` as data framed by ``<tag_CODE>`` and ``</tag_CODE>``, where CODE does not
    occur in the value: nothing inside can close the frame or open a prompt section."""
    text = as_text(value)
    if len(text) <= _REMEMBERED_CHARS:
        return _delimit_remembered(tag, text)
    return _delimit_text(tag, text)


_REMEMBERED_CHARS = 4096
"""Short values are framed once and remembered: a row's question is framed for each of its
judges and each of its chunks. Long values are framed each time, so the memory is bounded."""


def _delimit_text(tag: str, text: str) -> str:
    text = _HEADER.sub(_break_header, text)
    name = f"{tag}_{boundary(text)}"
    return f"<{name}>\n{text}\n</{name}>"


_delimit_remembered = functools.lru_cache(maxsize=2048)(_delimit_text)


def boundary(text: str) -> str:
    """A code of :data:`BOUNDARY_CHARS` hex digits that does not occur in ``text``.

    Derived from the text, so the same value always gets the same code (prompts, and so
    cache keys, stay stable); a value that happens to hold its own code gets the next one.
    """
    data = text.encode("utf-8", "surrogatepass")
    salt = 0
    while True:
        code = hashlib.sha256(b"%d:" % salt + data).hexdigest()[:BOUNDARY_CHARS]
        if code not in text.lower():
            return code
        salt += 1


def _break_header(match: re.Match[str]) -> str:
    """``[[ ##`` becomes ``[ [ ##`` (and ``## ]]`` becomes ``## ] ]``): still readable, no
    longer the marker of a prompt section."""
    if match.group(1) is not None:
        return "[ [" + match.group(1)
    return match.group(2) + "] ]"


def render(template: str, values: Mapping[str, str]) -> str:
    """Substitute variables in one pass (a value containing ``{{x}}`` is not re-expanded)."""
    return VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), template)
