"""A toy agent for the math suite: evaluates the arithmetic in the question."""

import re


def run(question: object) -> str:
    text = question if isinstance(question, str) else str(question[-1]["content"])
    match = re.search(r"(\d+)\s*([+*])\s*(\d+)", text)
    if not match:
        return "hello"
    a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
    return str(a + b if op == "+" else a * b)
