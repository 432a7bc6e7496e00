"""The benchmark workload: question, expected answer and a distinct actual answer per index.

Standard library only, so the peer drivers (which run in their own virtualenvs without assay)
produce exactly the same texts as assay's own benchmarks. Every index gives a different actual
answer, so no request body repeats and no cache, client or server side, can serve one.
"""

from __future__ import annotations

_TOPICS: tuple[tuple[str, str], ...] = (
    ("What is the capital of France?",
     "The capital of France is Paris, which lies on the river Seine."),
    ("How many days are in a leap year?",
     "A leap year has 366 days: February gets a 29th day."),
    ("Who wrote the play Hamlet?",
     "Hamlet was written by William Shakespeare around the year 1600."),
    ("What gas do plants absorb for photosynthesis?",
     "Plants absorb carbon dioxide and release oxygen during photosynthesis."),
    ("What is the boiling point of water at sea level?",
     "At sea level water boils at 100 degrees Celsius, or 212 degrees Fahrenheit."),
    ("Which planet is known as the red planet?",
     "Mars is called the red planet because of the iron oxide on its surface."),
    ("What is the largest ocean on Earth?",
     "The Pacific Ocean is the largest and deepest ocean on Earth."),
    ("How do I reset my account password?",
     "Open Settings, choose Security, click Reset password and follow the emailed link."),
)

_OPENERS = ("Sure.", "In short,", "As far as I know,", "Good question:", "Answer:")
_CLOSERS = ("Hope that helps.", "Let me know if you need more.", "", "That is the usual answer.")


def triple(index: int) -> tuple[str, str, str]:
    """(question, expected, actual) for ``index``; the actual answer is unique to the index."""
    question, expected = _TOPICS[index % len(_TOPICS)]
    words = expected.rstrip(".").split()
    # Drop one word that depends on the index so the similarity varies a little from case to case.
    drop = (index // len(_TOPICS)) % len(words)
    kept = " ".join(w for i, w in enumerate(words) if i != drop)
    opener = _OPENERS[index % len(_OPENERS)]
    closer = _CLOSERS[index % len(_CLOSERS)]
    actual = f"{opener} {kept}. {closer} (reply #{index})".replace("  ", " ").strip()
    return question, expected, actual


def triples(start: int, count: int) -> list[tuple[str, str, str]]:
    """``count`` consecutive triples from ``start``."""
    return [triple(i) for i in range(start, start + count)]
