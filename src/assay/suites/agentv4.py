"""AgentV 4's EVAL.yaml (``tests:`` with per-test ``assertions``) -> :class:`Suite`.

::

    description: Capital cities
    target: my_agent                   # or execution: {target: my_agent}
    assertions:                        # suite-level graders, appended to every test's
      - {type: latency, threshold: 5000}
    tests:
      - id: france
        criteria: Names Paris as the capital       # expected_outcome (deprecated) too
        input: What is the capital of France?      # text, {role, content}, [messages] or data
        expected_output: Paris                     # text, data or [messages]
        assertions:
          - {name: quality, type: llm-grader, weight: 3, prompt: "... {{output}} ..."}
          - {type: contains, value: Paris}
          - Names the city without hedging         # text: a rubric criterion
        execution: {target: other, skip_defaults: true}
        metadata: {...}

The same loader as AgentV 2's file (:mod:`assay.suites.evalyaml`) reads it, so a case, a
target and a problem mean the same in both; only AgentV 4's spellings are read here. Each
grader becomes the assay evaluator that does what AgentV 4's does (see :data:`GRADERS`): the
deterministic ones are :class:`~assay.judges.deterministic.assertions.TextAssertion`,
``llm-grader`` an ``llm_judge`` whose prompt may use ``{{input}}``, ``{{output}}``,
``{{criteria}}`` and ``{{expected_output}}``, ``python`` and ``javascript`` code judges run in a
subprocess, ``webhook`` a POST to your service. A test without assertions (and a suite without
any) is judged by the default ``llm-grader``, AgentV 4's prompt over its criteria.

Every problem is reported at ``file:line:col``. What AgentV 4 does that assay does not
(workspaces, conversation ``turns``, ``vars``, target matrices, preprocessors) is a located
problem naming the key, never a key silently ignored.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay._util.names import did_you_mean
from assay._util.user_paths import outside_folder
from assay._util.yaml_source import PathKey
from assay.judges.base import Evaluator
from assay.judges.deterministic.assertions import CHECKS, assertion_name
from assay.judges.registry import evaluator_class
from assay.registry import REGISTRY
from assay.suites.evaluator_config import type_name
from assay.suites.evalyaml import _last_assistant, _SuiteChecker
from assay.suites.model import WEIGHTLESS, Suite, SuiteCase, weightless

TOP_KEYS = ("name", "description", "version", "author", "tags", "license", "requires",
            "category", "target", "execution", "tests", "assertions", "assert", "input",
            "input_files", "metadata", "evaluator")
INFORMATION_KEYS = ("version", "author", "tags", "license", "requires", "category")
"""Top-level keys that describe the suite: kept in its metadata."""
EXECUTION_KEYS = ("target", "evaluators", "assertions", "agent_timeout_s", "batch")
CASE_KEYS = ("id", "criteria", "expected_outcome", "input", "input_files", "expected_output",
             "assertions", "assert", "evaluators", "evaluator", "rubrics", "execution",
             "metadata", "conversation_id")
CASE_EXECUTION_KEYS = ("target", "skip_defaults", "evaluators")
UNSUPPORTED = {
    "workspace": "workspaces (repositories, setup scripts)",
    "preprocessors": "content preprocessors",
    "vars": "test variables ({{ vars.x }})",
    "turns": "conversation turns",
    "mode": "conversation mode",
    "aggregation": "conversation turn aggregation",
    "on_turn_failure": "conversation turn policies",
    "window_size": "conversation windows",
    "depends_on": "test dependencies",
    "on_dependency_failure": "test dependencies",
    "targets": "target matrices",
    "trials": "trials",
    "workers": "workers in the suite file (use --concurrency)",
    "budget_usd": "a budget in the suite file (use --budget-usd)",
    "threshold": "a score threshold in the suite file (use --pass-at or --min-score)",
    "fail_on_error": "fail_on_error (assay counts every error; see --max-errors)",
    "cache": "cache settings in the suite file (use --cache)",
    "governance": "governance metadata",
}
"""AgentV 4 keys assay does not implement, with what they are: each is a located problem, so
a suite never runs with part of its meaning silently dropped."""

DEFAULT_PROMPT = """You are an expert grader. Your goal is to grade the answer based on how \
well it achieves the criteria for the original task.

