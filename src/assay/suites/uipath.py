"""UiPath project evaluations in: evaluator files and eval sets, loaded into a :class:`Suite`.

A UiPath project keeps ``evaluations/evaluators/*.json`` (one evaluator each) and
``evaluations/eval-sets/*.json``; an eval set's evaluators are looked up by ``id`` in the
``evaluators`` directory beside its own directory, as UiPath does.

Evaluator files come in two shapes:

* coded (``"version": "1.0"``): ``evaluatorTypeId`` names the type and ``evaluatorConfig``
  holds camelCase options plus ``defaultEvaluationCriteria``;
* legacy (no ``version``): integer ``category`` and ``type``, with ``prompt``, ``model``,
  ``targetOutputKey`` and friends at the top level.

Config keys are matched to the assay evaluator's fields by name or alias, else by their
snake_case form. Keys that only describe the evaluator (``name``, ``description``, timestamps)
are dropped, and so are options left at UiPath's default when assay has no such option
(``targetOutputKey: "*"``). Anything else an evaluator does not take is dropped with a warning
in ``suite.metadata["warnings"]``, never silently. A UiPath model name without a provider prefix
(``gpt-4.1-2025-04-14``) is that model at the run's judge service, as UiPath's LLM service
takes its names and as the Python evaluators ask for it (:func:`uipath_model`).

Per eval-set item, ``evaluationCriterias`` decides which evaluators run and with what:

* an evaluator id that is absent: the evaluator is skipped for that item;
* ``null``: the evaluator's ``defaultEvaluationCriteria``;
* an object: those criteria, in place of the defaults (not merged with them).

Criteria become evaluator fields, so each distinct set of criteria gets its own evaluator
instance (built through the registry, so it is validated like any config). An item-level
``expectedAgentBehavior`` fills the criteria of trajectory judges that lack one, as UiPath
does. ``case.expected_output`` is the item's ``expectedOutput`` if it has one, else the first
``expectedOutput`` among its criteria; an output evaluator without its own expected output
compares against it. Legacy eval sets (no ``version``) apply every referenced evaluator to
every item with ``{expectedOutput, expectedAgentBehavior}`` taken from the item.

Weights come from ``evaluatorConfigs`` (``{"ref": id, "weight": w}``) or a top-level
``evaluatorWeights`` object, default 1, and are set on the evaluators so the run's weighted
case score uses them. Each evaluator is named by its UiPath id, which keys its scores; the
display names are in ``suite.metadata["uipath"]`` for :mod:`assay.report.uipath_output`.

Problems stop the load with an :class:`EvaluationError` naming the file and a JSON path
(``$.evaluations[2].evaluationCriterias.MyEvaluator``), or ``file:line:col`` for invalid JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, ValidationError

from assay._util.jsondata import UniqueDecoder
from assay._util.limits import DEPTH_EXPECTED, depth_message, json_surrogate_problem, too_deep
from assay._util.redact import scrubbed_logger
from assay._util.user_paths import outside_folder
from assay.errors import ConfigError, EvaluationError
from assay.judges.base import Evaluator
from assay.judges.registry import EVALUATORS, build, evaluator_class
from assay.llm.models import at_judge_service, parse_model
from assay.suites.model import WEIGHTLESS, Suite, SuiteCase, id_problem, weightless
from assay.types.case import Case

log = scrubbed_logger(__name__)

TYPE_IDS: Mapping[str, str] = {
    "uipath-exact-match": "exact_match",
    "uipath-contains": "contains",
    "uipath-json-similarity": "json_similarity",
    "uipath-llm-judge-output-semantic-similarity": "semantic_similarity",
    "uipath-llm-judge-output-strict-json-similarity": "strict_json_similarity",
    "uipath-llm-judge-trajectory-similarity": "llm_judge_trajectory",
    "uipath-llm-judge-trajectory-simulation": "llm_judge_trajectory_simulation",
    "uipath-tool-call-order": "tool_call_order",
    "uipath-tool-call-count": "tool_call_count",
    "uipath-tool-call-args": "tool_call_args",
    "uipath-tool-call-output": "tool_call_output",
    "uipath-binary-classification": "binary_classification",
    "uipath-multiclass-classification": "multiclass_classification",
}
"""UiPath ``evaluatorTypeId`` -> assay evaluator type."""

LEGACY_TYPES: Mapping[int, str] = {
    1: "exact_match",            # Equals
    2: "contains",               # Contains: the expected output is the search text
    3: "regex",                  # Regex: the expected output is the pattern
    4: "semantic_similarity",    # Factuality (an LLM judge with a prompt)
    5: "semantic_similarity",    # Custom LLM-as-a-judge prompt
    6: "json_similarity",        # JsonSimilarity
    7: "llm_judge_trajectory",   # Trajectory
    8: "context_precision",      # ContextPrecision
    9: "faithfulness",           # Faithfulness
    10: "csv_exact_match",       # CSVColumnExactMatch
}
"""Legacy integer ``type`` -> assay evaluator type, for the types assay can reproduce."""

LEGACY_CRITERIA: Mapping[str, Mapping[str, str]] = {
    "contains": {"expectedOutput": "searchText"},
    "regex": {"expectedOutput": "pattern"},
}
"""Legacy criteria are always ``{expectedOutput, expectedAgentBehavior}``; for these types the
expected output is the evaluator's reference under another name."""

