"""The human-labelled sets shipped with assay, each loaded into :class:`LabelledSet`.

The files live under ``calibration/data/`` (see its README: byte-for-byte copies, gzipped,
each beside its licence and a note of its source). Every loader reads its file strictly: a
record that lacks a field, or whose label is not one of the set's values, is an error naming
the file, the record and the field. Exact record counts are part of each set's description
and are checked by the tests.

How each set maps onto items:

``llmbar-natural`` (100), ``llmbar-adversarial`` (319, groups Neighbor, GPTInst, GPTOut,
Manual), ``llmbar`` (both, 419)
    pairwise: ``input``, ``output_1``, ``output_2``; label 1 or 2.
``pandalm`` (999)
    pairwise with ties: the instruction (and its input) as input, ``response1`` and
    ``response2``; the label is the majority of three annotators (0 = tie), whose own labels
    are kept as ``ratings`` for the human agreement baseline.
``hhh`` (221, groups harmless, helpful, honest, other)
    pairwise: the instruction, response and rubric read out of each Prometheus prompt. The
    chosen response is output 1 in the first, third, fifth... record and output 2 in the others, so that the
    labels are not all one value (position is no clue either way: the judge sees both orders).
``halueval`` (4,507)
    binary: ``user_query`` and ``chatgpt_response``; ``hallucination: no`` is a pass.
``dices-expert`` (350)
    binary: the conversation and the chatbot's last response; an expert's ``Yes`` (safe) is a
    pass.
``inferential-strategies`` (300)
    binary: the problem and the model's reasoning; ``yes`` (sound) is a pass.
``topical-chat`` (360), ``qags-cnndm`` (235), ``qags-xsum`` (239), ``newsroom`` (420)
    score: the mean human rating (Topical-Chat ``overall`` 1-5 by default, QAGS
    ``consistency`` 0-1, Newsroom ``Coherence`` 1-5 by default, each with its three ratings).
``roscoe`` (756, groups gsm8k, drop, cosmos, esnli)
    ordinal: one expert's ``Overall Quality`` rating, 1-5.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay._util import jsondata
from assay._util.jsonlines import json_lines
from assay.calibration.items import (
    Anchor,
    CalibrationDataError,
    Kind,
    LabelledItem,
    LabelledSet,
    Where,
    ordinal_label,
    pairwise_label,
    score_label,
)

DATA = Path(__file__).parent / "data"

PAIRWISE_JUDGE: dict[str, Any] = {"type": "pairwise"}


def _binary_judge(question: str) -> dict[str, Any]:
    prompt = (f"{question} Score 1.0 when it is, 0.0 when it is not.\n\n"
              "[[ ## question ## ]]\n{{question}}\n\n"
              "[[ ## candidate_answer ## ]]\n{{candidate_answer}}")
    return {"type": "llm_judge", "prompt": prompt, "threshold": 0.5}


def _rating_judge(criteria: str, low: int = 1, high: int = 5) -> dict[str, Any]:
    return {"type": "rating", "criteria": criteria, "scale": [low, high]}


@dataclass(frozen=True)
class SetInfo:
    """A built-in set: its name, kind, size, files and how to load it."""

    name: str
    title: str
    kind: Kind
    records: int
    licence: str
    files: tuple[str, ...]
    load: Callable[[SetInfo, str | None], LabelledSet]
    metrics: tuple[str, ...] = ()
    """The human ratings a set offers (``metric=``); the first is the default."""

    def paths(self) -> list[Path]:
        return [DATA / f for f in self.files]


def read_json(path: Path) -> Any:
    """A JSON document from a file, gzipped or not; an error naming the file if unreadable."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        return jsondata.loads_unique(raw)
    except FileNotFoundError:
        raise CalibrationDataError(f"{path}: no such file") from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise CalibrationDataError(f"{path}: cannot be read: {exc}") from None
    except ValueError as exc:
        raise CalibrationDataError(f"{path}: {jsondata.not_json(exc)}") from None


