"""Keeping secrets out of everything assay shows or stores.

Two things leak in practice: credentials written into URLs (``http://user:PASS@host``,
``postgresql://u:pw@db``, ``?api_key=...``) and secret values (API keys, header values,
``${{ VAR }}`` values of a targets file) echoed back in some service's error text. Every URL
that is shown or stored goes through :func:`redact_url`; every error text that comes from
outside goes through :func:`scrub` (or a :class:`Secrets` set's ``scrub``), which replaces each
known secret value by a label saying where it came from and redacts credentials in any URL.
Judges and targets use this one module, so a secret is hidden the same way on both sides.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, unquote, urlsplit, urlunsplit

REDACTED = "***"
"""What stands for a password or a secret query value in a shown URL."""

MIN_SECRET_CHARS = 4
"""Shorter values are not treated as secrets: replacing every ``x`` in a message hides
nothing and makes it unreadable (placeholder keys such as ``x`` or ``no`` are common)."""

_SENSITIVE_PARAM = re.compile(
    r"(?i)^(?:.*[_-])?(?:key|api[_-]?key|token|secret|password|passwd|pwd|sig|signature|"
    r"auth|authorization|credential|credentials|access[_-]?token|code)$")
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^\s/?#@:'\"<>]*)"
    r"(?::(?P<password>[^\s/?#'\"<>]*))?@")
_QUERY_SECRET = re.compile(r"(?P<lead>[?&;](?P<name>[A-Za-z0-9_.\-]+)=)(?P<value>[^&#\s'\"<>]+)")
_SECRET_ENV_NAME = re.compile(r"(?:^|_)(?:API_KEY|APIKEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)$")


def redact_url(url: str) -> str:
    """``url`` with its password (or a bare user token) and secret query values hidden.

    ``http://user:PASS@host/v1#m`` becomes ``http://user:***@host/v1#m``;
    ``https://TOKEN@host`` becomes ``https://***@host``; ``?api_key=K`` becomes
    ``?api_key=***``. Text that is not a URL comes back unchanged.
    """
    return redact_urls(url)


def redact_urls(text: str) -> str:
    """``text`` with :func:`redact_url` applied to every URL in it."""
    if "://" in text:
        text = _URL_CREDENTIALS.sub(_hide_userinfo, text)
    if "=" in text and ("?" in text or "&" in text or ";" in text):
        text = _QUERY_SECRET.sub(_hide_param, text)
    return text


def _hide_userinfo(match: re.Match[str]) -> str:
    user, password = match.group("user"), match.group("password")
    if password is None:  # a bare token (https://TOKEN@host) or a user name alone
        return f"{match.group('scheme')}{REDACTED}@" if user else match.group(0)
    return f"{match.group('scheme')}{user}:{REDACTED}@"


def _hide_param(match: re.Match[str]) -> str:
    if _SENSITIVE_PARAM.match(match.group("name")) and match.group("value") != REDACTED:
        return f"{match.group('lead')}{REDACTED}"
    return match.group(0)


def url_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``url`` without its user info, and the user and password it carried (decoded)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None, None
    if "@" not in parts.netloc:
        return url, None, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, sep, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, unquote(user), unquote(password) if sep else None


def url_secrets(url: str) -> dict[str, str]:
    """The secret values a URL carries (its password, decoded and as written), for a scrub."""
    _, user, password = url_credentials(url)
    found: dict[str, str] = {}
    if password:
        found[password] = REDACTED
        found[quote(password, safe="")] = REDACTED
        found[base64.b64encode(f"{user or ''}:{password}".encode()).decode()] = REDACTED
    elif user:
        found[user] = REDACTED
    return found


class Secrets:
    """Known secret values, each with the label it is shown as (``${{ OPENAI_API_KEY }}``).

    Add values as they become known (a provider's key, a header value, a URL password); a
    scrub replaces the longest ones first, so a value that contains another hides whole.
    """

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._labels: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None
        for value, label in (values or {}).items():
            self.add(value, label)

    def add(self, value: str | None, label: str = REDACTED) -> None:
        """Treat ``value`` as a secret shown as ``label`` (short values are ignored)."""
        if not value or len(value) < MIN_SECRET_CHARS or value in self._labels:
            return
        self._labels[value] = label
        self._pattern = None

    def add_env(self, names: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
        """The values of these environment variables, labelled ``${{ NAME }}``."""
        env = os.environ if environ is None else environ
        for name in names:
            self.add(env.get(name), env_label(name))

    def add_secret_looking_env(self, environ: Mapping[str, str] | None = None,
                               min_chars: int = 8) -> None:
        """Every environment variable named like a key, token, secret or password."""
        env = os.environ if environ is None else environ
        for name, value in env.items():
            if _SECRET_ENV_NAME.search(name.upper()) and len(value) >= min_chars:
                self.add(value, env_label(name))

    def update(self, values: Mapping[str, str]) -> None:
        for value, label in values.items():
            self.add(value, label)

    def labels(self) -> dict[str, str]:
        """The secret values and their labels (value -> label)."""
        return dict(self._labels)

    def scrub(self, text: str) -> str:
        """``text`` with every known secret replaced and URL credentials redacted."""
        if self._labels:
            if self._pattern is None:
                ordered = sorted(self._labels, key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
            text = self._pattern.sub(lambda m: self._labels[m.group(0)], text)
        return redact_urls(text)


def environment_secrets(names: Iterable[str] = (),
                        environ: Mapping[str, str] | None = None) -> Secrets:
    """The secrets the environment holds: the named variables (API keys a judge or an agent
    may be given) and every variable named like a key, token, secret or password. Judges
    and targets both start from this set, since an agent inherits the environment too."""
    secrets = Secrets()
    secrets.add_env(names, environ)
    secrets.add_secret_looking_env(environ)
    return secrets


def scrub(text: str, secrets: Secrets | Mapping[str, str] | None = None) -> str:
    """``text`` with the given secret values (value -> label) replaced and every URL's
    credentials redacted: what any error text from outside passes through before it is
    shown, logged or stored."""
    if secrets is None:
        return redact_urls(text)
    if not isinstance(secrets, Secrets):
        secrets = Secrets(secrets)
    return secrets.scrub(text)


def env_label(name: str) -> str:
    """How the value of an environment variable (or targets-file ``${{ VAR }}``) is shown."""
    return "${{ " + name + " }}"