SAME_AS_AGENT = "same-as-agent"
"""UiPath's value for "the agent's own setting"."""

CUSTOM_TYPE = "uipath_custom"
"""The assay evaluator type of UiPath custom coded evaluators (``file://x.py:Class``)."""

FILE_PREFIX = "file://"

LEGACY_TYPE_NAMES: Mapping[int, str] = {
    0: "Unknown", 1: "Equals", 2: "Contains", 3: "Regex", 4: "Factuality", 5: "Custom",
    6: "JsonSimilarity", 7: "Trajectory", 8: "ContextPrecision", 9: "Faithfulness",
    10: "CSVColumnExactMatch",
}

DESCRIPTIVE_KEYS = frozenset({
    "name", "description", "id", "version", "category", "type", "evaluator_type_id",
    "created_at", "updated_at", "file_name", "evaluator_schema"})
"""UiPath keys that describe an evaluator rather than configure it: dropped quietly."""

UIPATH_DEFAULTS: Mapping[str, Any] = {
    "target_output_key": "*", "line_by_line_evaluator": False,
    "line_by_line_evaluation": False, "line_delimiter": "\n"}
"""Options that mean "UiPath's default behaviour" and so change nothing when dropped."""

RENAMES: Mapping[str, str] = {
    "expected_output": "expected",
    "line_by_line_evaluator": "line_by_line",
    "line_by_line_evaluation": "line_by_line",
}
"""UiPath names (snake_cased) whose assay field has another name."""

_GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}$")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``targetOutputKey`` -> ``target_output_key``; snake_case names are unchanged."""
    return _CAMEL.sub(r"_\1", name).lower()


def _norm_id(value: Any) -> str:
    """An evaluator id as UiPath compares it: GUIDs lower-cased, everything else as written."""
    text = str(value)
    return text.lower() if _GUID.match(text) else text


def _fail(code: str, where: str, message: str) -> EvaluationError:
    return EvaluationError(code, f"{where}: {message}")


