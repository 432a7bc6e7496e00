"""AgentV 4's ``webhook`` assertion: a service of yours judges the answer over HTTP.

The case is POSTed as ``{"output": answer text, "context": {...}}`` (the ``context`` a Python
assertion gets, in snake_case; see :mod:`assay.judges.code.inline`) to the URL in ``value``; the
service answers as an assertion does: ``true``/``false``, a number in [0, 1], or
``{pass, score, reason, details}``.

The request goes through assay's HTTP session (:func:`assay.llm.providers.http_session.
post_json_value`): bounded in time and size, a redirect followed within the URL's origin only,
credentials in the URL sent as a header and never shown. Where AgentV scores a service that
fails or answers nonsense 0, here it is an error score saying what happened: a judge that did
not judge is not a failing answer.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator

from assay._util.limits import TimeoutS
from assay._util.redact import redact_url, url_secrets
from assay._util.redact import register as register_secrets
from assay.errors import EvaluationError
from assay.judges.base import EvalContext, Evaluator
from assay.judges.code.inline import ANY_SCORE, assertion_context, scored
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

MAX_ANSWER_BYTES = 1 << 20
"""The most a webhook's answer may hold: a verdict, not a document."""


@register
class Webhook(Evaluator):
    """POSTs the answer and the case to ``value`` (a URL); the answer is the score."""

    type = "webhook"
    value: str = Field(validation_alias=AliasChoices("value", "url"),
                       description="the URL to POST to, http:// or https://")
    threshold: float = Field(default=ANY_SCORE, ge=0, le=1, description="a score at or "
                             "above this passes [default: any score above 0, as in AgentV]")
    config: dict[str, Any] = Field(default_factory=dict,
                                   description="sent to the service as context.config")
    timeout_s: TimeoutS = 60.0

    @field_validator("value")
    @classmethod
    def _a_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{redact_url(value)!r} is not an http:// or https:// URL")
        register_secrets(url_secrets(value))  # a password in the URL is hidden wherever it is shown
        return value

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        from assay.llm.providers.http_session import post_json_value
        from assay.llm.types import ProviderError

        what = f"webhook {self.name!r}"
        body: dict[str, object] = {"output": execution.output_text(),
                "context": assertion_context(case, execution, self.config)}
        try:
            answer = await post_json_value(self.value, body, {
                "Content-Type": "application/json"}, self.timeout_s, MAX_ANSWER_BYTES)
        except ProviderError as exc:
            raise EvaluationError("webhook_failed", f"{what}: {exc}") from None
        return scored(self.name, answer, self.threshold, what,
                      {"url": redact_url(self.value)})
