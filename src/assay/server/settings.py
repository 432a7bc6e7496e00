"""How a server is configured, and the rule that decides when it needs a token."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import ConfigError

TOKEN_VARIABLE = "ASSAY_SERVER_TOKEN"
MAX_BODY_BYTES = 1 << 20
"""The largest request body accepted (a run request is a few hundred bytes)."""

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """True for a host that only this machine can reach."""
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass
class ServerSettings:
    """What one server serves: a store, who may read it, which suites it may run."""

    store_url: str
    token: str | None = None
    host: str = "127.0.0.1"
    suite_roots: list[Path] = field(default_factory=lambda: [Path.cwd()])
    max_body_bytes: int = MAX_BODY_BYTES
    allow_runs: bool = True

    @classmethod
    def from_environment(cls, store_url: str, host: str = "127.0.0.1",
                         suite_roots: list[Path] | None = None,
                         allow_runs: bool = True) -> ServerSettings:
        """Settings with the token from ``$ASSAY_SERVER_TOKEN`` (never from the command line,
        where other users of the machine could read it); refuses a server reachable from other
        machines without one."""
        token = os.environ.get(TOKEN_VARIABLE, "").strip() or None
        settings = cls(store_url=store_url, token=token, host=host,
                       suite_roots=suite_roots or [Path.cwd()], allow_runs=allow_runs)
        settings.check()
        return settings

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
