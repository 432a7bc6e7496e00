"""MLflow 3's scorer names for assay's agent judges, so ``mlflow.genai`` code reads the same::

    from assay.integrations.mlflow_scorers import Correctness, Guidelines, Safety
    assay.evaluate(data, scorers=[Correctness(), Guidelines(name="tone", guidelines=[...]),
                                  Safety()], naming="mlflow")

    Correctness(model="openai:gpt-4o-mini")(
        inputs={"question": "Capital of France?"}, outputs="Paris",
        expectations={"expected_response": "Paris"})       # Feedback(value="yes", ...)

Each returns a ready evaluator (see :mod:`assay.judges.agent.builtin`); keyword options are the
evaluator's fields (``model=``, ``aggregations=``...). Every one, and every judge of
:func:`make_judge`, can also be called as MLflow calls a scorer: with ``inputs``,
``outputs``, ``expectations`` and ``trace`` (the row's columns, read as a data row is read)
or, for the conversation judges, ``session`` (the conversation's messages, or its traces in
order), returning a :class:`~assay.Feedback`: ``value`` as MLflow gives it ("yes"/"no", a
bool, a number or a label), ``rationale``, and ``error`` with ``error_code`` when the judge
could not answer. A judge whose inputs the call lacks is not applicable: value None, no
error, the reason in ``metadata["not_applicable"]`` (MLflow raises instead). A per-chunk
judge returns one Feedback per chunk and one for the precision, as MLflow's
``RetrievalRelevance`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from assay.errors import ConfigError
from assay.judges.agent import builtin as judges
from assay.judges.agent import session as sessions
from assay.judges.agent.custom import InstructionsJudge
from assay.judges.agent.custom import make_judge as _make_judge
from assay.judges.agent.inputs import request_text
from assay.judges.base import Evaluator
from assay.judges.code.python_scorer import scorer
from assay.judges.feedback import Feedback
from assay.run.policies.databricks.catalog import chunks, info_for, native, precision
from assay.run.score import score as score_one
from assay.suites.dataset import suite_from_rows
from assay.types.case import Case
from assay.types.execution import ConversationInfo, Execution
from assay.types.messages import Message
from assay.types.score import Score
from assay.types.spans import root_span, span_input

E = TypeVar("E", bound=Evaluator)
ROW_KEYS = ("inputs", "outputs", "expectations", "trace")


class DirectCall:
    """MLflow's ``scorer(inputs=..., outputs=..., expectations=..., trace=...)`` (or
    ``session=``) on an assay judge: one case judged on its own, as a Feedback."""

    def __call__(self, *, inputs: Any = None, outputs: Any = None,
                 expectations: Mapping[str, Any] | None = None, trace: Any = None,
                 session: Any = None, judge_model: str | None = None
                 ) -> Feedback | list[Feedback]:
        assert isinstance(self, Evaluator)
        if session is not None:
            case, execution = conversation_case(session, expectations)
        else:
            case, execution = row_case({"inputs": inputs, "outputs": outputs,
                                        "expectations": expectations, "trace": trace})
        return feedback_of(self, score_one(self, case, execution, judge_model=judge_model))


@cache
def callable_class(base: type[E]) -> type[E]:
    """``base`` with :class:`DirectCall`: the same judge (its type, fields, key and name),
    callable as an MLflow scorer."""
    made: type[E] = type(base.__name__, (DirectCall, base), {
        "__module__": base.__module__, "__qualname__": base.__qualname__,
        "__doc__": base.__doc__})
    return made


def _made(base: type[E], **options: Any) -> E:
    return callable_class(base)(**options)


def row_case(row: dict[str, Any]) -> tuple[Case, Execution]:
    """MLflow's scorer arguments as one case and its execution, read as a data row is read
    (the same column rules, the same errors naming what is wrong)."""
    given = {k: v for k, v in row.items() if v is not None}
    if not given:
        raise ConfigError("nothing to judge: give inputs, outputs, expectations or trace",
                          code="invalid_data")
    (item,) = suite_from_rows([given], name="scorer call").cases
    execution = item.execution or Execution(input=item.case.input)
    return item.case, execution


def conversation_case(session: Any, expectations: Mapping[str, Any] | None
                      ) -> tuple[Case, Execution]:
    """A session (chat messages, or the session's traces, each one turn: its input the
    user's message, its output the assistant's) as one played conversation."""
    if not isinstance(session, list) or not session:
        raise ConfigError("session must be a non-empty list of chat messages or of traces",
                          code="invalid_data")
    messages: list[Message] = []
    for index, item in enumerate(session):
        if isinstance(item, Message) or (isinstance(item, Mapping) and "role" in item):
            messages.append(item if isinstance(item, Message) else Message.model_validate(item))
            continue
        _, execution = row_case({"trace": item})
        root = root_span(execution.trace)
        asked = span_input(root) if root is not None else None
        user = request_text(Case(id="turn", input=asked)) if isinstance(asked, str | dict) \
            else None
        if user is None:
            raise ConfigError(f"session[{index}]: neither a chat message nor a trace with an "
                              "input", code="invalid_data")
        messages.append(Message(role="user", content=user))
        if execution.output is not None:
            messages.append(Message(role="assistant", content=execution.output_text()))
    row: dict[str, Any] = {"inputs": "session"}
    if expectations:
        row["expectations"] = dict(expectations)
    case, _ = row_case(row)
    return case, Execution(input=case.input, messages=messages,
                           conversation=ConversationInfo(stop_reason="user_ended"))


def feedback_of(evaluator: Evaluator, score: Score) -> Feedback | list[Feedback]:
    """A score as MLflow's Feedback (see the module docstring)."""
    name = info_for(evaluator.spec()).mlflow_name
    entries = chunks(score)
    if entries:
        found = [Feedback(value=e.get("rating"), rationale=e.get("rationale"), name=name,
                          error=(e.get("error") or {}).get("message"),
                          error_code=(e.get("error") or {}).get("code"),
                          metadata={"chunk_index": e.get("index"),
                                    "doc_uri": e.get("doc_uri")}) for e in entries]
        return [*found, Feedback(value=precision(score), name=f"{name}/precision")]
    if score.error is not None:
        return Feedback(value=None, rationale=score.rationale, name=name,
                        error=score.error.message, error_code=score.error.code)
    metadata: dict[str, Any] = {}
    if score.skipped is not None and native(score) is None:
        metadata["not_applicable"] = score.skipped
    return Feedback(value=native(score), rationale=score.rationale or None, name=name,
                    metadata=metadata)


