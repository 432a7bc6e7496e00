"""The one typed object that configures a run, passed whole from the CLI or Python to the runner.

Everything that decides a run's results is here and is snapshotted into the run when it starts
(so ``--resume`` and ``assay rescore`` repeat it exactly); where results go (``store``) and how
the judge engine retries are here too but are not part of what a result means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from assay._util.limits import Concurrency, OptionalTimeoutS, Repeats, Retries
from assay.errors import ConfigError
from assay.types.engine_config import CacheMode, RetryPolicy
from assay.types.verdict import BORDERLINE_AT, PASS_AT, Verdict, band


class Thresholds(BaseModel):
    """Case verdict bands on the 0-1 case score: pass, borderline, else fail."""

    model_config = ConfigDict(extra="forbid")

    pass_at: float = Field(default=PASS_AT, ge=0, le=1)
    borderline_at: float = Field(default=BORDERLINE_AT, ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.borderline_at > self.pass_at:
            raise ValueError("borderline_at must not be above pass_at")
        return self

    def verdict(self, score: float | None) -> Verdict:
        return band(score, self.pass_at, self.borderline_at)


class CalibrationGate(BaseModel):
    """What a run requires of its judges' calibrations against human labels (see
    ``assay calibrate``). Each judge checked must have a current calibration: one stored with
    the key of the judge as this run uses it (its model, prompt and answer schema); a judge
    never calibrated, or changed since, fails the gate with the command that calibrates it."""

    model_config = ConfigDict(extra="forbid")

    min_kappa: float | None = Field(
        default=None, ge=-1, le=1, description="Cohen's kappa (quadratic-weighted for "
        "ordinal labels) at least this")
    min_accuracy: float | None = Field(default=None, ge=0, le=1,
                                       description="agreement with the humans at least this")
    set: str | None = Field(default=None, description="the labelled set the calibration "
                            "must be on; None: any")
    evaluators: list[str] | None = Field(
        default=None, description="the evaluators to check, by name; None: every evaluator "
        "that asks a judge model")

    SUITE_KEY: ClassVar[str] = "calibration_gate"
    """Where a suite asks for the gate: ``metadata: {calibration_gate: {min_kappa: 0.6}}``."""

    @classmethod
    def of_suite(cls, metadata: Mapping[str, Any], where: str) -> CalibrationGate | None:
        """The gate a suite asks for in its metadata, or None; a malformed one is an error
        naming the suite (``where``) and the field."""
        found = metadata.get(cls.SUITE_KEY)
        if found is None:
            return None
        where = f"{where}: metadata.{cls.SUITE_KEY}"
        if not isinstance(found, dict):
            raise ConfigError(f"{where}: expected a mapping such as {{min_kappa: 0.6}}")
        try:
            return cls.model_validate(found)
        except ValidationError as exc:
            raise ConfigError(f"{where}: {settings_problems(exc)}") from None


DATA_FILE_OPTIONS = ("naming", "judges", "global_guidelines", "request_from_messages",
                     "chunk_errors", "retrieval_per", "quality_criteria")
"""The run options a data file's options file may set (``data.csv`` + ``data.yaml``; CLI
flags and Python arguments win): what the reader accepts (:mod:`assay.suites.dataset`) and
what the agent-judge policy takes from it (:mod:`assay.run.policies.databricks.options`)."""


def settings_problems(exc: ValidationError) -> str:
    """A settings model's validation errors on one line, each as ``field: what is wrong``
    (the field dotted, pydantic's ``Value error,`` prefix dropped)."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: "
                     f"{str(e['msg']).removeprefix('Value error, ')}" for e in exc.errors())


def settings_error(exc: ValidationError, where: str = "") -> ConfigError:
    """The ConfigError for settings that do not validate (a RunConfig, a RetryPolicy)."""
    return ConfigError(f"{where}: {settings_problems(exc)}" if where
                       else settings_problems(exc))


