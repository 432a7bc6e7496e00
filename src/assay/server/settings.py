"""How a server is configured, and the rules that decide when it needs a token, which names
it answers to, and what a run started over the API may choose."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import ConfigError

TOKEN_VARIABLE = "ASSAY_SERVER_TOKEN"
MAX_BODY_BYTES = 1 << 20
"""The largest request body accepted (a run request is a few hundred bytes)."""

MAX_TRACE_BYTES = 16 << 20
"""The largest OTLP export accepted at ``/v1/traces`` (compressed, and again once
decompressed): an exporter's batch of 512 spans with long prompts fits."""

BODY_IDLE_SECONDS = 30.0
"""How long a request body may go without a byte before the request is answered 408: a
client that never finishes sending (or a Content-Length that promises more than comes) holds
a connection and a handler for no longer than this."""

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""The names a server without a token answers to, besides the address it is bound to."""


def is_loopback(host: str) -> bool:
    """True for a host that only this machine can reach."""
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_key(name: str) -> str:
    """A host name as the Host allow-list compares it: an IP address in its one canonical
    form (``[0:0::1]`` and ``::1`` alike), any other name lower-cased."""
    bare = name.strip().strip("[]")
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return bare.lower()


def default_judge_model() -> str:
    """The judge a run uses when nothing names one: ``$ASSAY_JUDGE_MODEL`` or assay's
    default, as for ``assay run``."""
    from assay.types.engine_config import DEFAULT_JUDGE_MODEL

    return os.environ.get("ASSAY_JUDGE_MODEL", "").strip() or DEFAULT_JUDGE_MODEL


@dataclass
class WatchSettings:
    """An online evaluation the server runs over the traces it receives (``--watch``)."""

    suite: Path | None = None
    """The suite whose evaluators judge the traces (``--watch SUITE``)."""
    judges: list[str] = field(default_factory=list)
    name: str = "serve"
    rate: float = 1.0
    max_cost_per_hour: float | None = None
    interval_s: float = 30.0
    settle_s: float = 5.0
    period: str = "hour"


@dataclass
class ServerSettings:
    """What one server serves: a store, who may read it, which suites it may run, and which
    targets and judge models a run started over the API may name."""

    store_url: str
    token: str | None = None
    host: str = "127.0.0.1"
    suite_roots: list[Path] = field(default_factory=lambda: [Path.cwd()])
    max_body_bytes: int = MAX_BODY_BYTES
    max_trace_bytes: int = MAX_TRACE_BYTES
    """The largest OTLP export ``POST /v1/traces`` takes (``--max-trace-bytes``)."""
    body_idle_s: float = BODY_IDLE_SECONDS
    """How long a request body may go without a byte before it is refused (408)."""
    allow_runs: bool = True
    allowed_judge_models: list[str] = field(default_factory=list)
    """Judge models a run request may name (``--allow-judge-model``), besides the default."""
    default_judge: str = field(default_factory=default_judge_model)
    targets_file: Path | None = None
    """The targets file of runs started over the API (``--targets``); None: the one found
    above each suite, as ``assay run`` finds it."""
    watch: WatchSettings | None = None
    """An online evaluation of the received traces, run while the server runs."""

    @classmethod
    def from_environment(cls, store_url: str, host: str = "127.0.0.1",
                         suite_roots: list[Path] | None = None,
                         allow_runs: bool = True,
                         allowed_judge_models: list[str] | None = None,
                         targets_file: Path | None = None,
                         max_trace_bytes: int = MAX_TRACE_BYTES) -> ServerSettings:
        """Settings with the token from ``$ASSAY_SERVER_TOKEN`` (never from the command line,
        where other users of the machine could read it); refuses a server reachable from other
        machines without one."""
        token = os.environ.get(TOKEN_VARIABLE, "").strip() or None
        settings = cls(store_url=store_url, token=token, host=host,
                       suite_roots=suite_roots or [Path.cwd()], allow_runs=allow_runs,
                       allowed_judge_models=list(allowed_judge_models or []),
                       targets_file=targets_file, max_trace_bytes=max_trace_bytes)
        settings.check()
        return settings

    @property
    def judge_models(self) -> frozenset[str]:
        """Every judge model a run request may name: the allow-list and the default."""
        return frozenset({*self.allowed_judge_models, self.default_judge})

    @property
    def allowed_hosts(self) -> frozenset[str] | None:
        """The Host names answered (see :func:`host_key`); None with a token (any name).

        Without a token the server trusts loopback, so it answers only requests addressed to
        a loopback name: a page elsewhere that resolves its own name to 127.0.0.1 (DNS
        rebinding) would otherwise read it. The address it is bound to (127.0.0.2, say) is
        one of them, so that every loopback address it may be bound to serves."""
        if self.token is not None:
            return None
        return frozenset({*LOOPBACK_NAMES, host_key(self.host)})

    def check(self) -> None:
        if self.token is None and not is_loopback(self.host):
            raise ConfigError(
                f"serving on {self.host!r} makes the runs readable from other machines: set "
                f"{TOKEN_VARIABLE} to a secret token that clients send as 'Authorization: "
                "Bearer TOKEN', or serve on 127.0.0.1", code="token_required")
        if self.token is not None and len(self.token) < 16:
            raise ConfigError(f"{TOKEN_VARIABLE} is too short to be a secret: use at least 16 "
                              "random characters (python -c 'import secrets; "
                              "print(secrets.token_urlsafe())')", code="token_too_short")
        if not 1024 <= self.max_trace_bytes <= 1 << 30:
            raise ConfigError(f"--max-trace-bytes {self.max_trace_bytes}: expected between "
                              "1024 and 1073741824 bytes", code="invalid_option")
        self._check_judge_models()
        if self.targets_file is not None and not self.targets_file.is_file():
            raise ConfigError(f"--targets {self.targets_file}: no such file",
                              code="invalid_targets")

    def _check_judge_models(self) -> None:
        """Each allowed judge model parses, so a typo is refused when the server starts, not
        when a run asks for it."""
        from assay.llm.models import display_model, parse_model

        for model in self.allowed_judge_models:
            try:
                parse_model(model)
            except ConfigError as exc:
                raise ConfigError(f"--allow-judge-model {display_model(model)!r}: "
                                  f"{exc.message}", code=exc.code) from None
