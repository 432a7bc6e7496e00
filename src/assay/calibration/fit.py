"""Whether a judge can be calibrated on a labelled set, checked before any call.

Two things must hold, and each failure is an error naming the file, a record and the field:

- the judge answers on the labels' scale: a pairwise judge for pairwise labels (allowing ties
  when the labels hold ties), a judge of one output for binary labels and scores, and for
  ordinal labels a judge that rates on the same whole-number scale (a ``rating`` judge);
- every item has what the judge reads: a second output for a pairwise judge, a reference or
  context where its prompt shows one. A prompt variable that calibration items cannot fill
  at all (``{{expected_outcome}}``) is an error too: the judge would grade against nothing.

How an evaluator answers is :func:`judge_scale`: its own ``calibration_scale()`` where it has
one (``pairwise``, ``rating``, ``jury``), else a 0-1 score with a pass/fail verdict.
"""

from __future__ import annotations

from typing import Any

from assay.calibration.items import CalibrationDataError, LabelledItem, LabelledSet
from assay.judges.base import Evaluator
from assay.judges.llm.templates import variables

VARIABLE_FIELDS: dict[str, str | None] = {
    "question": "input", "candidate_answer": "output", "output_messages": "output",
    "answer_a": "output", "answer_b": "output_2", "reference_answer": "reference",
    "context": "context", "guidelines": "guidelines", "input_messages": "input",
    "expected_outcome": None, "expected_messages": None, "note": None,
    "ActualOutput": "output", "ExpectedOutput": "reference",
}
"""Prompt variables -> the item field that fills them (None: no item field can)."""
NEEDS_REFERENCE = ("exact_match", "json_similarity", "strict_json_similarity",
                   "semantic_similarity")
OPTIONAL_VARIABLES = ("note", "expected_messages", "input_messages", "output_messages")
"""Variables a prompt may use that are simply empty in calibration."""


def judge_scale(evaluator: Evaluator) -> dict[str, Any]:
    """How the evaluator answers: ``{"kind": "pairwise", "ties": bool}``, ``{"kind":
    "ordinal", "scale": [low, high]}`` or ``{"kind": "score"}``."""
    own = getattr(evaluator, "calibration_scale", None)
    if callable(own):
        found: dict[str, Any] = own()
        return found
    return {"kind": "score"}


def needed_fields(evaluator: Evaluator) -> dict[str, str]:
    """The item fields the evaluator reads, each with why (for the error message)."""
    members = getattr(evaluator, "members", None)
    if isinstance(members, list):
        needed: dict[str, str] = {}
        for member in members:
            if isinstance(member, Evaluator):
                for key, why in needed_fields(member).items():
                    needed.setdefault(key, why)
        return needed
    needed = {"output": "the judge reads the output"}
    if judge_scale(evaluator)["kind"] == "pairwise":
        needed["output_2"] = "a pairwise judge compares two outputs"
    if evaluator.type in NEEDS_REFERENCE:
        needed["reference"] = f"{evaluator.type} compares the output with a reference"
    prompt = getattr(evaluator, "prompt", None)
    if isinstance(prompt, str):
        for name in variables(prompt):
            if name in OPTIONAL_VARIABLES:
                continue
            field = VARIABLE_FIELDS.get(name, "")
            if field is None:
                raise CalibrationDataError(
                    f"the judge {evaluator.name!r} ({evaluator.type}) uses {{{{{name}}}}} in "
                    "its prompt, which labelled items cannot fill (they have an input, "
                    "outputs, a reference, context and guidelines): give the judge a prompt "
                    "without it")
            if field and not (evaluator.type == "pairwise" and name == "reference_answer"
                              and getattr(evaluator, "baseline", "") == "expected_output"):
                needed.setdefault(field, f"its prompt shows {{{{{name}}}}}")
    return needed


def check_fit(labelled: LabelledSet, evaluator: Evaluator, *, judged: bool = True) -> None:
    """Raise :class:`CalibrationDataError` unless ``evaluator`` can be calibrated on
    ``labelled`` (see the module's description). ``judged=False``: the items are not judged
    again (a stored run's own scores are compared with the labels), so only the scale must
    fit; what the items hold was the run's cases', which the judge has already read."""
    if not labelled.items:
        raise CalibrationDataError(f"{_files(labelled)}: no labelled items")
    scale = judge_scale(evaluator)
    first = labelled.items[0]
    who = f"the judge {evaluator.name!r} ({evaluator.type})"
    at = f"{first.where.at(labelled.label_field)}"
    if labelled.kind == "pairwise":
        if scale["kind"] != "pairwise":
            raise CalibrationDataError(
                f"{at}: the labels say which of two outputs is better, but {who} scores one "
                "output: use a pairwise judge ({\"type\": \"pairwise\"})")
        ties = [item for item in labelled.items if item.label == "tie"]
        if ties and not scale.get("ties", True):
            raise CalibrationDataError(
                f"{ties[0].where.at(labelled.label_field)}: {len(ties)} label(s) are ties, but "
                f"{who} may not answer tie (ties: forbid): allow ties (ties: allow), or leave "
                "the tied records out")
    elif scale["kind"] == "pairwise":
        raise CalibrationDataError(
            f"{at}: the labels judge one output each ({labelled.kind}), but {who} compares two "
            "outputs: use a judge that scores one output")
    elif labelled.kind == "ordinal":
        assert labelled.scale is not None
        low, high = (int(v) for v in labelled.scale)
        if scale["kind"] != "ordinal":
            raise CalibrationDataError(
                f"{at}: the labels are whole numbers from {low} to {high}, but {who} answers "
                f"on 0-1: use a rating judge on the same scale ({{\"type\": \"rating\", "
                f"\"scale\": [{low}, {high}]}}), or compare as scores (kind score)")
        if list(scale["scale"]) != [low, high]:
            judge_low, judge_high = scale["scale"]
            raise CalibrationDataError(
                f"{at}: the labels are on {low}-{high}, but {who} rates on "
                f"{judge_low}-{judge_high}: give the judge \"scale\": [{low}, {high}]")
    if not judged:
        return
    needed = needed_fields(evaluator)
    for field, why in needed.items():
        lacking = [item for item in labelled.items if not _has(item, field)]
        if lacking:
            raise CalibrationDataError(
                f"{lacking[0].where.at(field)}: missing or empty, and {who} needs it ({why}); "
                f"{len(lacking)} of {len(labelled.items)} item(s) lack it")


def _has(item: LabelledItem, field: str) -> bool:
    """Whether the item holds the field: an output may be empty text (an answer that says
    nothing is still an answer to judge); anything else must hold something."""
    value = getattr(item, field)
    if field in ("output", "output_2"):
        return value is not None
    return value not in (None, "", [], {})


def _files(labelled: LabelledSet) -> str:
    return ", ".join(labelled.files) or labelled.name
