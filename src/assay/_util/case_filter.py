"""The glob that picks a run's cases by id (``assay run --filter``, ``assay eval --eval-id``,
``POST /runs``'s ``filter``), and the one check every surface gives it before a run starts.

Python's :mod:`fnmatch` takes any text: a ``[`` that opens no class is read as a literal ``[``
and a class whose range runs backwards (``[z-a]``) matches nothing, so ``[[[`` or ``case-[0-9``
ran a whole suite's setup to select no case at all (or a case the pattern did not mean). A
pattern is refused instead, with what is wrong and where.
"""

from __future__ import annotations

import fnmatch

EXPECTED = "a glob over case ids: * and ? wildcards, [abc] or [a-z] classes, [[] for a literal ["


def case_filter_problem(pattern: str) -> str | None:
    """What is wrong with ``pattern`` as a case filter (an unclosed ``[``, a backwards
    range), with the character where it is; None for a pattern to run. An empty pattern is
    no filter, as it always was."""
    index = 0
    while index < len(pattern):
        if pattern[index] != "[":
            index += 1
            continue
        body = index + 1
        if pattern[body:body + 1] == "!":
            body += 1
        end = pattern.find("]", body + 1 if pattern[body:body + 1] == "]" else body)
        if end < 0:
            return f"the '[' at character {index + 1} opens a class that is never closed: " \
                f"expected {EXPECTED}"
        backwards = _backwards_range(pattern[body:end])
        if backwards is not None:
            return f"the class at character {index + 1} has the range {backwards}, which " \
                f"runs backwards and matches nothing: expected {EXPECTED}"
        index = end + 1
    return None


def refuse_bad_filter(pattern: str | None, option: str) -> None:
    """A ConfigError naming the command-line ``option`` and the pattern, for a pattern
    :func:`case_filter_problem` refuses."""
    from assay._util.control_chars import quoted
    from assay.errors import ConfigError

    problem = None if pattern is None else case_filter_problem(pattern)
    if problem is not None:
        raise ConfigError(f"{option} {quoted(pattern)}: {problem}", code="invalid_option")


def _backwards_range(members: str) -> str | None:
    """The first range of a class's members (``z-a``) whose end comes before its start."""
    position = 0
    while position + 2 < len(members):
        if members[position + 1] == "-" and members[position] > members[position + 2]:
            return members[position:position + 3]
        position += 3 if members[position + 1] == "-" else 1
    return None


def matches(case_id: str, pattern: str) -> bool:
    """Whether ``case_id`` is one of the cases ``pattern`` picks (case-sensitive, as ids
    are)."""
    return fnmatch.fnmatchcase(case_id, pattern)