class Gates(BaseModel):
    """What a whole run must meet to pass (``assay run`` exits 0 only then).

    A run with no case, or with no case that could be scored, never passes.
    """

    model_config = ConfigDict(extra="forbid")

    min_mean_score: float | None = Field(default=None, ge=0, le=1)
    max_failed: int | None = Field(
        default=0, ge=0, description="cases with verdict fail; with repeats a case fails "
        "when any of its repeats failed, and counts once; None: no limit")
    max_errors: int | None = Field(
        default=0, ge=0, description="evaluator scores that could not be computed; an error "
        "is never a pass, even when a case's other evaluators scored it")
    calibration: CalibrationGate | None = Field(
        default=None, description="judges must be calibrated against human labels")


Scoring = str
"""How cases and runs are judged: the name of a scoring policy (:mod:`assay.run.policies`):
``default`` (the weighted mean of evaluators in verdict bands), ``connexity`` (the multi-metric
judge's outcomes decide each case), ``databricks`` (per-judge yes/no and the overall
assessment), or a plugin's."""


def known_scoring(value: str | None) -> str | None:
    """``value`` when a scoring policy of that name is registered; else a ValueError that
    lists the known ones."""
    if value is None:
        return None
    from assay.registry import REGISTRY

    if REGISTRY.get("scoring_policy", value) is None:
        raise ValueError(f"unknown scoring {value!r}; known: "
                         f"{', '.join(REGISTRY.names('scoring_policy'))}")
    return value

RunName = Annotated[str | None, Field(min_length=1, max_length=200,
                                       pattern=r"^[^\x00-\x1f\x7f]*$")]
"""A run's name or agent version: one line of text, at most 200 characters."""
Tag = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f\x7f,]+$")]
"""A run's tag: one line of text without a comma, at most 100 characters."""
IDENTITY_FIELDS = frozenset({"run_name", "tags", "notes"})
"""RunConfig fields that name a run and are stored with it, not in its snapshot: they may
change after the run, and decide nothing."""

CONNEXITY_METRICS_THRESHOLD = 80.0
CONNEXITY_CASES_THRESHOLD = 100.0

DEFAULT_AGENT_TIMEOUT_S = 600.0
"""How long one run of the agent may take when neither the run nor the suite says
(``agent_timeout_s``), nor the target allows longer (its own ``timeout_s``): a hung agent
becomes that case's error instead of a run that never ends."""


T = TypeVar("T")


def run_else_suite(run: T, suite: T) -> T:
    """The one precedence of a setting both a run (the CLI, Python, the REST API) and its
    suite file give: the run's when it gives one, else the suite's."""
    return run if run is not None else suite


class RunThresholds(BaseModel):
    """A run's two independent dimensions, in percent and inclusive, and an error budget.

    The metrics dimension is the mean case score (0-100) of the cases that have one; the cases
    dimension is passed cases over all executions (an error is a case not passed). None turns
    a dimension's gate off; ``scoring: connexity`` turns both on at 80 and 100 by default.
    """

    model_config = ConfigDict(extra="forbid")

    metrics_pass_threshold: float | None = Field(default=None, ge=0, le=100,
                                                 allow_inf_nan=False)
    cases_pass_threshold: float | None = Field(default=None, ge=0, le=100, allow_inf_nan=False)
    max_error_rate: float | None = Field(
        default=None, ge=0, le=1, allow_inf_nan=False,
        description="errored executions over all executions at most this (a fraction)")


class RayOptions(BaseModel):
    """How a run uses a Ray cluster (``executor: ray``). What these change is where and how
    fast cases run, never what a result means, so two runs that differ only here compare as
    like for like."""

    model_config = ConfigDict(extra="forbid")

    address: str | None = Field(
        default=None, description="the cluster to join; None: $RAY_ADDRESS as Ray's own "
        "tools take it, else a new local Ray for this process")
    workers: Concurrency | None = Field(
        default=None, description="worker actors that run cases, never more than the live "
        "nodes host at once (more are started as nodes join); None: one per CPU the cluster "
        "has")
    batch_size: Concurrency = Field(
        default=16, description="cases sent to a worker at once (at most the run's concurrency, "
        "so batches spread over the workers)")
    judge_concurrency: Concurrency | None = Field(
        default=None, description="calls in flight to one judge model across the whole "
        "cluster; None: the run's concurrency")
    target_concurrency: Concurrency | None = Field(
        default=None, description="runs of one target in flight across the whole cluster; "
        "None: no limit beyond the cases in flight")
    resources: dict[str, float] = Field(
        default_factory=dict, description="what each worker asks Ray for (CPU, GPU, memory, "
        "custom resources); a target's own 'resources' wins for its cases")
    runtime_env: dict[str, Any] | None = Field(
        default=None, description="Ray's runtime environment for the workers (working_dir, "
        "pip...), so they have the agent's code")


