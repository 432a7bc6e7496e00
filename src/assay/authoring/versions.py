"""EVAL.yaml between AgentV 2's format (``evalcases``) and AgentV 4's (``tests``).

The two say the same things differently: ``expected_outcome`` is ``criteria``, a case's
evaluator list replaces the suite's where a test's ``assertions`` come before the suite's,
``llm_judge`` is ``llm-grader`` with ``{{input}}``/``{{output}}``/``{{criteria}}``/
``{{expected_output}}`` for ``{{question}}``/``{{candidate_answer}}``/``{{expected_outcome}}``/
``{{reference_answer}}``, a prompt file is ``file://path``, AgentV 4's deterministic graders are
assay's ``text_assertion`` in a v2 file. Each entry is translated as written (prompt files
stay files, names are written out where the source let them be generated), then the result is
loaded and compared with the source, case by case and evaluator by evaluator: a conversion
that would change what the suite means is refused, naming the first difference, and nothing
is kept.

assay's own evaluators whose names AgentV 4 gives another meaning (``contains`` and ``regex``
with UiPath's options, the ``python`` scorer) are written ``assay:contains`` and so on in a
v4 file; what has no AgentV 4 form at all (conversations, guidelines, expected tool calls,
scoring policies) is refused, located in the source.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.judges.deterministic.assertions import CHECKS, assertion_name
from assay.judges.llm.llm_judge import DEFAULT_PROMPT as V2_DEFAULT_PROMPT
from assay.suites.agentv4 import DEFAULT_PROMPT as V4_DEFAULT_PROMPT
from assay.suites.agentv4 import GRADERS, is_agentv4
from assay.suites.model import Suite

V4_NAMES = {"question": "input", "candidate_answer": "output",
            "expected_outcome": "criteria", "reference_answer": "expected_output"}
"""AgentV 2's prompt variable -> AgentV 4's name for the same value."""
V2_NAMES = {v4: v2 for v2, v4 in V4_NAMES.items()}

COLLIDING = ("contains", "regex", "python")
"""assay evaluator types whose names AgentV 4 uses for something else: ``assay:NAME``."""

NOT_IN_V4_CASE = ("guidelines", "reference_context", "expected_tool_calls",
                  "evaluation_criteria_override", "expected_outcomes", "conversation",
                  "persona", "persona_context", "first_turn", "first_message", "user_context",
                  "scripted_messages", "max_turns")
NOT_IN_V4_SUITE = ("scoring", "thresholds", "conversation", "agent")

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def version_of(data: Any) -> str:
    """``v4`` for a document with ``tests``, else ``v2``."""
    return "v4" if is_agentv4(data) else "v2"


def renamed(template: str, names: dict[str, str]) -> str:
    """``template`` with its variables renamed by ``names`` (others as written)."""
    return _VARIABLE.sub(lambda m: "{{" + names.get(m.group(1), m.group(1)) + "}}", template)


# -- AgentV 2 -> AgentV 4 ----------------------------------------------------------------


def to_v4(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """An AgentV 2 document (``evalcases``) as AgentV 4's."""
    refused = [k for k in NOT_IN_V4_SUITE if k in data]
    if refused:
        raise _refusal(refused[0], "the suite", "it")
    out: dict[str, Any] = {k: data[k] for k in ("name", "description", "version", "metadata")
                           if k in data}
    if "dataset" in data:
        out.setdefault("name", data["dataset"])
    execution = dict(data.get("execution") or {})
    target = execution.pop("target", data.get("target"))
    if target is not None:
        out["target"] = target
    suite_list = execution.pop("evaluators", None)
    if execution:
        out["execution"] = execution
    kind = data.get("evaluator")
    cases = data.get("evalcases", data.get("cases")) or []
    if all(_own_list(c) is not None for c in cases):
        pass  # every case has its own list: the suite's judges none
    elif suite_list is not None:
        out["assertions"] = [_entry_v4(e, base) for e in suite_list]
    elif kind is not None:
        out["evaluator"] = _type_v4(kind)
    else:  # AgentV 2 judges with its own default prompt
        out["assertions"] = [_entry_v4({"type": "llm_judge", "name": "llm_judge"}, base)]
    has_suite_list = "assertions" in out
    out["tests"] = [_case_v4(c, base, has_suite_list) for c in cases]
    return out


def _own_list(case: dict[str, Any]) -> Any:
    """A case's own evaluator list (its execution's, its own, or its default kind's)."""
    own = (case.get("execution") or {}).get("evaluators", case.get("evaluators"))
    if own is None and "evaluator" in case:
        return [{"type": case["evaluator"]}]
    return own


