"""A toy agent for the quickstart: answers questions about capital cities.

assay calls ``answer`` with each case's input. A real agent would call a model and tools; this
one looks answers up so the example runs anywhere, offline, in seconds.
"""

CAPITALS = {
    "france": "Paris",
    "japan": "Tokyo",
    "kenya": "Nairobi",
    "canada": "Ottawa",
    "australia": "Canberra",
}


def answer(question: str) -> str:
    """Name the capital of the country the question mentions."""
    lowered = question.lower()
    for country, capital in CAPITALS.items():
        if country in lowered:
            return f"The capital of {country.title()} is {capital}."
    return "I don't know."