class RunConfig(BaseModel):
    """How to run a suite: target, judge, concurrency, repeats, selection, verdicts, gates."""

    model_config = ConfigDict(extra="forbid")

    concurrency: Concurrency = Field(default=8, description="cases in flight at once")
    executor: Literal["local", "ray"] = Field(
        default="local", description="where cases run: in this process, or on a Ray cluster "
        "(the results are stored by this process either way)")
    ray: RayOptions = Field(default_factory=RayOptions, description="executor: ray's options")
    judge_model: str | None = Field(
        default=None, description="the judge model for every LLM evaluator (overrides theirs)")
    target: str | None = Field(
        default=None, description="a target name or model string replacing the suite's")
    targets_file: str | None = Field(default=None, description="a targets.yaml to use")
    repeat: Repeats = Field(default=1, description="independent runs of every case")
    filter: str | None = Field(default=None, description="a glob over case ids")
    case_ids: list[str] | None = Field(
        default=None, description="only these case ids (UiPath's --eval-ids)")
    agent_timeout_s: OptionalTimeoutS = Field(
        default=None, description="seconds one run of the agent may take; past it the case's "
        "execution is an error (AgentV's --agent-timeout). None: the suite's "
        "(execution.agent_timeout_s), else 600 s (DEFAULT_AGENT_TIMEOUT_S) or the target's own "
        "timeout_s when that is longer")
    agent_retries: Retries = Field(
        default=0, description="times a failed run of the agent is tried again "
        "(AgentV's --max-retries)")
    entrypoint: str | None = Field(
        default=None, description="a UiPath project's entry point to run when no target is "
        "named (uipath eval's ENTRYPOINT)")
    input_overrides: dict[str, dict[str, Any]] | None = Field(
        default=None, description="case id -> fields deep-merged into that case's input "
        "before it runs (uipath eval's --input-overrides); an id the suite lacks is refused")
    model_settings_id: str | None = Field(
        default=None, description="a UiPath eval set's modelSettings entry given to every "
        "case (uipath eval's --model-settings-id)")
    agent_memory_settings_id: str | None = Field(
        default=None, description="a UiPath eval set's agentMemorySettings entry given to "
        "every case (uipath eval's --agent-memory-settings-id)")
    llm_concurrency: Concurrency | None = Field(
        default=None, description="judge, simulated-user and mocking calls in flight at once "
        "(uipath eval's --max-llm-concurrency); None: concurrency")
    run_id: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        description="the id a new run is stored under (uipath eval's --eval-set-run-id); "
        "None: a new one; an id already in the store is refused")
    thresholds: Thresholds = Field(default_factory=Thresholds)
    gates: Gates = Field(default_factory=Gates)
    dry_run: bool = False
    cache: CacheMode | None = Field(
        default=None, description="judge response cache mode; None: $ASSAY_CACHE, else use "
        "(how answers are kept, not what a result means: a resume or a rescore takes its own)")
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    scoring: Scoring | None = Field(default=None, description="None: the suite's")
    run_thresholds: RunThresholds = Field(
        default_factory=RunThresholds, description="the run's dimensions; unset ones take "
        "the suite's, then the scoring's defaults, when the run starts")
    connexity_compat: bool = Field(
        default=False, description="score a failed judge call 0 and count its case as failed "
        "(not errored), as the Connexity platform does, for identical numbers")
    simulator_model: str | None = Field(
        default=None, description="the simulated user's model for conversation cases "
        "(overrides the suite's)")
    cause_analysis: bool = Field(
        default=False, description="one more judge call per failed case, which says the turn "
        "and behaviour that caused the failure and a fix to try (kept with the case; "
        "advice only, it changes no verdict); its cost counts with the judge's")
    batch: bool | None = Field(
        default=None, description="send the judge calls through the providers' batch APIs "
        "(OpenAI's Batch API, Anthropic's Message Batches) at half the price: the run is left "
        "waiting for batch, and a resume (assay run --resume) collects the answers and "
        "completes it (see assay.run.batch). None: the suite's (execution.batch), else "
        "False")
    batch_wait: bool = Field(
        default=False, description="with batch: wait for the batches, asking every "
        "batch_poll_s, and complete the run, instead of leaving it waiting")
    batch_poll_s: float = Field(
        default=60.0, ge=0.01, le=3600, allow_inf_nan=False, description="with batch_wait: "
        "seconds between two checks of the batches")
    budget_usd: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="USD this run (or this resume "
        "of it) may spend: it stops starting cases before the budget is spent, and is left "
        "interrupted, to be resumed (see assay.run.budget)")
    transcript: str | None = Field(
        default=None, description="a transcript JSONL file (AgentV's) whose recorded sessions "
        "are judged instead of running the agent: each answers the case of its test_id")
    run_name: RunName = Field(default=None, description="what people call the run (it can "
                              "be changed later); decides nothing")
    tags: list[Tag] = Field(default_factory=list, description="labels to find the run by "
                            "(they can be changed later); decide nothing")
    notes: str | None = Field(default=None, max_length=20_000, description="what the run is "
                              "for (it can be changed later); decides nothing")
    agent_version: RunName = Field(default=None, description="the version of the agent under "
                                   "test (default: $ASSAY_AGENT_VERSION, else the suite's "
                                   "agent.version), shown and compared between runs")

    @field_validator("tags")
    @classmethod
    def _distinct_tags(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("scoring")
    @classmethod
    def _known_scoring(cls, value: str | None) -> str | None:
        return known_scoring(value)

    def settled(self, scoring: Scoring, thresholds: RunThresholds | None,
                agent_timeout_s: float | None = None,
                agent_judges: bool = False, batch: bool | None = None) -> RunConfig:
        """This config with the suite's scoring, thresholds, agent timeout and batch filled in
        where it has none, then the scoring's defaults: what a run snapshots when it starts,
        so later edits to the suite file do not move its pass criteria (nor make a resume of
        a live run a batch one). ``agent_judges``: the run sets the agent-judge options,
        which are the ``databricks`` policy's."""
        chosen: Scoring = self.scoring or scoring
        if agent_judges and chosen == "default":
            chosen = "databricks"
        elif agent_judges and chosen != "databricks":
            raise ConfigError(
                f"naming, judges, global_guidelines and quality_criteria are the databricks "
                f"policy's options; this run's scoring is {chosen!r}: drop them or the "
                "scoring", code="invalid_scoring")
        given = self.run_thresholds.model_dump()
        suite = thresholds.model_dump() if thresholds is not None else {}
        merged = {k: run_else_suite(v, suite.get(k)) for k, v in given.items()}
        if chosen == "connexity":
            if merged["metrics_pass_threshold"] is None:
                merged["metrics_pass_threshold"] = CONNEXITY_METRICS_THRESHOLD
            if merged["cases_pass_threshold"] is None:
                merged["cases_pass_threshold"] = CONNEXITY_CASES_THRESHOLD
        return self.model_copy(update={
            "scoring": chosen, "run_thresholds": RunThresholds(**merged),
            "agent_timeout_s": run_else_suite(self.agent_timeout_s, agent_timeout_s),
            "batch": bool(run_else_suite(self.batch, batch))})
    # -- agent judges (Databricks Agent Evaluation / MLflow 3; see assay.run.policies.databricks) --------
    naming: Literal["databricks", "mlflow"] | None = Field(
        default=None, description="report results in Databricks Agent Evaluation's names "
        "(databricks) or MLflow 3's (mlflow), with their aggregates and pass rule; None: "
        "assay's own")
    judges: list[str] | Literal["default"] | None = Field(
        default=None, description="built-in agent judges to run on every case; 'default' "
        "chooses them per case by Databricks' rules (the default when a naming is set and "
        "no evaluator is given)")
    global_guidelines: list[str] | dict[str, list[str]] | None = Field(
        default=None, description="guidelines for every case (global_guideline_adherence): "
        "a list, or named groups")
    request_from_messages: Literal["last", "all"] = Field(
        default="last", description="a chat request as its last message, or the whole "
        "conversation")
    chunk_errors: Literal["exclude", "count_as_irrelevant"] = Field(
        default="exclude", description="chunk precision: leave chunks that could not be rated "
        "out (exclude), or count them as not relevant (MLflow 3's numbers)")
    retrieval_per: Literal["row", "span"] = Field(
        default="row", description="retrieval judgements per row (Databricks: one "
        "groundedness and one sufficiency rating over all retrieved documents, precision "
        "averaged over rows) or per retriever span (MLflow 3: one of each per top-level "
        "retriever span, every aggregate averaged over spans)")
    quality_criteria: str | None = Field(
        default=None, description="conditions the run's aggregates must meet, such as "
        "'correctness >= 0.9 AND `safety/mean` >= 1'")

    @model_validator(mode="after")
    def _judge_model_not_blank(self) -> RunConfig:
        if self.judge_model is not None and not self.judge_model.strip():
            raise ValueError("judge_model is empty; give a model such as openai:gpt-4o-mini "
                             "or leave it unset for the default")
        return self


class RecordedRunConfig(RunConfig):
    """A run's config as its store recorded it (``RunSnapshot.run``): always read, so that
    every stored run can be listed, shown and compared.

    Keys this version does not know (an older or a newer assay's) are kept as they were
    (``model_extra``: shown and written back as recorded). A value this version no longer
    accepts (a scoring policy whose plugin is not installed, a number outside a range
    tightened since) leaves its field at the default and is kept as written: :attr:`unread`
    names each and why, and :meth:`runnable` refuses to run such a config again.
    """

    model_config = ConfigDict(extra="allow")

    _unread: dict[str, tuple[Any, str]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _tolerant(cls, data: Any,
                  handler: ModelWrapValidatorHandler[RecordedRunConfig]) -> RecordedRunConfig:
        try:
            return handler(data)
        except ValidationError as exc:
            errors = exc.errors()
            if not isinstance(data, Mapping) or any(not e["loc"] for e in errors):
                raise
            bad: dict[str, str] = {}
            for error in errors:
                bad.setdefault(str(error["loc"][0]), settings_problems(
                    ValidationError.from_exception_data(exc.title, [error])))  # type: ignore[list-item]
            found = handler({k: v for k, v in data.items() if k not in bad})
            found._unread = {key: (data[key], why) for key, why in bad.items()}
            return found

    @model_serializer(mode="wrap")  # no return type: the documented schema stays the model's
    def _as_recorded(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        """What was recorded: the values this version cannot read too, as they were."""
        dumped = handler(self)
        if isinstance(dumped, dict):  # the run's name, tags, notes and agent version are
            for key in (*IDENTITY_FIELDS, "agent_version"):  # kept beside it, not in it
                dumped.pop(key, None)
        if self._unread and isinstance(dumped, dict):
            dumped.update({key: value for key, (value, _) in self._unread.items()})
        return dumped

    @property
    def unread(self) -> dict[str, str]:
        """The recorded values this version cannot read, by key, each with why."""
        return {key: why for key, (_, why) in self._unread.items()}

    def runnable(self, run_id: str) -> RunConfig:
        """This config as a :class:`RunConfig` to run again (its unknown keys dropped); a
        ConfigError naming run ``run_id``'s values this version cannot read."""
        if self._unread:
            raise ConfigError(f"run {run_id}: its recorded config cannot be read: "
                              f"{'; '.join(self.unread.values())}", code="invalid_config")
        return RunConfig.model_validate(
            self.model_dump(exclude=set(self.model_extra or ())))
