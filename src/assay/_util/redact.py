"""Keeping secrets out of everything assay shows or stores.

Two things leak in practice: credentials written into URLs (``http://user:PASS@host``,
``postgresql://u:pw@db``, ``?api_key=...``) and secret values (API keys, header values,
``${{ VAR }}`` values of a targets file) echoed back by a model, an agent or a service, in an
error text or in a successful answer alike. Every URL that is shown or stored goes through
:func:`redact_url`; every text that reaches a store, the response cache, a file, a log, the
terminal or a server response goes through :func:`scrub` (text), :func:`scrub_json` (JSON
text) or :func:`scrub_data` (plain data), which replace each known secret value by a label
saying where it came from and redact credentials in any URL.

The known secrets live in one registry, :data:`SECRETS`, for the whole process: the judge
engine adds the environment's keys and every provider's keys, header values and URL passwords;
a targets file adds its ``${{ VAR }}`` values, header values and pasted keys when it is read;
a run store adds its URL's password. So the writers of stores, caches, files and responses
need no secrets handed to them: they scrub with what the process knows. Judges and targets use
this one module, so a secret is hidden the same way on both sides.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, AnyStr
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from assay._util import jsondata

REDACTED = "***"
"""What stands for a password or a secret query value in a shown URL."""

MIN_SECRET_CHARS = 4
"""Shorter values are not treated as secrets: replacing every ``x`` in a message hides
nothing and makes it unreadable (placeholder keys such as ``x`` or ``no`` are common)."""

NOT_SECRET_HEADERS = frozenset({"content-type", "accept", "user-agent", "anthropic-version"})
"""Header names whose values are never credentials; every other header value may be one."""

_SENSITIVE_PARAM = re.compile(
    r"(?i)^(?:.*[_-])?(?:key|api[_-]?key|token|secret|password|passwd|pwd|sig|signature|"
    r"auth|authorization|credential|credentials|access[_-]?token|code)$")
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^\s/?#@:'\"<>]*)"
    r"(?::(?P<password>[^\s/?#'\"<>]*))?@")
_USERINFO_HINT = re.compile(r"://[^\s/?#'\"<>]*@")
"""What any match of ``_URL_CREDENTIALS`` holds: searched first, since a pattern that starts
with ``://`` is found by a fast scan, where one that starts at every word costs a regex
attempt per word (most texts hold no credentials at all)."""
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
    if "://" in text and _USERINFO_HINT.search(text):
        text = _URL_CREDENTIALS.sub(_hide_userinfo, text)
    if "=" in text and ("?" in text or "&" in text or ";" in text):
        text = _QUERY_SECRET.sub(_hide_param, text)
    return text


def has_url_secret(text: str) -> bool:
    """Whether :func:`redact_urls` would change ``text``, found without building a new text:
    what a writer asks of every text before it scrubs one."""
    if "://" in text and _USERINFO_HINT.search(text) is not None and \
            _URL_CREDENTIALS.sub(_hide_userinfo, text) != text:
        return True
    if "=" in text and ("?" in text or "&" in text or ";" in text):
        return any(_hide_param(m) != m.group(0) for m in _QUERY_SECRET.finditer(text))
    return False


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


MIN_BARE_TOKEN_CHARS = 16
"""A URL's user given without a password (``https://TOKEN@host``) is a secret value from this
length on; a shorter one is a user name (``postgresql://assay@db``), hidden where it is part
of a URL (:func:`redact_urls`) but not wherever the word appears."""


def url_secrets(url: str) -> dict[str, str]:
    """The secret values a URL carries (its password, decoded and as written, or a bare
    token as its user), for a scrub."""
    _, user, password = url_credentials(url)
    found: dict[str, str] = {}
    if password:
        found[password] = REDACTED
        found[quote(password, safe="")] = REDACTED
        found[base64.b64encode(f"{user or ''}:{password}".encode()).decode()] = REDACTED
    elif user and len(user) >= MIN_BARE_TOKEN_CHARS:
        found[user] = REDACTED
    return found


def header_secrets(headers: Mapping[str, Any]) -> dict[str, str]:
    """Every header value that could be a credential, to be hidden as ``***``."""
    return {str(value): REDACTED for name, value in headers.items()
            if str(name).lower() not in NOT_SECRET_HEADERS and value}


@dataclass(frozen=True, slots=True)
class _Matcher:
    """A snapshot of a secret set, compiled: what one scrub reads, never changed after."""

    labels: dict[str, str]
    values: tuple[str, ...]
    """The values, longest first."""
    needles: tuple[str, ...]
    """The values and their JSON-escaped forms: what a JSON text holds when it holds one."""
    byte_needles: tuple[bytes, ...]
    """The needles in UTF-8: what encoded JSON holds when it holds one."""
    pattern: re.Pattern[str] | None


def _json_forms(value: str) -> set[str]:
    """How ``value`` is written inside a JSON string, with and without non-ASCII escaped."""
    return {json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}


class Secrets:
    """Known secret values, each with the label it is shown as (``${{ OPENAI_API_KEY }}``).

    Add values as they become known (a provider's key, a header value, a URL password); a
    scrub replaces the longest ones first, so a value that contains another hides whole. Safe
    to share between threads: an addition builds a new snapshot, which later scrubs read.
    """

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._labels: dict[str, str] = {}
        self._matcher: _Matcher | None = None
        for value, label in (values or {}).items():
            self.add(value, label)

    def add(self, value: str | None, label: str = REDACTED) -> None:
        """Treat ``value`` as a secret shown as ``label`` (short values are ignored; a value
        keeps the label it was first added with)."""
        if not value or len(value) < MIN_SECRET_CHARS or value in self._labels:
            return
        with self._lock:
            if value not in self._labels:
                self._labels = {**self._labels, value: label}
                self._matcher = None

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

    def _compiled(self) -> _Matcher:
        found = self._matcher
        if found is None:
            labels = self._labels
            values = tuple(sorted(labels, key=len, reverse=True))
            needles = tuple(sorted({form for v in values for form in _json_forms(v)},
                                   key=len, reverse=True))
            pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None
            encoded = tuple(n.encode("utf-8", "surrogatepass") for n in needles)
            found = self._matcher = _Matcher(labels, values, needles, encoded, pattern)
        return found

    def scrub(self, text: str) -> str:
        """``text`` with every known secret replaced and URL credentials redacted."""
        matcher = self._matcher or self._compiled()
        if matcher.pattern is not None and _holds_any(text, matcher.values):
            labels = matcher.labels
            text = matcher.pattern.sub(lambda m: labels[m.group(0)], text)
        return redact_urls(text)

    def found_in(self, text: str) -> bool:
        """Whether a scrub would change ``text`` or any string a JSON ``text`` holds: a known
        secret (as written, or escaped as JSON writes it) or a URL's credentials. Cheap: a
        substring search per secret (a few tenths of a microsecond for a text of a kilobyte),
        so it is what every writer asks first."""
        matcher = self._matcher or self._compiled()
        return _holds_any(text, matcher.needles) or has_url_secret(text)

    def scrub_data(self, value: Any) -> Any:
        """Plain data (dicts, lists, strings...) with every string in it scrubbed. Keys are
        kept as they are: they are names of fields, and a reader looks values up by them."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {k: self.scrub_data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub_data(v) for v in value]
        return value

    def scrub_json(self, text: str) -> str:
        """A JSON text with every string in it scrubbed, still valid JSON holding the same
        structure. Unchanged (the same object) when it holds nothing to hide, which is what
        nearly every text costs: one substring search per secret.

        The strings are scrubbed one by one after parsing, never the text as a whole: a
        secret that happens to read like a number, ``true`` or a field name cannot break the
        document."""
        if not self.found_in(text):
            return text
        try:
            data = jsondata.loads(text)
        except ValueError:  # not JSON after all: hide what a text scrub finds
            return self.scrub(text)
        tail = text[len(text.rstrip()):]
        scrubbed = self.scrub_data(data)
        out = json.dumps(scrubbed, ensure_ascii=False, separators=(",", ":"))
        try:
            out.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: written as its escape
            out = json.dumps(scrubbed, separators=(",", ":"))
        return out + tail

    def scrub_json_bytes(self, data: bytes) -> bytes:
        """:meth:`scrub_json` for UTF-8 encoded JSON (a result line, a cached answer). The
        bytes are searched as they are: only one that holds something to hide is decoded (a
        large answer is not copied for nothing)."""
        matcher = self._matcher or self._compiled()
        if not _holds_any(data, matcher.byte_needles) and not _may_hold_url_secret(data):
            return data
        text = data.decode("utf-8", "surrogatepass")
        scrubbed = self.scrub_json(text)
        return data if scrubbed is text else scrubbed.encode("utf-8", "surrogatepass")


def _may_hold_url_secret(data: bytes) -> bool:
    """Whether encoded text may hold a URL's credentials or a secret query value (a cheap
    test on the bytes; :func:`has_url_secret` decides on the text)."""
    return (b"://" in data and _USERINFO_HINT_BYTES.search(data) is not None) or (
        b"=" in data and (b"?" in data or b"&" in data or b";" in data)
        and _QUERY_HINT_BYTES.search(data) is not None)


_USERINFO_HINT_BYTES = re.compile(_USERINFO_HINT.pattern.encode())
_QUERY_HINT_BYTES = re.compile(rb"[?&;][A-Za-z0-9_.\-]+=")


def _holds_any(text: AnyStr, needles: tuple[AnyStr, ...]) -> bool:
    # A plain loop: a substring search each (faster than one regex of alternatives, which
    # tries every position of the text), and no generator to set up per text.
    for needle in needles:  # noqa: SIM110
        if needle in text:
            return True
    return False


def environment_secrets(names: Iterable[str] = (),
                        environ: Mapping[str, str] | None = None) -> Secrets:
    """The secrets the environment holds: the named variables (API keys a judge or an agent
    may be given) and every variable named like a key, token, secret or password. Judges
    and targets both start from this set, since an agent inherits the environment too."""
    secrets = Secrets()
    secrets.add_env(names, environ)
    secrets.add_secret_looking_env(environ)
    return secrets


SECRETS = Secrets()
"""The process's known secrets: the one registry every scrub reads (see the module's text)."""


def register(values: Mapping[str, str]) -> None:
    """Make these secret values (value -> label) known to every scrub in this process."""
    SECRETS.update(values)


def register_environment(names: Iterable[str] = (),
                         environ: Mapping[str, str] | None = None) -> None:
    """Register the environment's secrets (see :func:`environment_secrets`) as they are now:
    called where a store, an engine or a server starts, so values set since are known."""
    register(environment_secrets(names, environ).labels())


def scrub(text: str, secrets: Secrets | Mapping[str, str] | None = None) -> str:
    """``text`` with every known secret (the registry's, and ``secrets`` given here) replaced
    and every URL's credentials redacted: what any text from outside passes through before it
    is shown, logged or stored."""
    if secrets is not None:
        text = (secrets if isinstance(secrets, Secrets) else Secrets(secrets)).scrub(text)
    return SECRETS.scrub(text)


def scrub_json(text: str) -> str:
    """A JSON text with the registry's secrets hidden in every string (see
    :meth:`Secrets.scrub_json`)."""
    return SECRETS.scrub_json(text)


def scrub_json_bytes(data: bytes) -> bytes:
    """:func:`scrub_json` for UTF-8 encoded JSON."""
    return SECRETS.scrub_json_bytes(data)


def scrub_data(value: Any) -> Any:
    """Plain data with the registry's secrets hidden in every string."""
    return SECRETS.scrub_data(value)


class ScrubbingFilter(logging.Filter):
    """A log filter that hides known secrets in a record's message and its traceback: what
    every logger of assay's carries, so no secret reaches a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
        return True


def scrubbed_logger(name: str) -> logging.Logger:
    """The logger ``name`` with a :class:`ScrubbingFilter` (added once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, ScrubbingFilter) for f in logger.filters):
        logger.addFilter(ScrubbingFilter())
    return logger


def env_label(name: str) -> str:
    """How the value of an environment variable (or targets-file ``${{ VAR }}``) is shown."""
    return "${{ " + name + " }}"