def Correctness(**options: Any) -> judges.Correctness:
    """Is the response supported by ``expected_response`` / ``expected_facts``?"""
    return _made(judges.Correctness, **options)


def RelevanceToQuery(**options: Any) -> judges.RelevanceToQuery:
    """Does the response address the request?"""
    return _made(judges.RelevanceToQuery, **options)


def RetrievalGroundedness(**options: Any) -> judges.Groundedness:
    """Is the response supported by the retrieved context?"""
    return _made(judges.Groundedness, **options)


def RetrievalRelevance(**options: Any) -> judges.ChunkRelevance:
    """Is each retrieved chunk relevant (precision over rated chunks)?"""
    return _made(judges.ChunkRelevance, **options)


def RetrievalSufficiency(**options: Any) -> judges.ContextSufficiency:
    """Does the retrieved context hold what the expected answer needs?"""
    return _made(judges.ContextSufficiency, **options)


def Safety(**options: Any) -> judges.Safety:
    """Is the response free of harmful content (yes = safe)?"""
    return _made(judges.Safety, **options)


def Guidelines(name: str = "guidelines",
               guidelines: str | list[str] | dict[str, list[str]] | None = None,
               **options: Any) -> judges.GlobalGuidelineAdherence:
    """Does the response follow these guidelines (the same for every case)?"""
    rules = [guidelines] if isinstance(guidelines, str) else guidelines or []
    return _made(judges.GlobalGuidelineAdherence, name=name, guidelines=rules, **options)


def ExpectationsGuidelines(**options: Any) -> judges.GuidelineAdherence:
    """Does the response follow each case's own guidelines (``expectations["guidelines"]``)?"""
    return _made(judges.GuidelineAdherence, **options)


def ConversationCompleteness(**options: Any) -> sessions.ConversationCompleteness:
    """Did the assistant address every request the user made in the conversation?"""
    return _made(sessions.ConversationCompleteness, **options)


def KnowledgeRetention(**options: Any) -> sessions.KnowledgeRetention:
    """Does every reply keep what the user said earlier in the conversation?"""
    return _made(sessions.KnowledgeRetention, **options)


def UserFrustration(**options: Any) -> sessions.UserFrustration:
    """Was the user frustrated (none, resolved, unresolved)?"""
    return _made(sessions.UserFrustration, **options)


def make_judge(name: str, instructions: str, model: str | None = None,
               description: str | None = None, feedback_value_type: Any = None,
               **options: Any) -> InstructionsJudge:
    """MLflow's ``make_judge`` (see :func:`assay.judges.agent.custom.make_judge`), callable
    as a scorer."""
    made = _make_judge(name, instructions, model=model, description=description,
                       feedback_value_type=feedback_value_type, **options)
    return callable_class(InstructionsJudge).model_validate(
        made.model_dump(exclude_unset=True))


__all__ = ["ConversationCompleteness", "Correctness", "DirectCall", "ExpectationsGuidelines",
           "Feedback", "Guidelines", "KnowledgeRetention", "RelevanceToQuery",
           "RetrievalGroundedness", "RetrievalRelevance", "RetrievalSufficiency", "Safety",
           "UserFrustration", "feedback_of", "make_judge", "scorer"]
