"""Where a judge prompt's shared part ends: what a provider's prompt cache can reuse.

Every built-in judge puts what is the same for every case first (its instructions, rubric,
schema and examples, in the system message and at the head of the user message) and the case's
data last, and every piece of case data enters a prompt framed by
:func:`assay.judges.llm.templates.delimit` (``<tag_CODE>...</tag_CODE>``, CODE twelve hex
digits). So the part of a message every case shares ends where its first frame opens.

OpenAI caches the longest shared prefix of a prompt by itself; Anthropic caches up to a
``cache_control`` breakpoint, which the Anthropic provider places at :func:`shared_end` of the
first user message (else at the end of the system prompt). A provider caches only a prefix of
some length (1,024 tokens and up); a shorter one costs the same either way.
"""

from __future__ import annotations

import re

FRAME = re.compile(r"<[A-Za-z_][A-Za-z0-9_]*_[0-9a-f]{12}>")
"""The opening tag of a data frame, as ``delimit`` writes it (a test keeps the two in step)."""

EPHEMERAL = {"type": "ephemeral"}
"""Anthropic's cache breakpoint (five minutes, renewed by every hit)."""


def shared_end(text: str) -> int:
    """Where the case's data begins in a message's text: the start of its first data frame,
    0 when the text begins with one or holds none (nothing in it is known to be shared)."""
    found = FRAME.search(text)
    return found.start() if found is not None else 0