def read_json(path: Path) -> Any:
    """Parse a JSON file; invalid JSON is an error at ``file:line:col``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _fail("invalid_suite_file", str(path),
                    f"cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise _fail("invalid_json", str(path), f"not UTF-8 text: {exc.reason}") from None
    try:
        data = json.loads(text, cls=UniqueDecoder)  # a key named twice: located
        deep = too_deep(data)
    except json.JSONDecodeError as exc:
        raise _fail("invalid_json", f"{path}:{exc.lineno}:{exc.colno}",
                    f"invalid JSON: {exc.msg}") from None
    except RecursionError:  # the decoder recurses, and gives up long past the bound
        deep = True
    if deep:
        raise _fail("invalid_json", str(path), f"{depth_message()} (expected: {DEPTH_EXPECTED})")
    unpaired = json_surrogate_problem(text, data)
    if unpaired is not None:
        raise _fail("invalid_json", str(path), "{} (expected: {})".format(*unpaired))
    return data


# -- evaluator definitions ------------------------------------------------------------------


@dataclass
class EvaluatorDef:
    """One evaluator file, read but not yet built: its assay type, config and defaults."""

    id: str
    name: str
    type: str
    type_id: str
    file: Path
    config: dict[str, Any] = field(default_factory=dict)
    default_criteria: dict[str, Any] | None = None
    legacy: bool = False
    problem: EvaluationError | None = None
    """Why it cannot be built (an unsupported type); raised only if an eval set uses it."""
    fixed: dict[str, Any] | None = None
    """Fields given as they are (a custom evaluator's file and class); its criteria are then
    passed whole as ``criteria``."""


def _field_names(cls: type[Any]) -> dict[str, str]:
    """Every name a field accepts (its name, alias and validation aliases) -> its name."""
    names: dict[str, str] = {}
    for name, info in cls.model_fields.items():
        names[name] = name
        if info.alias:
            names[info.alias] = name
        alias = info.validation_alias
        if isinstance(alias, str):
            names[alias] = name
        elif isinstance(alias, AliasChoices):
            names.update({c: name for c in alias.choices if isinstance(c, str)})
    return names


def to_fields(cls: type[Any], values: Mapping[str, Any], where: str,
              warnings: list[str], what: str = "config key") -> dict[str, Any]:
    """UiPath keys -> the evaluator's field names; report keys it does not take."""
    accepted = _field_names(cls)
    fields: dict[str, Any] = {}
    for key, value in values.items():
        snake = snake_case(key)
        target = accepted.get(key) or accepted.get(snake) or accepted.get(RENAMES.get(snake, ""))
        if target is not None:
            fields[target] = value
        elif snake in DESCRIPTIVE_KEYS or UIPATH_DEFAULTS.get(snake, object()) == value:
            continue
        else:
            warnings.append(f"{where}: {what} {key!r} is not an option of assay's "
                            f"{cls.type!r} evaluator; ignored")
    return fields


def _check_model(fields: dict[str, Any], where: str, warnings: list[str]) -> None:
    """``model`` as the judge engine calls it: a model string as it is; a bare model name
    (``gpt-4.1-2025-04-14``) is that model at the run's judge service, as the Python API
    asks for it (:func:`uipath_model`); none (or ``same-as-agent``) is the run's judge."""
    model = fields.get("model")
    if model is None:
        return
    chosen = uipath_model(model)
    if chosen is None:
        del fields["model"]
        if model == SAME_AS_AGENT:
            warnings.append(f"{where}.model: 'same-as-agent' has no meaning here; the "
                            "run's judge model is used")
        return
    fields["model"] = chosen


def uipath_model(model: Any) -> str | None:
    """A UiPath evaluator's ``model`` as a model string, the one rule of every UiPath entry
    point (project files and the Python evaluators alike): a model string (``openai:gpt-4o``)
    as it is, a bare name (UiPath's, ``gpt-4o-2024-11-20``) that model at the run's judge
    service (:func:`assay.llm.models.at_judge_service`), and none, blank or
    ``same-as-agent`` None: the run's judge."""
    if not isinstance(model, str) or not model.strip() or model.strip() == SAME_AS_AGENT:
        return None
    model = model.strip()
    try:
        parse_model(model)
    except ConfigError:
        return at_judge_service(model)
    return model


def parse_schema(text: str) -> tuple[str, str]:
    """``file://path.py:Class`` -> (path, class name); ValueError when it is not that."""
    if not text.startswith(FILE_PREFIX):
        raise ValueError(f"evaluatorSchema {text!r} does not start with {FILE_PREFIX}")
    file, sep, name = text[len(FILE_PREFIX):].rpartition(":")
    if not sep or not file or not name:
        raise ValueError(f"evaluatorSchema {text!r} must name a file and a class: "
                         "file://my_evaluator.py:MyEvaluator")
    return file, name


def locate_custom_file(path: str, evaluators_dir: Path | None) -> Path:
    """A custom evaluator's file as UiPath finds it: absolute or existing as given, else in
    the evaluators directory, else in its ``custom/`` subdirectory."""
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists() or evaluators_dir is None:
        return candidate
    for place in (evaluators_dir / path, evaluators_dir / "custom" / path):
        if place.exists():
            return place
    return evaluators_dir / "custom" / path


def _custom(path: Path, data: dict[str, Any], ident: str) -> EvaluatorDef:
    """A custom coded evaluator file: its Python file, class and type file, resolved."""
    schema = data.get("evaluatorSchema")
    type_id = data.get("evaluatorTypeId")
    where = f"{path}: $.evaluatorSchema"
    try:
        if not isinstance(schema, str):
            raise ValueError("a custom evaluator names its code in evaluatorSchema: "
                             "file://my_evaluator.py:MyEvaluator")
        file, class_name = parse_schema(schema)
    except ValueError as exc:
        problem = _fail("invalid_suite_file", where, str(exc))
        return EvaluatorDef(ident, ident, CUSTOM_TYPE, str(type_id), path, problem=problem)
    directory = path.parent
    code = locate_custom_file(file, directory)
    type_file = None
    named = [("evaluatorSchema", file, code)]
    if isinstance(type_id, str) and type_id.startswith(FILE_PREFIX):
        written = type_id[len(FILE_PREFIX):]
        found = locate_custom_file(written, directory) if not (
            directory / "custom" / written).exists() else directory / "custom" / written
        type_file = str(found)
        named.append(("evaluatorTypeId", written, found))
    for key, written, found in named:
        outside = outside_folder(written, found, directory)
        if outside is not None:
            problem = _fail("invalid_suite_file", f"{path}: $.{key}", outside)
            return EvaluatorDef(ident, ident, CUSTOM_TYPE, str(type_id), path, problem=problem)
    config = data.get("evaluatorConfig") or {}
    name = str(config.get("name") if isinstance(config, dict) and config.get("name")
               else data.get("name") or ident)
    fixed = {"file": str(code.absolute()), "class_name": class_name, "type_file": type_file,
             "evaluator": {k: v for k, v in data.items() if k != "evaluatorSchema"}}
    return EvaluatorDef(ident, name, CUSTOM_TYPE, str(type_id), path, fixed=fixed)


def _legacy_reference(value: Any, definition: EvaluatorDef, where: str) -> Any:
    """A legacy Contains or Regex evaluator's search text or pattern from the item's
    ``expectedOutput``, which a legacy eval set requires to be an object: its value at the
    evaluator's ``targetOutputKey``, else its only value; text as it is."""
    if not isinstance(value, dict):
        return value
    key = definition.config.get("targetOutputKey")
    if isinstance(key, str) and key != "*":
        if key in value:
            return _text_of(value[key], where, key)
        raise _fail("invalid_suite_file", f"{where}.expectedOutput",
                    f"the {definition.type_id} evaluator looks for its text at "
                    f"targetOutputKey {key!r}, which expectedOutput lacks (keys: "
                    f"{', '.join(map(repr, value)) or 'none'})")
    if len(value) == 1:
        (only, found), = value.items()
        return _text_of(found, where, only)
    raise _fail("invalid_suite_file", f"{where}.expectedOutput",
                f"the {definition.type_id} evaluator needs one text, and expectedOutput has "
                f"{len(value)} keys ({', '.join(map(repr, value)) or 'none'}); give the "
                "evaluator a targetOutputKey naming the one to use")


def _text_of(value: Any, where: str, key: str) -> str:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise _fail("invalid_suite_file", f"{where}.expectedOutput.{key}",
                f"expected text to search for, got {type(value).__name__}")


def _criteria(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _fail("invalid_suite_file", where,
                    f"criteria must be an object or null, not {type(value).__name__}")
    return value


def read_evaluator(path: Path, data: Any) -> EvaluatorDef:
    """One evaluator file (coded or legacy) as an :class:`EvaluatorDef`."""
    if not isinstance(data, dict):
        raise _fail("invalid_suite_file", f"{path}: $",
                    f"an evaluator file holds a JSON object, not {type(data).__name__}")
    if "id" not in data:
        raise _fail("invalid_suite_file", f"{path}: $.id", "the evaluator has no 'id'")
    ident = _norm_id(data["id"])
    if "version" not in data:
        return _read_legacy(path, data, ident)
    type_id = data.get("evaluatorTypeId")
    schema = data.get("evaluatorSchema")
    if (isinstance(schema, str) and schema.startswith(FILE_PREFIX)) or (
            isinstance(type_id, str) and type_id.startswith(FILE_PREFIX)):
        return _custom(path, data, ident)
    if not isinstance(type_id, str) or type_id not in TYPE_IDS:
        problem = _fail("unknown_evaluator_type", f"{path}: $.evaluatorTypeId",
                        f"unknown evaluatorTypeId {type_id!r}; known: "
                        f"{', '.join(sorted(TYPE_IDS))}, or a custom evaluator "
                        "(evaluatorSchema: file://my_evaluator.py:MyEvaluator)")
        return EvaluatorDef(ident, ident, "", str(type_id), path, problem=problem)
    config = data.get("evaluatorConfig") or {}
    if not isinstance(config, dict):
        raise _fail("invalid_suite_file", f"{path}: $.evaluatorConfig",
                    f"must be an object, not {type(config).__name__}")
    config = dict(config)
    defaults = _criteria(config.pop("defaultEvaluationCriteria",
                                    config.pop("default_evaluation_criteria", None)),
                         f"{path}: $.evaluatorConfig.defaultEvaluationCriteria")
    name = str(config.get("name") or data.get("name") or ident)
    return EvaluatorDef(ident, name, TYPE_IDS[type_id], type_id, path, config, defaults)


def _read_legacy(path: Path, data: dict[str, Any], ident: str) -> EvaluatorDef:
    kind = data.get("type")
    if not isinstance(kind, int) or kind not in LEGACY_TYPES:
        label = LEGACY_TYPE_NAMES.get(kind, "?") if isinstance(kind, int) else "?"
        problem = _fail("unknown_evaluator_type", f"{path}: $.type",
                        f"legacy evaluator type {kind!r} ({label}) is not supported; supported: "
                        + ", ".join(f"{k} ({LEGACY_TYPE_NAMES[k]})" for k in LEGACY_TYPES))
        return EvaluatorDef(ident, ident, "", f"legacy:{label}", path, legacy=True,
                            problem=problem)
    assay_type = LEGACY_TYPES[kind]
    config = {k: v for k, v in data.items()
              if k not in ("id", "category", "type", "name", "description")}
    return EvaluatorDef(ident, str(data.get("name") or ident), assay_type,
                        f"legacy:{LEGACY_TYPE_NAMES[kind]}", path, config, None, legacy=True)


def read_evaluators(directory: Path) -> dict[str, list[EvaluatorDef]]:
    """Every evaluator file in ``directory`` by id (a list, so duplicates can be reported).

    Every file must be valid JSON with an id, since any of them may hold the id an eval set
    looks for; an unsupported type only matters if an eval set references it.
    """
    if not directory.is_dir():
        raise _fail("missing_evaluator", str(directory),
                    "the evaluators directory does not exist (UiPath looks for it beside the "
                    "eval-sets directory)")
    found: dict[str, list[EvaluatorDef]] = {}
    for path in sorted(directory.glob("*.json")):
        definition = read_evaluator(path, read_json(path))
        found.setdefault(definition.id, []).append(definition)
    return found


# -- eval sets --------------------------------------------------------------------------------


@dataclass
class _Builder:
    """Builds evaluator instances for the items of one eval set, sharing identical ones."""

    definitions: dict[str, EvaluatorDef]
    weights: dict[str, float]
    warnings: list[str]
    base: dict[str, dict[str, Any]] = field(default_factory=dict)
    built: dict[tuple[str, str], Evaluator] = field(default_factory=dict)

    def base_config(self, ident: str) -> dict[str, Any]:
        """The evaluator's own config as assay fields, converted (and warned about) once."""
        if ident not in self.base and self.definitions[ident].fixed is not None:
            self.base[ident] = {**(self.definitions[ident].fixed or {}), "type": CUSTOM_TYPE,
                                "name": ident, "weight": self.weights.get(ident, 1.0)}
        if ident not in self.base:
            definition = self.definitions[ident]
            cls = EVALUATORS[definition.type]
            where = f"{definition.file}: $" + ("" if definition.legacy else ".evaluatorConfig")
            fields = to_fields(cls, definition.config, where, self.warnings)
            _check_model(fields, where, self.warnings)
            fields.update(type=definition.type, name=ident,
                          weight=self.weights.get(ident, 1.0))
            self.base[ident] = fields
        return self.base[ident]

    def evaluator(self, ident: str, criteria: Mapping[str, Any], where: str,
                  hint: str = "") -> Evaluator:
        """The evaluator ``ident`` with ``criteria`` applied, built once per distinct config.

        A config the evaluator rejects is an error naming ``where`` (plus ``hint``).
        """
        definition = self.definitions[ident]
        cls = EVALUATORS[definition.type]
        if definition.fixed is not None:  # a custom evaluator validates its own criteria
            own: dict[str, Any] = {"criteria": dict(criteria) if criteria else None}
        else:
            own = to_fields(cls, criteria, where, self.warnings, "criteria key")
        config = {**self.base_config(ident),
                  **{k: v for k, v in own.items() if k not in ("name", "weight")}}
        key = (ident, json.dumps(config, sort_keys=True, default=str))
        if key not in self.built:
            try:
                self.built[key] = build(config, where)
            except EvaluationError as exc:
                message = exc.message if exc.message.startswith(where) else (
                    f"{where}: {exc.message}")
                raise EvaluationError(exc.code, message + hint, exc.category) from None
        return self.built[key]

    def accepts(self, ident: str, key: str) -> bool:
        """Whether the evaluator takes the UiPath criteria key ``key``."""
        if self.definitions[ident].fixed is not None:
            return True
        names = _field_names(EVALUATORS[self.definitions[ident].type])
        return key in names or snake_case(key) in names or RENAMES.get(
            snake_case(key), "") in names


def _weights(data: dict[str, Any], path: Path, refs: list[str]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for index, entry in enumerate(data.get("evaluatorConfigs") or []):
        if isinstance(entry, dict) and "weight" in entry:
            weights[_norm_id(entry.get("ref"))] = _weight(
                entry["weight"], f"{path}: $.evaluatorConfigs[{index}].weight")
    own = data.get("evaluatorWeights") or {}
    if not isinstance(own, dict):
        raise _fail("invalid_suite_file", f"{path}: $.evaluatorWeights",
                    "must be an object of evaluator id -> weight")
    for ident, value in own.items():
        weights[_norm_id(ident)] = _weight(value, f"{path}: $.evaluatorWeights.{ident}")
    unknown = sorted(set(weights) - set(refs))
    if unknown:
        raise _fail("missing_evaluator", f"{path}: $.evaluatorWeights",
                    f"weights given for evaluator(s) the eval set does not reference: "
                    f"{', '.join(unknown)}")
    return weights


def _weight(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise _fail("invalid_suite_file", where, f"a weight is a number >= 0, not {value!r}")
    return float(value)


def _refs(data: dict[str, Any], path: Path) -> tuple[list[str], str]:
    """The referenced evaluator ids: ``evaluatorConfigs`` when non-empty, else the refs;
    with the key they came from, for error paths."""
    configs = data.get("evaluatorConfigs") or []
    if configs:
        refs = []
        for index, entry in enumerate(configs):
            ref = entry.get("ref") if isinstance(entry, dict) else entry
            if not isinstance(ref, str):
                raise _fail("invalid_suite_file", f"{path}: $.evaluatorConfigs[{index}]",
                            "expected an evaluator id or {\"ref\": id, \"weight\": w}")
            refs.append(_norm_id(ref))
        return refs, "evaluatorConfigs"
    raw = data.get("evaluatorRefs")
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise _fail("invalid_suite_file", f"{path}: $.evaluatorRefs",
                    "expected a list of evaluator ids")
    return [_norm_id(r) for r in raw], "evaluatorRefs"


def _resolve(refs: list[str], key: str, available: dict[str, list[EvaluatorDef]], path: Path,
             directory: Path) -> dict[str, EvaluatorDef]:
    resolved: dict[str, EvaluatorDef] = {}
    for index, ref in enumerate(refs):
        where = f"{path}: $.{key}[{index}]"
        candidates = available.get(ref, [])
        if not candidates:
            known = ", ".join(sorted(available)) or "none"
            raise _fail("missing_evaluator", where,
                        f"no evaluator file with id {ref!r} in {directory} (ids found: {known})")
        if len(candidates) > 1:
            files = ", ".join(str(c.file) for c in candidates)
            raise _fail("duplicate_evaluator", where, f"evaluator id {ref!r} is defined "
                        f"more than once: {files}")
        definition = candidates[0]
        if definition.problem is not None:
            raise definition.problem
        if evaluator_class(definition.type) is None:
            raise _fail("unknown_evaluator_type", f"{definition.file}: $.evaluatorTypeId",
                        f"{definition.type_id} maps to assay's {definition.type!r}, which is "
                        "not available in this installation")
        resolved[ref] = definition
    return resolved


def _simulation_instructions(item: dict[str, Any]) -> str | None:
    text = item.get("simulationInstructions")
    strategy = item.get("mockingStrategy")
    if not text and isinstance(strategy, dict):
        text = strategy.get("prompt")
    return text if isinstance(text, str) and text.strip() else None


def _item_criteria(item: dict[str, Any], legacy: bool, refs: Iterable[str], where: str,
                   warnings: list[str]) -> dict[str, dict[str, Any] | None]:
    """evaluator id -> criteria (None: the defaults) for one item; absent ids are skipped."""
    if legacy:
        shared: dict[str, Any] = {
            k: item[k] for k in ("expectedOutput", "expectedAgentBehavior") if k in item}
        return {ref: dict(shared) for ref in refs}
    raw = item.get("evaluationCriterias")
    if raw is None:
        warnings.append(f"{where}: no evaluationCriterias, so no evaluator applies")
        return {}
    if not isinstance(raw, dict):
        raise _fail("invalid_suite_file", f"{where}.evaluationCriterias",
                    "expected an object of evaluator id -> criteria or null")
    criteria: dict[str, dict[str, Any] | None] = {}
    for ident, value in raw.items():
        norm = _norm_id(ident)
        if norm not in refs:
            warnings.append(f"{where}.evaluationCriterias.{ident}: the eval set does not "
                            "reference this evaluator; ignored")
            continue
        criteria[norm] = _criteria(value, f"{where}.evaluationCriterias.{ident}")
    return criteria


def _case(item: dict[str, Any], where: str, expected: Any,
          input_schema: dict[str, Any] | None = None) -> Case:
    ident = item.get("id")
    if not isinstance(ident, str | int) or isinstance(ident, bool) or str(ident) == "":
        raise _fail("invalid_suite_file", f"{where}.id", "each evaluation needs an 'id'")
    problem = id_problem(str(ident))  # EVAL.yaml's and a data row's rule
    if problem is not None:
        raise _fail("invalid_suite_file", f"{where}.id", f"the id {problem}")
    metadata: dict[str, Any] = {"name": str(item.get("name") or ident)}
    instructions = _simulation_instructions(item)
    if instructions:
        metadata["simulation_instructions"] = instructions
    behavior = item.get("expectedAgentBehavior")
    if isinstance(behavior, str) and behavior.strip():
        metadata["expected_agent_behavior"] = behavior
    extras = {k: item[k] for k in ("mockingStrategy", "inputMockingStrategy", "simulateTools",
                                   "toolsToSimulate", "simulateInput",
                                   "inputGenerationInstructions") if item.get(k)}
    if extras:
        metadata["uipath"] = extras
        from assay.targets.mocking import from_uipath

        try:
            mocking = from_uipath(item)
        except ValueError as exc:
            raise _fail("invalid_suite_file", f"{where}.mockingStrategy", str(exc)) from None
        if mocking is not None:
            if mocking.input is not None and input_schema:
                mocking.input.input_schema = input_schema
            metadata["mocking"] = mocking.model_dump(mode="json", exclude_none=True)
    inputs = item.get("inputs")
    try:
        return Case(id=str(ident), input={} if inputs is None else inputs,
                    expected_output=expected, metadata=metadata)
    except ValidationError as exc:
        problem = "; ".join(e["msg"] for e in exc.errors()[:3])
        raise _fail("invalid_suite_file", f"{where}.inputs", problem) from None


def load_eval_set(path: str | Path, evaluators_dir: str | Path | None = None) -> Suite:
    """Load one UiPath eval-set file, with its evaluators, into a :class:`Suite`."""
    path = Path(path)
    directory = Path(evaluators_dir) if evaluators_dir else path.parent.parent / "evaluators"
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("evaluations"), list):
        raise _fail("invalid_suite_file", f"{path}: $.evaluations",
                    "a UiPath eval set is an object with an 'evaluations' list")
    legacy = not _is_versioned(data.get("version"))
    refs, refs_key = _refs(data, path)
    definitions = _resolve(refs, refs_key, read_evaluators(directory), path, directory)
    warnings: list[str] = []
    builder = _Builder(definitions, _weights(data, path, refs), warnings)
    project = project_of(path)
    input_schema = _input_schema(project) if project is not None else None
    cases: list[SuiteCase] = []
    seen: set[str] = set()
    for index, item in enumerate(data["evaluations"]):
        where = f"{path}: $.evaluations[{index}]"
        if not isinstance(item, dict):
            raise _fail("invalid_suite_file", where, "each evaluation is a JSON object")
        chosen = _item_criteria(item, legacy, refs, where, warnings)
        evaluators: list[Evaluator] = []
        expected_outputs: list[Any] = []
        for ident in refs:  # the eval set's order, whatever the item's order
            if ident not in chosen:
                continue
            criteria = chosen[ident]
            at = f"{where}.evaluationCriterias.{ident}"
            hint = ""
            if criteria is None:
                criteria = definitions[ident].default_criteria or {}
                if definitions[ident].default_criteria is None:
                    hint = (" (the criteria are null, meaning the evaluator's "
                            "defaultEvaluationCriteria, and it has none)")
            elif legacy:
                renames = LEGACY_CRITERIA.get(definitions[ident].type, {})
                criteria = {renames.get(k, k): _legacy_reference(v, definitions[ident], at)
                            if k in renames else v for k, v in criteria.items()}
                criteria = {k: v for k, v in criteria.items() if builder.accepts(ident, k)}
            behavior = item.get("expectedAgentBehavior")
            if (not legacy and behavior and "expectedAgentBehavior" not in criteria
                    and builder.accepts(ident, "expectedAgentBehavior")):
                criteria = {**criteria, "expectedAgentBehavior": behavior}
            if "expectedOutput" in criteria:
                expected_outputs.append(criteria["expectedOutput"])
            evaluators.append(builder.evaluator(ident, criteria, at, hint))
        expected = item["expectedOutput"] if item.get("expectedOutput") is not None else (
            expected_outputs[0] if expected_outputs else None)
        if weightless(evaluators):
            raise _fail("invalid_suite_file", where, f"{WEIGHTLESS[0]} (expected: "
                        f"{WEIGHTLESS[1]})")
        case = _case(item, where, expected, input_schema)
        if case.id in seen:
            raise _fail("invalid_suite_file", f"{where}.id", f"duplicate id {case.id!r}")
        seen.add(case.id)
        cases.append(SuiteCase(case=case, evaluators=evaluators))
    for warning in dict.fromkeys(warnings):
        log.warning("%s", warning)
    name = str(data.get("name") or data.get("id") or path.stem)
    return Suite(
        name=name, source=path.absolute(), cases=cases, files=_evaluator_files(directory),
        metadata={
            "format": "uipath",
            "warnings": list(dict.fromkeys(warnings)),
            "uipath": {
                "eval_set_id": data.get("id"),
                "eval_set_name": name,
                "legacy": legacy,
                "evaluation_names": {c.case.id: c.case.metadata["name"] for c in cases},
                "evaluator_names": {i: d.name for i, d in definitions.items()},
                "evaluator_types": {i: d.type_id for i, d in definitions.items()},
                "project": str(project.absolute()) if project is not None else None,
                "model_settings": _listed(data.get("modelSettings")),
                "agent_memory_enabled": bool(data.get("agentMemoryEnabled")),
                "agent_memory_settings": _listed(data.get("agentMemorySettings")),
            },
        })


def _listed(value: Any) -> list[dict[str, Any]]:
    """An eval set's list of settings objects (``modelSettings``...), the malformed left out."""
    return [v for v in value if isinstance(v, dict) and isinstance(v.get("id"), str)] \
        if isinstance(value, list) else []



def run_settings(suite: Suite, model_settings_id: str | None,
                 memory_settings_id: str | None) -> dict[str, Any]:
    """What ``--model-settings-id`` and ``--agent-memory-settings-id`` give every case of a
    UiPath eval set, in its ``metadata``, where an agent function that takes the case reads
    them (UiPath hands them to its low-code agents' runtime, which a Python entry point has
    not):

    * ``model_settings``: ``{model, temperature}`` of the eval set's ``modelSettings`` entry
      with that id, ``same-as-agent`` values left out (``default``: none, as in UiPath);
    * ``agent_memory_settings``: ``{"enabled": false}`` unless the eval set enables agent
      memory (``agentMemoryEnabled``), else ``{enabled, resultCount, searchMode, threshold}``
      of the entry with that id (``NoMemory``: disabled).

    An id the eval set does not define is a ConfigError listing the ones it does (UiPath
    logs a warning and runs without it)."""
    meta = suite.metadata.get("uipath") if suite.metadata.get("format") == "uipath" else None
    if (model_settings_id or memory_settings_id) and meta is None:
        raise ConfigError(f"--model-settings-id and --agent-memory-settings-id choose settings "
                          f"of a UiPath eval set; {suite.name!r} is not one",
                          code="invalid_config")
    found: dict[str, Any] = {}
    if meta is not None and model_settings_id and model_settings_id != "default":
        entry = _entry(meta["model_settings"], model_settings_id, "modelSettings")
        chosen = {"model": entry.get("modelName"), "temperature": entry.get("temperature")}
        found["model_settings"] = {k: v for k, v in chosen.items()
                                   if v is not None and v != SAME_AS_AGENT}
    if meta is not None and memory_settings_id:
        found["agent_memory_settings"] = _memory(meta, memory_settings_id)
    return found


def _entry(entries: list[dict[str, Any]], ident: str, what: str) -> dict[str, Any]:
    for entry in entries:
        if entry["id"] == ident:
            return entry
    known = ", ".join(repr(e["id"]) for e in entries) or "none"
    raise ConfigError(f"the eval set defines no {what} entry {ident!r} (defined: {known})",
                      code="invalid_config")


def _memory(meta: Mapping[str, Any], ident: str) -> dict[str, Any]:
    """UiPath's agent memory override for an eval run."""
    entries: list[dict[str, Any]] = meta["agent_memory_settings"]
    if not meta["agent_memory_enabled"] or ident == "NoMemory":
        return {"enabled": False}
    target = next((e for e in entries if e["id"] == ident), None)
    if target is None and ident != "default":
        _entry(entries, ident, "agentMemorySettings")
    target = target or (entries[0] if entries else None)
    if target is None:
        return {"enabled": True}
    if target["id"] == "NoMemory":
        return {"enabled": False}
    return {"enabled": True, **{k: target.get(k, SAME_AS_AGENT)
                                for k in ("resultCount", "searchMode", "threshold")}}


def _evaluator_files(directory: Path) -> dict[Path, str]:
    """The files of the evaluators directory an eval set reads: its JSON definitions and
    the Python files of its custom evaluators."""
    if not directory.is_dir():
        return {}
    return {p.absolute(): "an evaluator file of the eval set"
            for pattern in ("*.json", "*.py") for p in sorted(directory.rglob(pattern))}


def project_of(eval_set: Path) -> Path | None:
    """The UiPath project of an eval set in ``PROJECT/evaluations/eval-sets/``, else None."""
    sets = eval_set.absolute().parent
    if sets.name == "eval-sets" and sets.parent.name == "evaluations":
        return sets.parent.parent
    return None


def _input_schema(project: Path) -> dict[str, Any] | None:
    """The input schema of the project's only entry point (for generated inputs)."""
    from assay.targets.uipath_entrypoint import find_entrypoints

    try:
        found = find_entrypoints(project)
    except ConfigError:
        return None
    return next(iter(found.values())).input_schema or None if len(found) == 1 else None


def _is_versioned(version: Any) -> bool:
    """True for a coded (1.0 or later) eval set; no version or one below 1 is legacy."""
    try:
        return version is not None and float(str(version)) >= 1.0
    except ValueError:
        return True


def find_eval_sets(root: str | Path) -> list[Path]:
    """The eval-set files of a project root, its ``evaluations`` dir, or an eval-sets dir."""
    root = Path(root)
    for candidate in (root / "evaluations" / "eval-sets", root / "eval-sets", root):
        if candidate.is_dir() and candidate.name == "eval-sets":
            return sorted(candidate.glob("*.json"))
    return []


def load_uipath(path: str | Path) -> Suite:
    """An eval-set file, or a project directory holding exactly one eval set."""
    path = Path(path)
    if path.is_file():
        return load_eval_set(path)
    sets = find_eval_sets(path)
    if len(sets) == 1:
        return load_eval_set(sets[0])
    if not sets:
        raise _fail("invalid_suite_file", str(path),
                    "no eval sets found (expected evaluations/eval-sets/*.json)")
    raise _fail("invalid_suite_file", str(path), "several eval sets found; name one: "
                + ", ".join(str(s) for s in sets))


def looks_like_uipath(data: Any) -> bool:
    """Whether parsed JSON is a UiPath eval set (for format detection)."""
    return (isinstance(data, dict) and isinstance(data.get("evaluations"), list)
            and ("evaluatorRefs" in data or "evaluatorConfigs" in data))