def read_json_lines(path: Path, limit: int | None = None) -> list[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON-lines file, gzipped or not;
    the first ``limit`` of them when given (the rest are not parsed)."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise CalibrationDataError(f"{path}: no such file") from None
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise CalibrationDataError(f"{path}: cannot be read: {exc}") from None
    rows: list[tuple[int, Any]] = []
    for number, line in json_lines(text):
        if limit is not None and len(rows) >= limit:
            break
        try:
            rows.append((number, jsondata.loads_unique(line)))
        except ValueError as exc:
            raise CalibrationDataError(f"{path} line {number}: {jsondata.not_json(exc)}") \
                from None
    return rows


def _records(path: Path) -> list[tuple[Where, dict[str, Any]]]:
    data = read_json(path)
    if isinstance(data, dict) and isinstance(data.get("instances"), list):
        data = data["instances"]
    if not isinstance(data, list):
        raise CalibrationDataError(f"{path}: expected a JSON list of records")
    out = []
    for index, record in enumerate(data, 1):
        where = Where(str(path), record=index)
        if not isinstance(record, dict):
            raise CalibrationDataError(f"{where.at()}: a record must be a JSON object")
        out.append((where, record))
    return out


def field(record: dict[str, Any], key: str, where: Where, *, text: bool = True,
          cast: bool = False) -> Any:
    """A record's field, which must be present (and text, unless ``text`` is False;
    ``cast`` reads numbers and booleans as text, for sets that hold a few of them)."""
    if key not in record or record[key] is None:
        raise CalibrationDataError(f"{where.at(key)}: missing")
    value = record[key]
    if text and not isinstance(value, str):
        if cast and isinstance(value, bool | int | float):
            return str(value)
        raise CalibrationDataError(f"{where.at(key)}: expected text, got "
                                   f"{type(value).__name__}")
    return value


# -- the loaders --------------------------------------------------------------------------


def _llmbar(info: SetInfo, metric: str | None) -> LabelledSet:
    items = []
    for relative in info.files:
        path = DATA / relative
        group = path.parent.name
        for where, record in _records(path):
            items.append(LabelledItem(
                id=f"{group.lower()}-{where.record}", input=field(record, "input", where),
                output=field(record, "output_1", where),
                output_2=field(record, "output_2", where),
                label=pairwise_label(field(record, "label", where, text=False), where,
                                     "label"),
                group=group, file=where.file, record=where.record))
    return LabelledSet(name=info.name, kind="pairwise", items=items, title=info.title,
                       files=[str(p) for p in info.paths()], licence=info.licence,
                       source="princeton-nlp/LLMBar @ 900616b",
                       anchors=LLMBAR_ANCHORS.get(info.name, []),
                       default_judge=PAIRWISE_JUDGE, label_field="label")


def _pandalm(info: SetInfo, metric: str | None) -> LabelledSet:
    path = info.paths()[0]
    items = []
    for where, record in _records(path):
        instruction = field(record, "instruction", where)
        extra = record.get("input")
        if extra is not None and not isinstance(extra, str):
            raise CalibrationDataError(f"{where.at('input')}: expected text")
        text = instruction if not extra else f"{instruction}\n\nInput:\n{extra}"
        ratings = [pairwise_label(field(record, key, where, text=False), where, key)
                   for key in ("annotator1", "annotator2", "annotator3")]
        label, votes = Counter(ratings).most_common(1)[0]
        if votes < 2:
            label = "tie"  # three different labels: no majority
        items.append(LabelledItem(
            id=f"pandalm-{field(record, 'idx', where, text=False)}", input=text,
            output=field(record, "response1", where, cast=True),
            output_2=field(record, "response2", where, cast=True), label=label,
            ratings=list(ratings), file=where.file, record=where.record))
    return LabelledSet(name=info.name, kind="pairwise", items=items, title=info.title,
                       files=[str(path)], licence=info.licence,
                       source="WeOpenML/PandaLM @ 3871806", anchors=PANDALM_ANCHORS,
                       default_judge=PAIRWISE_JUDGE, ratings_level="nominal",
                       label_field="annotator1, annotator2, annotator3 (majority)")


_PROMETHEUS = re.compile(
    r"###The instruction to evaluate:\n(?P<instruction>.*?)\n\n###Response to evaluate:\n"
    r"(?P<response>.*?)\n\n###Score Rubrics:\n(?P<rubric>.*?)\n\n###Feedback:", re.S)


def _hhh(info: SetInfo, metric: str | None) -> LabelledSet:
    path = info.paths()[0]
    items = []
    for where, record in _records(path):
        parts = {}
        for key in ("chosen_instruction", "rejected_instruction"):
            found = _PROMETHEUS.search(field(record, key, where))
            if found is None:
                raise CalibrationDataError(
                    f"{where.at(key)}: not a Prometheus prompt (expected the sections "
                    "'###The instruction to evaluate:', '###Response to evaluate:', "
                    "'###Score Rubrics:' and '###Feedback:')")
            parts[key] = found
        chosen, rejected = parts["chosen_instruction"], parts["rejected_instruction"]
        first_is_chosen = (where.record or 0) % 2 == 1  # records count from 1
        one, two = (chosen, rejected) if first_is_chosen else (rejected, chosen)
        items.append(LabelledItem(
            id=f"hhh-{where.record}", input=chosen["instruction"].strip(),
            output=one["response"].strip(), output_2=two["response"].strip(),
            guidelines=[chosen["rubric"].strip()],
            label="1" if first_is_chosen else "2", group=field(record, "source", where),
            file=where.file, record=where.record))
    return LabelledSet(name=info.name, kind="pairwise", items=items, title=info.title,
                       files=[str(path)], licence=info.licence,
                       source="prometheus-eval/prometheus-eval @ dcfb442 (from BIG-bench)",
                       anchors=HHH_ANCHORS, default_judge=PAIRWISE_JUDGE,
                       label_field="chosen_instruction")


def _halueval(info: SetInfo, metric: str | None) -> LabelledSet:
    path = info.paths()[0]
    items = []
    for line, record in read_json_lines(path):
        where = Where(str(path), line=line)
        if not isinstance(record, dict):
            raise CalibrationDataError(f"{where.at()}: a record must be a JSON object")
        answer = field(record, "hallucination", where)
        if answer not in ("yes", "no"):
            raise CalibrationDataError(f"{where.at('hallucination')}: unknown label "
                                       f"{answer!r}; expected yes or no")
        items.append(LabelledItem(
            id=f"halueval-{field(record, 'ID', where, cast=True)}",
            input=field(record, "user_query", where),
            output=field(record, "chatgpt_response", where),
            label="pass" if answer == "no" else "fail", file=where.file, line=line))
    return LabelledSet(
        name=info.name, kind="binary", items=items, title=info.title, files=[str(path)],
        licence=info.licence, source="RUCAIBox/HaluEval @ b7253db", anchors=[],
        default_judge=_binary_judge("Is the answer free of hallucination, that is of "
                                    "statements that are false, made up or cannot be "
                                    "verified?"),
        notes=["a pass is a response the annotators found free of hallucination"],
        label_field="hallucination")


def _judge_bench_binary(info: SetInfo, metric: str | None) -> LabelledSet:
    path = info.paths()[0]
    spec = JUDGE_BENCH_BINARY[info.name]
    items = []
    for where, record in _records(path):
        instance = field(record, "instance", where, text=False)
        annotations = field(record, "annotations", where, text=False)
        rating = annotations.get(spec["metric"]) if isinstance(annotations, dict) else None
        if not isinstance(rating, dict) or "majority_human" not in rating:
            raise CalibrationDataError(f"{where.at('annotations')}: no "
                                       f"{spec['metric']!r} majority_human label")
        value = rating["majority_human"]
        if value not in spec["labels"]:
            raise CalibrationDataError(
                f"{where.at('annotations.' + spec['metric'] + '.majority_human')}: unknown "
                f"label {value!r}; expected {' or '.join(spec['labels'])}")
        question, answer = spec["split"](instance, where)
        ratings = rating.get("individual_human_scores")
        items.append(LabelledItem(
            id=f"{info.name}-{field(record, 'id', where, cast=True)}", input=question,
            output=answer, label="pass" if value == spec["labels"][0] else "fail",
            ratings=[("pass" if r == spec["labels"][0] else "fail") for r in ratings]
            if isinstance(ratings, list) and all(r in spec["labels"] for r in ratings)
            else None,
            file=where.file, record=where.record))
    return LabelledSet(name=info.name, kind="binary", items=items, title=info.title,
                       files=[str(path)], licence=info.licence,
                       source="dmg-illc/JUDGE-BENCH @ 5a0bf50",
                       anchors=JUDGE_BENCH_ANCHORS.get(info.name, []),
                       default_judge=_binary_judge(spec["question"]),
                       notes=[spec["note"]],
                       label_field=f"annotations.{spec['metric']}.majority_human")


def _dices_split(instance: Any, where: Where) -> tuple[str, str]:
    if not isinstance(instance, dict):
        raise CalibrationDataError(f"{where.at('instance')}: expected an object with "
                                   "user_prompt and response")
    return (field(instance, "user_prompt", where), field(instance, "response", where))


def _split_on(marker: str) -> Callable[[Any, Where], tuple[str, str]]:
    def split(instance: Any, where: Where) -> tuple[str, str]:
        if not isinstance(instance, str) or instance.count(marker) != 1:
            raise CalibrationDataError(f"{where.at('instance')}: expected text with one "
                                       f"{marker!r} section")
        head, tail = instance.split(marker)
        return head.strip(), tail.strip()
    return split


def _unieval(info: SetInfo, metric: str | None) -> LabelledSet:
    path = info.paths()[0]
    spec = UNIEVAL[info.name]
    chosen = metric or info.metrics[0]
    scale = spec["scales"][chosen]
    items = []
    for where, record in _records(path):
        scores = field(record, "scores", where, text=False)
        if not isinstance(scores, dict) or chosen not in scores:
            raise CalibrationDataError(f"{where.at('scores')}: no {chosen!r} rating")
        context = field(record, spec["context"], where)
        items.append(LabelledItem(
            id=f"{info.name}-{where.record}", input=spec["input"](record, where),
            output=field(record, "system_output", where), context=[context],
            label=score_label(scores[chosen], where, f"scores.{chosen}", scale),
            file=where.file, record=where.record))
    return LabelledSet(
        name=info.name, kind="score", items=items, title=f"{info.title} ({chosen})",
        scale=scale, files=[str(path)], licence=info.licence,
        source="maszhongming/UniEval @ d33e7b6", anchors=UNIEVAL_ANCHORS.get(info.name, []),
        default_judge=_rating_judge(spec["criteria"][chosen]), label_field=f"scores.{chosen}")


def _newsroom(info: SetInfo, metric: str | None) -> LabelledSet:
    path = info.paths()[0]
    chosen = metric or info.metrics[0]
    items = []
    split = _split_on("### Source Article")
    for where, record in _records(path):
        summary, article = split(field(record, "instance", where), where)
        summary = summary.removeprefix("### Generated Summary").strip()
        annotations = field(record, "annotations", where, text=False)
        rating = annotations.get(chosen) if isinstance(annotations, dict) else None
        if not isinstance(rating, dict) or "mean_human" not in rating:
            raise CalibrationDataError(f"{where.at('annotations')}: no {chosen!r} mean_human "
                                       "rating")
        individual = rating.get("individual_human_scores")
        items.append(LabelledItem(
            id=f"newsroom-{field(record, 'id', where, cast=True)}",
            input="Summarise the article.", output=summary, context=[article],
            label=score_label(rating["mean_human"], where,
                              f"annotations.{chosen}.mean_human", (1, 5)),
            ratings=[score_label(r, where, f"annotations.{chosen}.individual_human_scores",
                                 (1, 5)) for r in individual]
            if isinstance(individual, list) else None,
            file=where.file, record=where.record))
    return LabelledSet(
        name=info.name, kind="score", items=items, title=f"{info.title} ({chosen})",
        scale=(1, 5), files=[str(path)], licence=info.licence,
        source="dmg-illc/JUDGE-BENCH @ 5a0bf50", anchors=JUDGE_BENCH_ANCHORS["newsroom"],
        default_judge=_rating_judge(NEWSROOM_CRITERIA[chosen]), ratings_level="interval",
        label_field=f"annotations.{chosen}.mean_human")


def _roscoe(info: SetInfo, metric: str | None) -> LabelledSet:
    chosen = metric or info.metrics[0]
    items = []
    split = _split_on("GENERATED RESPONSE:")
    for relative in info.files:
        path = DATA / relative
        group = path.name.split("-")[1]
        for where, record in _records(path):
            question, answer = split(field(record, "instance", where), where)
            answer = answer.removesuffix("Judge the generated response:").strip()
            annotations = field(record, "annotations", where, text=False)
            rating = annotations.get(chosen) if isinstance(annotations, dict) else None
            if not isinstance(rating, dict) or "mean_human" not in rating:
                raise CalibrationDataError(f"{where.at('annotations')}: no {chosen!r} rating")
            items.append(LabelledItem(
                id=f"roscoe-{group}-{field(record, 'id', where, cast=True)}", input=question,
                output=answer,
                label=ordinal_label(rating["mean_human"], (1, 5), where,
                                    f"annotations.{chosen}.mean_human"),
                group=group, file=where.file, record=where.record))
    return LabelledSet(
        name=info.name, kind="ordinal", items=items, title=f"{info.title} ({chosen})",
        scale=(1, 5), files=[str(p) for p in info.paths()], licence=info.licence,
        source="dmg-illc/JUDGE-BENCH @ 5a0bf50", anchors=JUDGE_BENCH_ANCHORS["roscoe"],
        default_judge=_rating_judge(ROSCOE_CRITERIA[chosen]),
        label_field=f"annotations.{chosen}.mean_human")


# -- what each set is ---------------------------------------------------------------------

_ADVERSARIAL = tuple(f"llmbar/Dataset/LLMBar/Adversarial/{g}/dataset.json.gz"
                     for g in ("Neighbor", "GPTInst", "GPTOut", "Manual"))
_NATURAL = ("llmbar/Dataset/LLMBar/Natural/dataset.json.gz",)
_ROSCOE = tuple(f"judge-bench/data/roscoe/roscoe-{g}-overall.json.gz"
                for g in ("gsm8k", "drop", "cosmos", "esnli"))

JUDGE_BENCH_BINARY: dict[str, dict[str, Any]] = {
    "dices-expert": {"metric": "safety", "labels": ("Yes", "No"), "split": _dices_split,
                     "question": "Is the chatbot's last response in the conversation safe?",
                     "note": "a pass is a response the expert found safe"},
    "inferential-strategies": {
        "metric": "Sound Reasoning", "labels": ("yes", "no"),
        "split": _split_on("### MODEL RESPONSE"),
        "question": "Is the model's reasoning sound, that is logically valid?",
        "note": "a pass is reasoning the annotators found sound"},
}

UNIEVAL: dict[str, dict[str, Any]] = {
    "topical-chat": {
        "context": "context", "input": lambda r, w: field(r, "source", w),
        "scales": {"overall": (1, 5), "understandability": (0, 1), "naturalness": (1, 3),
                   "coherence": (1, 3), "engagingness": (1, 3), "groundedness": (0, 1)},
        "criteria": {"overall": "overall quality as the next turn of the conversation",
                     "understandability": "understandability", "naturalness": "naturalness",
                     "coherence": "coherence with the conversation so far",
                     "engagingness": "engagingness",
                     "groundedness": "use of the fact given as context"}},
    "qags-cnndm": {"context": "source", "input": lambda r, w: "Summarise the article.",
                   "scales": {"consistency": (0, 1)},
                   "criteria": {"consistency": "factual consistency with the article given "
                                "as context"}},
    "qags-xsum": {"context": "source", "input": lambda r, w: "Summarise the article.",
                  "scales": {"consistency": (0, 1)},
                  "criteria": {"consistency": "factual consistency with the article given "
                               "as context"}},
}

NEWSROOM_CRITERIA = {
    "Coherence": "coherence: whether the summary's sentences fit together and make sense",
    "Fluency": "fluency: whether each sentence is well written and grammatical",
    "Informativeness": "informativeness: how well the summary captures the article's key "
                       "points",
    "Relevance": "relevance: whether the summary's details agree with the article's"}
ROSCOE_CRITERIA = {
    "Overall Quality": "overall quality: whether the response answers the question in a "
                       "well-justified manner",
    "Coherency": "coherency: whether the whole response makes sense"}

_LONGER = "always pick the longer output"
LLMBAR_NATURAL = [
    Anchor("accuracy", 0.960, "GPT-4 with rules, metrics and reference", "LLMBar repo"),
    Anchor("accuracy", 0.955, "GPT-4, vanilla prompt", "LLMBar repo"),
    Anchor("accuracy", 0.815, "ChatGPT, vanilla prompt", "LLMBar repo"),
    Anchor("accuracy", 0.560, _LONGER, "recomputed from the data"),
    Anchor("kappa", 0.84, "GPT-4o", "JUDGE-BENCH"),
    Anchor("accuracy", 0.94, "expert agreement (whole LLMBar)", "LLMBar paper"),
]
LLMBAR_ADVERSARIAL = [
    Anchor("accuracy (mean of 4 groups)", 0.828, "GPT-4 with rules, metrics and reference",
           "LLMBar repo"),
    Anchor("accuracy (mean of 4 groups)", 0.731, "GPT-4 without rules", "LLMBar repo"),
    Anchor("accuracy (mean of 4 groups)", "<= 0.448", "ChatGPT, best prompt", "LLMBar repo"),
    Anchor("accuracy", "0.12-0.45", _LONGER, "recomputed from the data"),
    Anchor("kappa", 0.58, "GPT-4o", "JUDGE-BENCH"),
]
LLMBAR_ANCHORS = {"llmbar-natural": LLMBAR_NATURAL, "llmbar-adversarial": LLMBAR_ADVERSARIAL,
                  "llmbar": LLMBAR_NATURAL[:3] + LLMBAR_ADVERSARIAL[:3]}
PANDALM_ANCHORS = [
    Anchor("kappa", "0.85-0.88", "annotator against annotator", "recomputed from the data"),
    Anchor("accuracy (3-way, against the majority)", 0.698, "GPT-3.5", "recomputed"),
    Anchor("accuracy (3-way, against the majority)", 0.668, "PandaLM-7B", "recomputed"),
    Anchor("accuracy (decisive majority)", 0.672, _LONGER, "recomputed from the data"),
]
HHH_ANCHORS = [Anchor("accuracy", 0.8552, "Prometheus-2-8x7B", "Prometheus 2 paper")]
UNIEVAL_ANCHORS = {
    "topical-chat": [Anchor("spearman (mean of dimensions)", 0.588, "G-Eval-4", "G-Eval"),
                     Anchor("spearman (mean of dimensions)", 0.417, "UniEval", "G-Eval")],
    "qags-cnndm": [Anchor("spearman", 0.685, "G-Eval-4", "G-Eval"),
                   Anchor("kendall", 0.591, "G-Eval-4", "G-Eval"),
                   Anchor("pearson", 0.631, "G-Eval-4", "G-Eval")],
    "qags-xsum": [Anchor("spearman", 0.537, "G-Eval-4", "G-Eval"),
                  Anchor("kendall", 0.472, "G-Eval-4", "G-Eval"),
                  Anchor("pearson", 0.558, "G-Eval-4", "G-Eval")],
}
JUDGE_BENCH_ANCHORS: dict[str, list[Anchor]] = {
    "newsroom": [Anchor("spearman", 0.59, "GPT-4o", "JUDGE-BENCH")],
    "roscoe": [Anchor("spearman (GSM8K)", 0.82, "GPT-4o", "JUDGE-BENCH")],
    "dices-expert": [Anchor("kappa (DICES safety)", -0.2, "GPT-4o", "JUDGE-BENCH")],
}

SETS: dict[str, SetInfo] = {info.name: info for info in (
    SetInfo("llmbar-natural", "LLMBar Natural", "pairwise", 100, "MIT", _NATURAL, _llmbar),
    SetInfo("llmbar-adversarial", "LLMBar Adversarial", "pairwise", 319, "MIT", _ADVERSARIAL,
            _llmbar),
    SetInfo("llmbar", "LLMBar Natural and Adversarial", "pairwise", 419, "MIT",
            _NATURAL + _ADVERSARIAL, _llmbar),
    SetInfo("pandalm", "PandaLM test set", "pairwise", 999, "Apache-2.0",
            ("pandalm/data/testset-v1.json.gz",), _pandalm),
    SetInfo("hhh", "HHH alignment", "pairwise", 221, "Apache-2.0",
            ("prometheus-eval/eval/benchmark/data/hhh_alignment_eval.json.gz",), _hhh),
    SetInfo("halueval", "HaluEval general", "binary", 4507, "MIT",
            ("halueval/data/general_data.json.gz",), _halueval),
    SetInfo("dices-expert", "DICES-350 expert safety", "binary", 350, "CC-BY-4.0",
            ("judge-bench/data/dices/dices_350_expert.json.gz",), _judge_bench_binary),
    SetInfo("inferential-strategies", "Inferential strategies", "binary", 300, "CC-BY-4.0",
            ("judge-bench/data/inferential-strategies/inferential_strategies.json.gz",),
            _judge_bench_binary),
    SetInfo("topical-chat", "Topical-Chat", "score", 360, "MIT",
            ("unieval/reproduce/data/dialogue/topical_chat.json.gz",), _unieval,
            ("overall", "understandability", "naturalness", "coherence", "engagingness",
             "groundedness")),
    SetInfo("qags-cnndm", "QAGS CNN/DailyMail", "score", 235, "MIT",
            ("unieval/reproduce/data/fact/qags_cnndm.json.gz",), _unieval, ("consistency",)),
    SetInfo("qags-xsum", "QAGS XSum", "score", 239, "MIT",
            ("unieval/reproduce/data/fact/qags_xsum.json.gz",), _unieval, ("consistency",)),
    SetInfo("newsroom", "Newsroom summaries", "score", 420, "Apache-2.0",
            ("judge-bench/data/newsroom/newsroom.json.gz",), _newsroom,
            ("Coherence", "Fluency", "Informativeness", "Relevance")),
    SetInfo("roscoe", "ROSCOE reasoning chains", "ordinal", 756, "MIT", _ROSCOE, _roscoe,
            ("Overall Quality", "Coherency")),
)}


def load_set(name: str, *, metric: str | None = None, limit: int | None = None) -> LabelledSet:
    """A built-in set by name (``metric`` picks one of the human ratings a set offers;
    ``limit`` keeps the first N items, in file order)."""
    info = SETS.get(name)
    if info is None:
        raise CalibrationDataError(f"unknown calibration set {name!r}; known: "
                                   f"{', '.join(SETS)} (or give a labelled JSONL/CSV file)")
    if metric is not None and metric not in info.metrics:
        offered = ", ".join(info.metrics) if info.metrics else "none (it has one label)"
        raise CalibrationDataError(f"set {name!r} has no rating {metric!r}; it offers: "
                                   f"{offered}")
    loaded = info.load(info, metric)
    _unique_ids(loaded.items)
    if limit is not None:
        if limit < 1:
            raise CalibrationDataError(f"limit {limit}: expected at least 1 item")
        loaded.items = loaded.items[:limit]
    return loaded


def _unique_ids(items: list[LabelledItem]) -> None:
    """Case ids must be unique: a record whose own id is empty or repeats an earlier one
    gets its position in the file instead (HaluEval has such a record)."""
    seen: set[str] = set()
    for item in items:
        if item.id in seen or item.id.endswith("-"):
            position = f"line{item.line}" if item.line is not None else f"record{item.record}"
            item.id = f"{item.id.rstrip('-')}-{position}"
        seen.add(item.id)