Use the reference_answer as a gold standard for a high-quality response (if provided). The \
reference_answer may be a simple text response, or it may contain a sequence of expected agent \
messages including tool calls. When it contains multiple messages, the last message represents \
the final expected answer. The answer does not need to match it verbatim, but should capture \
the key points and follow the same spirit.

Be concise and focused in your evaluation. Provide succinct, specific feedback rather than \
verbose explanations.

[[ ## criteria ## ]]
{{criteria}}

[[ ## question ## ]]
{{input}}

[[ ## reference_answer ## ]]
{{expected_output}}

[[ ## answer ## ]]
{{output}}"""
"""AgentV 4's default ``llm-grader`` prompt (its ``DEFAULT_GRADER_TEMPLATE``)."""

GRADERS: dict[str, str] = {
    **{check: "text_assertion" for check in CHECKS},
    "llm-grader": "llm_judge", "llm-judge": "llm_judge", "llm-rubric": "llm_judge",
    "rubric": "rubric", "rubrics": "rubric",
    "code-grader": "code_judge", "code-judge": "code_judge",
    "python": "inline_code", "javascript": "inline_code", "webhook": "webhook",
    "composite": "composite", "tool-trajectory": "tool_trajectory",
    "field-accuracy": "field_accuracy", "latency": "latency", "cost": "cost",
    "token-usage": "token_usage",
}
"""AgentV 4 grader type -> the assay evaluator that does it. A type not here that names a
registered assay evaluator (``semantic_similarity``, a plugin's) is that evaluator, so a
converted suite keeps assay's own judges."""

ASSAY_PREFIX = "assay:"
"""``type: assay:contains``: assay's own evaluator of that name, where AgentV 4 uses the name
for another grader (its ``contains`` is not assay's UiPath-style one)."""

FILE_PREFIX = "file://"
"""AgentV 4 reads a grader's prompt from a file only when it is written ``file://path``."""

_LOOKS_LIKE_FILE = re.compile(
    r"(\.{1,2}/|/|~)?[^\s{}<>|\"']+\.(md|markdown|txt|prompt|j2|jinja|jinja2|tmpl|tpl|hbs)",
    re.I)
COMMON_GRADER_KEYS = ("name", "type", "weight", "required", "min_score", "negate")


def is_agentv4(data: Any) -> bool:
    """Whether a parsed suite document is AgentV 4's: it has ``tests``."""
    return isinstance(data, dict) and "tests" in data


def looks_like_agentv4(path: Path) -> bool:
    """Whether a YAML file is AgentV 4's, from the head of its text: a top-level ``tests:``
    key (AgentV 2's files have ``evalcases``/``cases``, never ``tests``). Read without
    parsing, so asking costs the format lookup almost nothing. Only the format's name hangs
    on it: AgentV 2's reader reads a document with ``tests`` as AgentV 4's all the same."""
    try:
        with path.open("rb") as handle:
            head = b"\n" + handle.read(1 << 16)
    except OSError:
        return False
    for key in (b"\ntests", b"\n'tests'", b'\n"tests"'):  # found by find(), not a regex
        at = head.find(key)
        while at != -1:
            if head[at + len(key):at + len(key) + 32].lstrip(b" \t").startswith(b":"):
                return True
            at = head.find(key, at + 1)
    return False


@dataclass
class V4Checker(_SuiteChecker):
    """Walks one AgentV 4 document; every method reports into ``log`` and carries on."""

    suite_raw: list[tuple[Any, PathKey]] = field(default_factory=list)
    """The suite's assertion entries (with where each is), appended to each test's own."""

    def suite(self, data: Any) -> Suite | None:
        if not isinstance(data, dict):
            self.log.add((), f"a suite file must be a mapping, not {type_name(data)}",
                         "a mapping with 'tests'")
            return None
        self._unsupported(data, ())
        self._unknown_keys(data, (), (*TOP_KEYS, *UNSUPPORTED), "top-level key")
        for key in ("evalcases", "eval_cases", "cases"):
            if key in data:
                self.log.add((key,), f"both 'tests' and {key!r} are given",
                             "tests (AgentV 4) or evalcases (AgentV 2), not both")
        name = self._text(data, "name", ()) or self.path.stem.removesuffix(".eval")
        description = self._text(data, "description", ()) or ""
        metadata = self._mapping(data, "metadata", ()) or {}
        metadata.update({k: data[k] for k in INFORMATION_KEYS if data.get(k) is not None})
        metadata["format"] = "agentv4"
        execution = self._v4_execution(data.get("execution"), ("execution",))
        target = execution.get("target") or self._target(data, ())
        suite_entries = self._suite_entries(data, execution)
        evaluators = self._default_evaluators(data, suite_entries)
        self.suite_evaluators = evaluators or []
        cases = self._tests(data)
        if evaluators is None or cases is None:
            return None
        if all(c.evaluators is not None for c in cases):
            evaluators = []  # every test has its own list: the suite's default judges none
        try:
            return Suite(name=name, description=description, source=self.path.absolute(),
                         target=target, judge_target=self._judge_model(target),
                         evaluators=evaluators, cases=cases, metadata=metadata,
                         files=self._files(), agent_timeout_s=execution.get("agent_timeout_s"),
                         batch=execution.get("batch"))
        except ValidationError as exc:
            self.log.add((), f"cannot build the suite: {exc}")
            return None

    # -- the suite's own settings ---------------------------------------------------------

    def _unsupported(self, data: dict[Hashable, Any], path: PathKey) -> None:
        for key in data:
            if key in UNSUPPORTED:
                self.log.add((*path, key), f"{key!r} ({UNSUPPORTED[str(key)]}) is AgentV 4's "
                             "and assay does not do it", "remove it, or run this suite with "
                             "AgentV")

    def _v4_execution(self, raw: Any, where: PathKey, keys: tuple[str, ...] = EXECUTION_KEYS
                      ) -> dict[str, Any]:
        """An ``execution`` mapping: ``target`` and ``agent_timeout_s`` checked as AgentV
        2's are, the whole mapping kept as ``raw`` for the keys only AgentV 4 has."""
        checked = self._execution({"execution": raw}, where[:-1], (*keys, *UNSUPPORTED))
        if not isinstance(raw, dict):
            return checked
        self._unsupported(raw, where)
        return {**checked, "raw": raw}

    def _suite_entries(self, data: dict[str, Any], execution: dict[str, Any]
                       ) -> list[tuple[Any, PathKey]]:
        """The suite-level assertion entries, with where each is written."""
        found = self._entries(data, ())
        raw = execution.get("raw") or {}
        for key in ("assertions", "evaluators"):
            if key in raw:
                if found:
                    self.log.add(("execution", key), "the suite's assertions are given "
                                 "twice", "assertions at the top level only")
                else:
                    found = self._list_entries(raw[key], ("execution", key))
        self.suite_raw = found
        return found

    def _entries(self, data: dict[str, Any], path: PathKey) -> list[tuple[Any, PathKey]]:
        given = [k for k in ("assertions", "assert") if k in data]
        if len(given) > 1:
            self.log.add((*path, given[1]), "both 'assertions' and 'assert' are given",
                         "assertions")
        if not given:
            return []
        return self._list_entries(data[given[0]], (*path, given[0]))

    def _list_entries(self, raw: Any, where: PathKey) -> list[tuple[Any, PathKey]]:
        if not isinstance(raw, list):
            self.log.add(where, f"assertions must be a list, not {type_name(raw)}",
                         "a list of graders ({type, ...}) and criteria (text)", value=True)
            return []
        return [(item, (*where, index)) for index, item in enumerate(raw)]

    def _default_evaluators(self, data: dict[str, Any], entries: list[tuple[Any, PathKey]]
                            ) -> list[Evaluator] | None:
        """The suite's evaluators: its assertions, else the default grader (the
        ``evaluator`` kind, else ``llm-grader``)."""
        if entries:
            return self._graders(entries)
        return self._default_grader(data, ())

    def _default_grader(self, data: dict[str, Any], path: PathKey) -> list[Evaluator] | None:
        kind = data.get("evaluator", "llm-grader")
        if not isinstance(kind, str):
            self.log.add((*path, "evaluator"), "evaluator must be a grader type",
                         "a grader type such as llm-grader", value=True)
            return None
        built = self._grader({"type": kind}, (*path, "evaluator"), default=True)
        return [built] if built is not None else None

    # -- graders --------------------------------------------------------------------------

    def _graders(self, entries: list[tuple[Any, PathKey]]) -> list[Evaluator] | None:
        """Built graders of a list: text entries become one ``rubrics`` grader (weighted by
        their number, as AgentV 4 weighs them) where the first of them stands."""
        criteria = [(e, p) for e, p in entries if isinstance(e, str)]
        built: list[Evaluator] = []
        ok = True
        names: dict[str, PathKey] = {}
        for entry, where in entries:
            if isinstance(entry, str):
                if (entry, where) != criteria[0]:
                    continue
                evaluator = self._criteria(criteria)
            else:
                evaluator = self._grader(entry, where)
            if evaluator is None:
                ok = False
                continue
            if evaluator.name in names and not _named(entry):
                evaluator.name = _distinct(evaluator.name, names)  # results key on names
            if evaluator.name in names:
                self.log.add(where, f"duplicate grader name {evaluator.name!r} (also at line "
                             f"{self.log.source.locate(names[evaluator.name]).line})",
                             "a distinct 'name' for each grader of a test, its suite's "
                             "included")
                ok = False
            names[evaluator.name] = where
            built.append(evaluator)
        return built if ok else None

    def _criteria(self, criteria: list[tuple[str, PathKey]]) -> Evaluator | None:
        items = [{"id": f"rubric-{i + 1}", "outcome": text.strip(), "required": True}
                 for i, (text, _) in enumerate(criteria) if text.strip()]
        where = criteria[0][1]
        if not items:
            self.log.add(where, "the criteria are empty", "a criterion in words", value=True)
            return None
        return self.evaluators.build({"type": "rubric", "name": "rubrics", "rubrics": items,
                                      "weight": len(items)}, where)

    def _grader(self, raw: Any, where: PathKey, default: bool = False) -> Evaluator | None:
        """One AgentV 4 grader as the assay evaluator that does it (see :data:`GRADERS`)."""
        if not isinstance(raw, dict):
            self.log.add(where, f"a grader must be a mapping or a criterion in words, not "
                         f"{type_name(raw)}", "{type, ...}")
            return None
        kind = raw.get("type")
        if not isinstance(kind, str) or not kind:
            self.log.add((*where, "type") if "type" in raw else where, "grader has no type",
                         "type: one of " + ", ".join(sorted(GRADERS)), value="type" in raw)
            return None
        if kind.startswith(ASSAY_PREFIX):  # assay's own evaluator, whatever AgentV 4 calls so
            return self._assay_evaluator(raw, where, kind.removeprefix(ASSAY_PREFIX))
        spelled = kind.replace("_", "-")
        ours = GRADERS.get(spelled)
        if ours is None:
            if evaluator_class(kind) is not None:  # assay's own judges, kept as they are
                return self.evaluators.build(raw, where)
            meant = did_you_mean(spelled, [*GRADERS, *REGISTRY.names("evaluator")])
            self.log.add((*where, "type"), f"unknown grader type {kind!r}{meant}",
                         "one of " + ", ".join(sorted(GRADERS)) + ", or an assay evaluator "
                         "type", value=True)
            return None
        fields = {k: v for k, v in raw.items() if k != "type"}
        if not self._modifiers(fields, where, spelled):
            return None
        translated = self._translate(spelled, ours, fields, where, default)
        if translated is None:
            return None
        return self.evaluators.build({"type": ours, **translated}, where)

    def _assay_evaluator(self, raw: dict[str, Any], where: PathKey,
                         kind: str) -> Evaluator | None:
        if evaluator_class(kind) is None:
            self.log.add((*where, "type"), f"unknown assay evaluator type {kind!r}",
                         "assay:NAME with NAME an assay evaluator type", value=True)
            return None
        return self.evaluators.build({**raw, "type": kind}, where)

    def _modifiers(self, fields: dict[str, Any], where: PathKey, kind: str) -> bool:
        """``required`` (true, or a pass mark), ``min_score`` and ``negate``, as assay's
        ``required`` and ``threshold``."""
        ok = True
        required = fields.pop("required", None)
        if required is not None:
            if required is True or required is False:
                fields["required"] = required
            elif isinstance(required, int | float) and 0 < required <= 1:
                fields["required"] = True
                fields.setdefault("threshold", required)
            else:
                self.log.add((*where, "required"), f"required {required!r} is not accepted",
                             "true, or a pass mark in (0, 1]", value=True)
                ok = False
        if "min_score" in fields:
            score = fields.pop("min_score")
            if isinstance(score, int | float) and not isinstance(score, bool) and \
                    0 < score <= 1:
                fields["threshold"] = score
            else:
                self.log.add((*where, "min_score"), f"min_score {score!r} is not accepted",
                             "a pass mark in (0, 1]", value=True)
                ok = False
        if fields.get("negate") is not None and kind not in CHECKS:
            self.log.add((*where, "negate"), f"negate on a {kind} grader is not supported "
                         "by assay", "negate on contains, regex, equals and the other "
                         "deterministic assertions", value=True)
            ok = False
        return ok

    def _translate(self, kind: str, ours: str, fields: dict[str, Any], where: PathKey,
                   default: bool) -> dict[str, Any] | None:
        """The fields of ``kind`` as the assay evaluator ``ours`` takes them."""
        if ours == "text_assertion":
            fields.setdefault("name", assertion_name(kind, fields.get("value")))
            return {"check": kind, **fields}
        if kind in ("python", "javascript"):
            fields.setdefault("name", kind)
            return {"language": kind, **fields}
        fields.setdefault("name", "rubrics" if kind == "rubrics" else kind)
        if kind == "rubrics":
            return self._rubric_criteria(fields, where)
        if ours == "llm_judge":
            return self._llm_grader(fields, where, default)
        if ours == "code_judge":
            return self._code_grader(fields, where)
        if ours == "composite":
            return self._composite(fields, where)
        return fields

    def _rubric_criteria(self, fields: dict[str, Any], where: PathKey) -> dict[str, Any] | None:
        criteria = fields.pop("criteria", None)
        if not isinstance(criteria, list) or not criteria:
            self.log.add((*where, "criteria") if criteria is not None else where,
                         "a rubrics grader needs criteria", "criteria: a non-empty list of "
                         "criteria (text, or {id, outcome, weight, required})")
            return None
        fields["rubrics"] = [{"id": f"rubric-{i + 1}", "outcome": c, "required": True}
                             if isinstance(c, str) else c for i, c in enumerate(criteria)]
        return fields

    def _llm_grader(self, fields: dict[str, Any], where: PathKey,
                    default: bool) -> dict[str, Any] | None:
        """An ``llm-grader``: its prompt read as AgentV 4 reads it (``file://path`` names a
        file, anything else is the prompt itself), AgentV 4's default prompt when it has
        none, and ``rubrics`` making it a rubric judge."""
        if "rubrics" in fields:
            return fields  # the builder makes it a rubric judge, as an llm_judge with rubrics
        if "prompt" not in fields:
            fields["prompt"] = DEFAULT_PROMPT
            return fields
        prompt = fields["prompt"]
        if isinstance(prompt, dict):
            self.log.add((*where, "prompt"), "executable prompt templates ({command: [...]}) "
                         "are not supported in AgentV 4 files", "prompt text, or "
                         "file://path", value=True)
            return None
        if not isinstance(prompt, str):
            return fields  # the builder reports the type, located
        if prompt.startswith(FILE_PREFIX):
            relative = prompt.removeprefix(FILE_PREFIX)
            file = self.base_dir / Path(relative).expanduser()
            if not file.is_file():
                self.log.add((*where, "prompt"), f"prompt file {relative} not found (looked "
                             f"in {file.parent})", "file://path relative to the suite file",
                             value=True)
                return None
            outside = outside_folder(relative, file, self.base_dir)
            if outside is not None:
                self.log.add((*where, "prompt"), outside, "file://path in the suite's folder",
                             value=True)
                return None
            fields["prompt"] = relative
            return fields
        if "\n" not in prompt.strip() and _LOOKS_LIKE_FILE.fullmatch(prompt.strip()):
            self.log.add((*where, "prompt"), f"prompt {prompt.strip()!r} looks like a file, "
                         "but AgentV 4 sends it to the judge as the prompt's text, not the "
                         "file's", f"file://{prompt.strip()} to use the file", value=True)
            return None
        fields["prompt"] = prompt if "\n" in prompt else prompt + "\n"
        return fields

    def _code_grader(self, fields: dict[str, Any], where: PathKey) -> dict[str, Any] | None:
        """A ``code-grader``: its ``command`` (``script`` in older files) is run as an
        argument list, a string split as a shell would split it, never run by a shell."""
        key = "command" if "command" in fields else "script"
        command = fields.pop(key, None)
        if isinstance(command, str):
            try:
                command = shlex.split(command)
            except ValueError as exc:
                self.log.add((*where, key), f"command {command!r} cannot be split into "
                             f"arguments: {exc}", "a command line, or a list of arguments",
                             value=True)
                return None
        if command is None:
            self.log.add(where, "a code-grader needs a command",
                         "command: the program and its arguments")
            return None
        fields["script"] = command
        return fields

    def _composite(self, fields: dict[str, Any], where: PathKey) -> dict[str, Any] | None:
        members = [k for k in ("assertions", "assert", "evaluators") if k in fields]
        if not members:
            self.log.add(where, "a composite needs assertions", "assertions: a list of "
                         "graders")
            return None
        built = self._graders(self._list_entries(fields.pop(members[0]), (*where, members[0])))
        if built is None:
            return None
        fields["evaluators"] = built
        aggregator = fields.get("aggregator")
        if isinstance(aggregator, dict) and isinstance(aggregator.get("type"), str):
            spelled = aggregator["type"].replace("_", "-")
            fields["aggregator"] = {**aggregator, "type": {
                "code-grader": "code", "code-judge": "code", "llm-grader": "llm_judge",
                "llm-judge": "llm_judge", "weighted-average": "weighted_average",
                "all-pass": "all_pass"}.get(spelled, aggregator["type"])}
            if "command" in aggregator:
                fields["aggregator"]["path"] = fields["aggregator"].pop("command")
        return fields

    # -- tests ----------------------------------------------------------------------------

    def _tests(self, data: dict[str, Any]) -> list[SuiteCase] | None:
        raw = data.get("tests")
        if isinstance(raw, str):
            self.log.add(("tests",), "tests naming a file of cases is not read by assay",
                         "the tests written in this file (or convert the case file)",
                         value=True)
            return None
        if not isinstance(raw, list):
            self.log.add(("tests",), f"tests must be a list, not {type_name(raw)}",
                         "a list of {id, input, criteria, assertions, ...}", value=True)
            return None
        if not raw:
            self.log.add(("tests",), "tests is empty", "at least one test", value=True)
            return None
        cases = [self._test(item, ("tests", index), data) for index, item in enumerate(raw)]
        return [c for c in cases if c is not None] if all(cases) else None

    def _test(self, raw: Any, path: PathKey, suite: dict[str, Any]) -> SuiteCase | None:
        if not isinstance(raw, dict):
            self.log.add(path, f"a test must be a mapping, not {type_name(raw)}",
                         "{id, input, criteria, assertions, ...}")
            return None
        self._unsupported(raw, path)
        self._unknown_keys(raw, path, (*CASE_KEYS, *UNSUPPORTED), "test key")
        before = len(self.log)
        self.files, self.guideline_files = [], []
        case_id = self._case_id(raw, path)
        outcomes = self._test_criteria(raw, path)
        case_input = self._test_input(raw, path, suite)
        expected, metadata = self._expected(raw, path)
        case_input = self._files_read(raw, metadata, case_input)
        execution = self._v4_execution(raw.get("execution"), (*path, "execution"),
                                       CASE_EXECUTION_KEYS)
        evaluators = self._test_graders(raw, path, execution.get("raw") or {})
        if not outcomes and expected is None and "assertions" not in raw and \
                "assert" not in raw and not self.suite_raw:
            self.log.add(path, "a test needs something to judge it by", "criteria, "
                         "expected_output or assertions")
        if len(self.log) > before or case_id is None or case_input is None or \
                evaluators is False:
            return None
        return self._suite_case(path, f"test {case_id!r}", execution.get("target"),
                                evaluators, dict(id=case_id, input=case_input,
                                                 expected_output=expected,
                                                 expected_outcomes=outcomes,
                                                 metadata=metadata))

    def _test_criteria(self, raw: dict[str, Any], path: PathKey) -> list[str]:
        given = [k for k in ("criteria", "expected_outcome") if k in raw]
        if len(given) > 1:
            self.log.add((*path, given[1]), "both 'criteria' and 'expected_outcome' are given",
                         "criteria ('expected_outcome' is its old name)")
            return []
        if not given:
            return []
        text = self._text(raw, given[0], path)
        return [text] if text else []

    def _test_input(self, raw: dict[str, Any], path: PathKey, suite: dict[str, Any]) -> Any:
        """The test's input as AgentV 4 expands it: text, a message (``{role, content}``),
        messages, or data (a mapping without ``role``); ``input_files`` (the test's, else the
        suite's) put before text as file segments; the suite's ``input`` before it all."""
        if "input" not in raw:
            self.log.add(path, "test has no 'input'", "input: text, a message, messages or "
                         "data")
            return None
        value = raw["input"]
        files = raw.get("input_files", suite.get("input_files"))
        where = (*path, "input_files") if "input_files" in raw else ("input_files",)
        if files is not None:
            if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                self.log.add(where, "input_files must be a list of paths", "[path, ...]",
                             value=True)
                return None
            if not isinstance(value, str):
                self.log.add((*path, "input"), "input_files go with a text input",
                             "input: text", value=True)
                return None
            value = [{"role": "user", "content": [
                *({"type": "file", "value": f} for f in files), {"type": "text",
                                                                 "value": value}]}]
        own = self._messages_of(value, (*path, "input"))
        prefix = suite.get("input")
        execution = raw.get("execution")
        if own is None or prefix is None or (isinstance(execution, dict) and
                                             execution.get("skip_defaults") is True):
            return own
        before = self._messages_of(prefix, ("input",))
        if before is None:
            return None
        as_list = [*(before if isinstance(before, list) else self._messages(
            [{"role": "user", "content": before}], ("input",)) or []),
            *(own if isinstance(own, list) else self._messages(
                [{"role": "user", "content": own}], (*path, "input")) or [])]
        return as_list

    def _messages_of(self, value: Any, where: PathKey) -> Any:
        """Text and data as they are; a message or a list of messages as messages."""
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and "role" in value:
            return self._messages([value], where)
        if isinstance(value, dict):
            return value
        if isinstance(value, list):
            return self._messages(value, where, is_input=True)
        self.log.add(where, f"input must be text, a message, messages or data, not "
                     f"{type_name(value)}", "text, {role, content}, [messages] or a mapping",
                     value=True)
        return None

    def _expected(self, raw: dict[str, Any], path: PathKey) -> tuple[Any, dict[str, Any]]:
        """The reference answer (the last expected assistant message's content when
        messages are given) and the case's metadata, expected messages included."""
        metadata = self._mapping(raw, "metadata", path) or {}
        value = raw.get("expected_output")
        where = (*path, "expected_output")
        if isinstance(value, dict) and "role" in value:
            value = [value]
        if isinstance(value, list) and value and isinstance(value[0], dict) and \
                "role" in value[0]:
            messages = self._messages(value, where)
            if messages is None:
                return None, metadata
            metadata["expected_messages"] = [m.model_dump(mode="json", exclude_none=True)
                                             for m in messages]
            return _last_assistant(messages, value), metadata
        return value, metadata

    def _test_graders(self, raw: dict[str, Any], path: PathKey,
                      execution: dict[str, Any]) -> list[Evaluator] | bool | None:
        """The test's graders followed by the suite's (unless ``skip_defaults``); None
        when it has none of its own (the suite's are its), False when they are invalid."""
        own = self._entries(raw, path)
        if "evaluators" in raw:
            own = own or self._list_entries(raw["evaluators"], (*path, "evaluators"))
        if "evaluators" in execution:
            own = own or self._list_entries(execution["evaluators"],
                                            (*path, "execution", "evaluators"))
        skip = execution.get("skip_defaults")
        if skip is not None and not isinstance(skip, bool):
            self.log.add((*path, "execution", "skip_defaults"), "skip_defaults must be true "
                         "or false", "true or false", value=True)
            return False
        rubrics = raw.get("rubrics")
        if rubrics is not None:
            own = [({"type": "rubrics", "criteria": rubrics}, (*path, "rubrics")), *own]
        if not own and not skip:
            if "evaluator" in raw:
                return self._default_grader(raw, path) or False
            return None
        entries = own + ([] if skip else self.suite_raw)
        built = self._default_grader(raw, path) if not entries else self._graders(entries)
        if built is None:
            return False
        if weightless(built):
            self.log.add(path, *WEIGHTLESS)
            return False
        return built


def _named(entry: Any) -> bool:
    """Whether a grader entry names itself (else its name was made from its type)."""
    return isinstance(entry, dict) and isinstance(entry.get("name"), str)


def _distinct(name: str, taken: dict[str, Any]) -> str:
    """``name-2``, ``name-3``...: the first that no grader of the list has."""
    number = 2
    while f"{name}-{number}" in taken:
        number += 1
    return f"{name}-{number}"


def check_agentv4(loaded: Any, path: Path, targets: Any) -> tuple[Suite | None, list[Any]]:
    """The suite of an AgentV 4 document (None when it cannot be built) and every problem."""
    from assay._util.yaml_source import ProblemLog
    from assay.suites.agentv_config import load_guideline_config
    from assay.suites.evaluator_config import EvaluatorBuilder
    from assay.suites.evalyaml import _targets

    log = ProblemLog(loaded.source)
    log.extend(loaded.problems)
    found = _targets(targets, path)
    guideline_config, config_problems = load_guideline_config(path)
    log.extend(config_problems)
    checker = V4Checker(log, path, EvaluatorBuilder(log, path.parent.resolve(), found), found,
                        guideline_config=guideline_config)
    suite = checker.suite(loaded.data)
    problems = log.sorted()
    return (None if problems else suite), problems


__all__ = ["DEFAULT_PROMPT", "GRADERS", "V4Checker", "check_agentv4", "is_agentv4",
           "looks_like_agentv4"]