def _case_v4(case: dict[str, Any], base: Path, suite_list: bool) -> dict[str, Any]:
    refused = [k for k in NOT_IN_V4_CASE if k in case and not (
        k == "expected_outcomes" and isinstance(case[k], list) and len(case[k]) <= 1)]
    if refused:
        raise _refusal(refused[0], f"case {case.get('id')!r}", "a test")
    test: dict[str, Any] = {"id": case.get("id")}
    outcome = case.get("expected_outcome", case.get("outcome", case.get("expected_outcomes")))
    if isinstance(outcome, list):
        outcome = outcome[0] if outcome else None
    if outcome is not None:
        test["criteria"] = outcome
    test["input"] = case.get("input_messages", case.get("input"))
    if "expected_messages" in case and "expected_output" not in case:
        test["expected_output"] = case["expected_messages"]
    elif "expected_output" in case:
        test["expected_output"] = case["expected_output"]
    metadata = dict(case.get("metadata") or {})
    if "note" in case:
        metadata["note"] = case["note"]  # what {{note}} reads, in either format
    if metadata:
        test["metadata"] = metadata
    if "conversation_id" in case:
        test["conversation_id"] = case["conversation_id"]
    execution = dict(case.get("execution") or {})
    execution.pop("evaluators", None)
    own = _own_list(case)
    if "rubrics" in case:
        test["rubrics"] = _rubric_items(case["rubrics"], "r")
    if own is not None:
        test["assertions"] = [_entry_v4(e, base) for e in own]
        if suite_list:
            execution["skip_defaults"] = True  # AgentV 2's case list replaces the suite's
    if execution:
        test["execution"] = execution
    return test


def _type_v4(kind: str) -> str:
    spelled = {"llm_judge": "llm-grader", "code_judge": "code-grader", "rubric": "rubrics"}
    if kind in spelled:
        return spelled[kind]
    theirs = GRADERS.get(kind.replace("_", "-"))
    return f"assay:{kind}" if kind in COLLIDING or theirs not in (None, kind) else kind


def _entry_v4(entry: Any, base: Path) -> Any:
    if isinstance(entry, str):
        entry = {"type": entry}
    if not isinstance(entry, dict):
        return entry
    kind = str(entry.get("type"))
    fields = {k: v for k, v in entry.items() if k != "type"}
    fields.setdefault("name", kind)  # AgentV 2 named it after its type
    if kind == "llm_judge" and "rubrics" not in fields:
        fields["prompt"] = _prompt_v4(fields.get("prompt"), base)
    if kind == "rubric" or (kind == "llm_judge" and "rubrics" in fields):
        fields.pop("prompt", None)
        return {"type": "rubrics", **{k: v for k, v in fields.items() if k != "rubrics"},
                "criteria": _rubric_items(fields["rubrics"], "r")}
    if kind == "code_judge":
        script = fields.pop("script")
        fields["command"] = ["sh", "-c", script] if isinstance(script, str) else script
    if kind == "text_assertion":
        return {"type": fields.pop("check"), **fields}
    if kind == "inline_code":
        return {"type": fields.pop("language"), **fields}
    if kind == "composite" and isinstance(fields.get("evaluators"), list):
        fields["assertions"] = [_entry_v4(e, base) for e in fields.pop("evaluators")]
    spelled = _type_v4(kind)
    if "threshold" in fields and spelled.replace("_", "-") in GRADERS and \
            kind not in ("inline_code", "webhook"):
        fields["min_score"] = fields.pop("threshold")  # AgentV 4's name for the pass mark
    return {"type": spelled, **fields}


def _prompt_v4(prompt: Any, base: Path) -> Any:
    """An AgentV 2 prompt as AgentV 4 reads one: a file as ``file://path`` (its text as it
    is: assay fills either format's names), inline text with AgentV 4's variable names."""
    if prompt is None:
        return renamed(V2_DEFAULT_PROMPT, V4_NAMES)
    if not isinstance(prompt, str):
        return prompt
    candidate = prompt.strip()
    if "\n" not in candidate and candidate and (base / candidate).is_file():
        return "file://" + candidate.removeprefix("./")
    return renamed(prompt, V4_NAMES)


def _rubric_items(items: Any, prefix: str) -> Any:
    """Rubric items with their ids written out (a bare text's id differs between the
    formats: ``r1`` in AgentV 2, ``rubric-1`` in AgentV 4)."""
    if not isinstance(items, list):
        return items
    return [{"id": f"{prefix}{i + 1}" if prefix == "r" else f"{prefix}-{i + 1}",
             "outcome": item} if isinstance(item, str) else item
            for i, item in enumerate(items)]


