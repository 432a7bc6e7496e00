"""The registry's catalog of built-in evaluators: the registry imports one evaluator module
per name a suite asks for, so the catalog must say truly where each built-in is defined."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assay.errors import EvaluationError
from assay.judges import build
from assay.judges.catalog import MODULES
from assay.judges.registry import EVALUATORS
from assay.registry import REGISTRY


def _printed_by(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter (the registry is process-wide)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout.strip()


def test_the_catalog_names_every_built_in_evaluator_and_its_module() -> None:
    """Asked in a fresh interpreter: in this one, whichever tests ran before may have
    imported a lazy module already (under pytest-xdist, any of them)."""
    import json

    registered = json.loads(_printed_by(
        "import json; from assay.registry import REGISTRY; print(json.dumps({"
        "name: cls.__module__ for name, cls in REGISTRY.table('evaluator').items() "
        "if cls.__module__.startswith('assay.')}))"))
    lazy = {name: module for name, module in MODULES.items() if name not in registered}
    assert registered == {n: m for n, m in MODULES.items() if n in registered}
    # Only the UiPath custom evaluator (it loads UiPath project code) stays out of the table
    # until a suite names it.
    assert lazy == {"uipath_custom": "assay.integrations.uipath.custom"}


def test_the_evaluator_table_reads_as_a_mapping_of_every_built_in() -> None:
    assert "semantic_similarity" in EVALUATORS
    assert EVALUATORS["exact_match"].type == "exact_match"
    assert "no_such_judge" not in EVALUATORS
    with pytest.raises(KeyError):
        EVALUATORS["no_such_judge"]
    assert set(MODULES) - {"uipath_custom"} <= set(EVALUATORS)
    assert len(EVALUATORS) == len(list(EVALUATORS))


def test_an_unknown_type_lists_every_known_one_including_those_not_yet_imported() -> None:
    with pytest.raises(EvaluationError) as caught:
        build({"type": "semantic_similarty"})
    message = str(caught.value)
    assert "unknown evaluator type 'semantic_similarty'" in message
    for name in ("semantic_similarity", "tool_call_order", "uipath_custom", "correctness"):
        assert name in message


def test_a_catalogued_name_outside_the_built_in_modules_is_found_after_plugins_load() -> None:
    # The UiPath custom evaluator's module is imported only when named. Once the plugins were
    # loaded (any unknown name does that), it must still be found.
    code = ("from assay.registry import REGISTRY\n"
            "from assay.judges.registry import evaluator_class\n"
            "REGISTRY.load_plugins()\n"
            "print(evaluator_class('uipath_custom').__name__)\n")
    assert _printed_by(code) == "UiPathCustomEvaluator"


def test_every_catalogued_provider_registers_its_prefix() -> None:
    from assay.llm.providers.catalog import MODULES as PROVIDERS

    missing = [name for name in PROVIDERS if REGISTRY.get("provider", name) is None]
    assert missing == []
    assert set(PROVIDERS) <= set(REGISTRY.names("provider"))


@pytest.mark.parametrize(("kind", "name"), [
    ("evaluator", "exact_match"), ("evaluator", "uipath_custom"), ("provider", "openai"),
    ("provider", "azure"), ("target", "python"), ("target", "chat_model"),
    ("suite_format", "eval_yaml"), ("reporter", "junit")])
def test_a_built_in_name_is_reserved_whatever_was_looked_up_before(kind: str,
                                                                   name: str) -> None:
    # Looked up first or not at all: registering it from outside assay is refused either
    # way, and the built-in keeps the name.
    code = (f"from assay.registry import REGISTRY, ReservedName\n"
            f"def mine(spec):\n    return None\n"
            f"before = {{}}\n"
            f"for first in (False, True):\n"
            f"    if first:\n"
            f"        before = REGISTRY.get({kind!r}, {name!r})\n"
            f"    try:\n"
            f"        REGISTRY.add({kind!r}, {name!r}, mine)\n"
            f"    except ReservedName as exc:\n"
            f"        print(exc.message)\n"
            f"print(REGISTRY.get({kind!r}, {name!r}) is before)\n")
    refused, again, kept = _printed_by(code).splitlines()
    assert refused == again == (f"{kind.replace('_', ' ')} name {name!r} is a built-in's, and "
                                "built-in names are reserved; register yours under another "
                                "name")
    assert kept == "True"
