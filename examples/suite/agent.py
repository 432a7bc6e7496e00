"""A toy agent: answers capital-city questions from a table (sync, or as a command)."""

import sys

CAPITALS = {"france": "Paris", "japan": "Tokyo"}


def answer(question: str) -> str:
    for country, city in CAPITALS.items():
        if country in question.lower():
            return f"The capital of {country.title()} is {city}."
    return "I do not know."


if __name__ == "__main__":  # provider: cli reads the question on stdin
    print(answer(sys.stdin.read()))