# -- AgentV 4 -> AgentV 2 ----------------------------------------------------------------


def to_v2(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """An AgentV 4 document (``tests``) as AgentV 2's."""
    out: dict[str, Any] = {k: data[k] for k in ("name", "description", "version", "metadata")
                           if k in data}
    execution = dict(data.get("execution") or {})
    suite_entries = data.get("assertions", data.get("assert",
                                                    execution.pop("evaluators", None)))
    execution.pop("assertions", None)
    if data.get("target") is not None:
        execution["target"] = data["target"]
    suite_list = _entries_v2(suite_entries, base) if suite_entries else None
    default = [_default_v2(data.get("evaluator"), base)]
    prefix = data.get("input")
    cases = [_test_v2(t, base, suite_list, default, prefix, data.get("input_files"))
             for t in data.get("tests") or []]
    if any("evaluators" not in (c.get("execution") or {}) for c in cases):
        execution["evaluators"] = suite_list if suite_list is not None else default
    if execution:
        out["execution"] = execution
    out["evalcases"] = cases
    return out


def _default_v2(kind: Any, base: Path) -> dict[str, Any]:
    if kind is None or str(kind).replace("_", "-") in ("llm-grader", "llm-judge"):
        return {"name": "llm-grader", "type": "llm_judge",
                "prompt": renamed(V4_DEFAULT_PROMPT, V2_NAMES)}
    return _entry_v2({"type": kind}, base)


def _test_v2(test: dict[str, Any], base: Path, suite_list: list[Any] | None,
             default: list[Any], prefix: Any, files: Any) -> dict[str, Any]:
    case: dict[str, Any] = {"id": test.get("id")}
    criteria = test.get("criteria", test.get("expected_outcome"))
    if criteria is not None:
        case["expected_outcome"] = criteria
    execution = dict(test.get("execution") or {})
    skip = execution.pop("skip_defaults", False)
    case.update(_input_v2(test, None if skip else prefix, test.get("input_files", files)))
    expected = test.get("expected_output")
    if isinstance(expected, dict) and "role" in expected:
        expected = [expected]
    if isinstance(expected, list) and expected and isinstance(expected[0], dict) and \
            "role" in expected[0]:
        case["expected_messages"] = expected
    elif expected is not None:
        case["expected_output"] = expected
    for key in ("metadata", "conversation_id"):
        if key in test:
            case[key] = test[key]
    own_raw = test.get("assertions", test.get("assert", test.get("evaluators")))
    own = _entries_v2(own_raw, base) if own_raw else []
    if "rubrics" in test:
        own = [_entry_v2({"type": "rubrics", "criteria": test["rubrics"]}, base), *own]
    if own or skip:
        case_list = own + ([] if skip else (suite_list or []))
        execution["evaluators"] = _distinct_names(case_list or default)
    if execution:
        case["execution"] = execution
    return case


def _input_v2(test: dict[str, Any], prefix: Any, files: Any) -> dict[str, Any]:
    value = test.get("input")
    if files:
        value = [{"role": "user", "content": [*({"type": "file", "value": f} for f in files),
                                              {"type": "text", "value": value}]}]
    if prefix is not None:
        value = [*_as_messages(prefix), *_as_messages(value)]
    if isinstance(value, dict) and "role" in value:
        value = [value]
    if isinstance(value, list):
        return {"input_messages": value}
    return {"input": value}


def _as_messages(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and "role" in value:
        return [value]
    return [{"role": "user", "content": value}]


def _entries_v2(entries: Any, base: Path) -> list[Any]:
    if not isinstance(entries, list):
        return entries
    criteria = [e for e in entries if isinstance(e, str)]
    out: list[Any] = []
    for entry in entries:
        if isinstance(entry, str):
            if entry is criteria[0]:
                out.append({"name": "rubrics", "type": "rubric", "weight": len(criteria),
                            "rubrics": _rubric_items(criteria, "rubric")})
            continue
        out.append(_entry_v2(entry, base))
    return _distinct_names(out)


def _distinct_names(entries: list[Any]) -> list[Any]:
    """Names made distinct as AgentV 4's loader makes generated ones (``name-2``)."""
    seen: set[str] = set()
    out = []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") in seen and entry.get("_generated"):
            number = 2
            while f"{entry['name']}-{number}" in seen:
                number += 1
            entry = {**entry, "name": f"{entry['name']}-{number}"}
        if isinstance(entry, dict):
            seen.add(str(entry.get("name")))
            entry = {k: v for k, v in entry.items() if k != "_generated"}
        out.append(entry)
    return out


def _entry_v2(entry: Any, base: Path) -> Any:
    if not isinstance(entry, dict):
        return entry
    kind = str(entry.get("type"))
    fields = {k: v for k, v in entry.items() if k != "type"}
    generated = "name" not in fields
    spelled = kind.replace("_", "-")
    if kind.startswith("assay:"):
        return {"type": kind.removeprefix("assay:"), **fields}
    _modifiers_v2(fields)
    if spelled in CHECKS:
        fields.setdefault("name", assertion_name(spelled, fields.get("value")))
        out = {"type": "text_assertion", "check": spelled, **fields}
    elif spelled in ("python", "javascript"):
        fields.setdefault("name", spelled)
        out = {"type": "inline_code", "language": spelled, **fields}
    elif spelled == "rubrics":
        fields.setdefault("name", "rubrics")
        out = {"type": "rubric", **{k: v for k, v in fields.items() if k != "criteria"},
               "rubrics": _rubric_items(fields.get("criteria"), "rubric")}
    elif spelled in ("llm-grader", "llm-judge", "llm-rubric"):
        fields.setdefault("name", spelled)
        if "rubrics" not in fields:
            fields["prompt"] = _prompt_v2(fields.get("prompt"))
        out = {"type": "llm_judge", **fields}
    elif spelled in ("code-grader", "code-judge"):
        fields.setdefault("name", spelled)
        command = fields.pop("command", fields.pop("script", None))
        fields["script"] = shlex.split(command) if isinstance(command, str) else command
        out = {"type": "code_judge", **fields}
    elif spelled == "composite":
        fields.setdefault("name", "composite")
        members = fields.pop("assertions", fields.pop("assert", fields.pop("evaluators", [])))
        out = {"type": "composite", **fields, "evaluators": _entries_v2(members, base)}
    else:
        fields.setdefault("name", spelled)
        out = {"type": GRADERS.get(spelled, kind), **fields}
    return {**out, "_generated": True} if generated else out


def _modifiers_v2(fields: dict[str, Any]) -> None:
    """AgentV 4's ``required: 0.6`` and ``min_score`` as assay's ``required``/``threshold``."""
    required = fields.get("required")
    if isinstance(required, int | float) and not isinstance(required, bool):
        fields["required"] = True
        fields.setdefault("threshold", required)
    if "min_score" in fields:
        fields["threshold"] = fields.pop("min_score")


def _prompt_v2(prompt: Any) -> Any:
    if prompt is None:
        return renamed(V4_DEFAULT_PROMPT, V2_NAMES)
    if isinstance(prompt, str) and prompt.startswith("file://"):
        return "./" + prompt.removeprefix("file://").removeprefix("./")
    return renamed(prompt, V2_NAMES) if isinstance(prompt, str) else prompt


def _refusal(key: str, where: str, what: str) -> ConfigError:
    return ConfigError(f"{where} uses {key!r}, which AgentV 4's format has no way to say; "
                       f"{what} cannot be converted to it", code="invalid_suite")


# -- what a suite means ------------------------------------------------------------------


def meaning(suite: Suite) -> list[Any]:
    """What decides a suite's results, case by case, comparable across the formats: each
    case, its target and its evaluators (prompts with their variables named one way)."""
    return [(suite.target, suite.agent_timeout_s),
            *((item.case.model_dump(mode="json"), item.target or suite.target,
               [_evaluator(e) for e in suite.evaluators_for(item)])
              for item in suite.iter_cases())]


def _evaluator(evaluator: Any) -> Any:
    dumped = evaluator.model_dump(mode="json")
    dumped["type"] = evaluator.type
    if isinstance(dumped.get("prompt"), str):
        dumped["prompt"] = renamed(dumped["prompt"], V2_NAMES)
    members = getattr(evaluator, "evaluators", None)
    if isinstance(members, list):
        dumped["evaluators"] = [_evaluator(m) for m in members]
    return dumped


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where two meanings first differ, as ``path: A != B``; None when they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(dict.fromkeys([*a, *b])):
            found = first_difference(a.get(key), b.get(key), f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return f"{where or 'the suite'}: {len(a)} item(s) != {len(b)}"
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if a == b else f"{where or 'the suite'}: {str(a)[:80]!r} != {str(b)[:80]!r}"


CONVERTERS: dict[str, Callable[[dict[str, Any], Path], dict[str, Any]]] = {
    "v4": to_v4, "v2": to_v2}
"""The target version -> the function that writes a document in it."""
