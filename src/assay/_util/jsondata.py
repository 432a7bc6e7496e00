"""Turning what an agent or a user's code returned into plain JSON data, or saying why not.

Agent output, a scorer's details and a code judge's answer can hold anything Python can: custom
objects, bytes, self-referencing dicts, NaN. Every such value crosses into assay through
:func:`as_json_data` once, at the boundary, so that what is judged, stored and written to files
is the same plain data everywhere, and a value that is not data becomes that one case's error
instead of an exception that stops a run (or a row the store cannot write).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import json.decoder
import json.scanner
import math
import re
from typing import Any

from pydantic import BaseModel

MAX_DEPTH = 200
"""Nesting deeper than this is refused: JSON readers and writers recurse."""


class NotJSONData(ValueError):
    """A value that cannot be plain JSON data; ``path`` says where in it (``$.a[3]``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{reason} at {path}")
        self.path = path
        self.reason = reason


_SCALARS = (str, bool, type(None))

_SURROGATE = re.compile("[\ud800-\udfff]")
"""A code point UTF-8 cannot encode on its own: text holding one is not valid Unicode."""


def as_json_data(value: Any) -> Any:
    """``value`` as plain JSON data: dicts with string keys, lists, strings, numbers, booleans
    and None. Tuples, sets and NumPy arrays become lists, NumPy scalars their Python values,
    pydantic models and dataclasses their fields, UTF-8 bytes text; NaN and infinities become
    None (JSON has no such numbers; the store and the result files agree on null). Raises
    :class:`NotJSONData` for anything else, for bytes that are not UTF-8, text with unpaired
    surrogates, cycles and nesting deeper than ``MAX_DEPTH``.
    """
    kind = type(value)
    if kind is str:
        return _text(value, "$")
    if kind in (int, bool, type(None)):
        return value
    return _convert(value, "$", 0, set())


def _text(value: str, path: str) -> str:
    """``value``, unless it holds an unpaired surrogate."""
    if unpaired_surrogate(value) is not None:
        raise NotJSONData(path, "text with unpaired surrogates (not valid Unicode)")
    return value


def unpaired_surrogate(text: str) -> str | None:
    """The first code point of ``text`` that UTF-8 cannot encode (an unpaired surrogate, as a
    JSON or YAML ``\\ud800`` escape makes one), written as its escape; None when there is
    none. Checked in place: encoding the text to find out made a copy of it (30 MB for a 30 MB
    answer), and ASCII text (most of it) needs no look at all."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return None if found is None else f"\\u{ord(found[0]):04x}"


def _convert(value: Any, path: str, depth: int, active: set[int]) -> Any:
    if isinstance(value, str):
        return _text(value, path)
    if isinstance(value, (*_SCALARS, int)):
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(value, float):  # a subclass (NumPy's float64) as the plain float
        return float(value) if math.isfinite(value) else None
    if depth >= MAX_DEPTH:
        raise NotJSONData(path, f"nesting deeper than {MAX_DEPTH} levels")
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise NotJSONData(path, "bytes that are not UTF-8 text") from None
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="python")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    marker = id(value)
    if isinstance(value, dict):
        if marker in active:
            raise NotJSONData(path, "a value that contains itself")
        active.add(marker)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, str):
                name = _text(key, path)
            elif isinstance(key, int | float | bool) or key is None:
                name = "null" if key is None else str(key).lower() if isinstance(key, bool) \
                    else str(key)
            else:
                raise NotJSONData(path, f"a dict key of type {type(key).__name__}")
            out[name] = _convert(item, f"{path}.{name}", depth + 1, active)
        active.discard(marker)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        if marker in active:
            raise NotJSONData(path, "a value that contains itself")
        active.add(marker)
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        result = [_convert(item, f"{path}[{i}]", depth + 1, active)
                  for i, item in enumerate(items)]
        active.discard(marker)
        return result
    scalar = _plain(value)
    if scalar is not value:
        return _convert(scalar, path, depth, active)
    raise NotJSONData(path, f"a {type(value).__name__} object, which is not JSON data")


def plain_scalar(value: Any) -> Any:
    """A NumPy scalar (``np.bool_``, ``np.int64``, ``np.float32``...) as the Python value it
    holds; anything else as it is. NumPy is not imported: its scalars are known by their
    module and their ``item()``."""
    kind = type(value)
    if kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0 and \
            hasattr(value, "item"):
        return value.item()
    return value


def _plain(value: Any) -> Any:
    """A NumPy scalar as its Python value (:func:`plain_scalar`), a NumPy array as the
    nested list of its values; anything else as it is."""
    scalar = plain_scalar(value)
    if scalar is value and type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    return scalar


_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes})


def private_copy(value: Any) -> Any:
    """A copy of ``value`` that user code may change as it likes without changing the case
    (or the output) every later call sees: dicts, lists and pydantic models are copied all the
    way down; text, numbers and other immutable values are handed over as they are, at no
    cost, so a run whose inputs are text copies nothing."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return {key: private_copy(item) for key, item in value.items()}
    if kind is list:
        return [private_copy(item) for item in value]
    if isinstance(value, BaseModel):
        return _model_copy(value)
    return copy.deepcopy(value)


def _model_copy(model: BaseModel) -> BaseModel:
    """A pydantic model copied all the way down, its fields by :func:`private_copy`: a third
    of the time of pydantic's own deep copy (``copy.deepcopy`` of every field), which a run
    of an agent that takes the case paid for every case. A model with private attributes
    gets pydantic's own."""
    if getattr(model, "__pydantic_private__", None):
        return model.model_copy(deep=True)
    copied = model.model_copy()
    fields = copied.__dict__
    for key, item in fields.items():
        if type(item) not in _IMMUTABLE:
            fields[key] = private_copy(item)
    extra = copied.__pydantic_extra__
    if extra:
        copied.__pydantic_extra__ = {key: private_copy(item) for key, item in extra.items()}
    return copied


def same_data(left: Any, right: Any) -> bool:
    """Whether two values are equal as JSON data: the one equality every deterministic
    comparison uses.

    Numbers compare by exact value, never through a float: ``10**16 + 1`` differs from
    ``10**16`` (a float cannot tell them apart), while ``1`` equals ``1.0``. A boolean equals
    only a boolean (``True`` is not ``1``, as in JSON), text equals only text, objects compare
    key by key and arrays item by item (a tuple is an array). Anything else uses ``==``.
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right  # Python compares an int with a float exactly
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_data(v, right[k])
                                                   for k, v in left.items())
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(
            same_data(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, str) != isinstance(right, str) or \
            isinstance(left, int | float) != isinstance(right, int | float):
        return False
    return bool(left == right)


def loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)``, with text nested deeper than the decoder can go a
    ValueError, as any other text that is not JSON is.

    The standard library's decoder recurses and raises RecursionError past Python's recursion
    limit (``[`` a thousand times). Every reader of what an agent, a judge or a trace sent
    tries JSON and falls back on ValueError (keeping the text as text, or saying the text is
    not JSON), so the RecursionError went past it: an agent's answer became a failed target,
    and a trace file's run stopped outright.
    """
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise _too_deep(text) from None


def _too_deep(text: str | bytes) -> json.JSONDecodeError:
    """The error of text nested deeper than the decoder can go: a JSONDecodeError, so readers
    that locate one locate this too."""
    return json.JSONDecodeError("JSON nested deeper than the decoder can read",
                                text if isinstance(text, str) else "", 0)


class DuplicateKey(json.JSONDecodeError):
    """An object that names a key twice: JSON readers keep the last value without a word, so
    the text says two things at once (``{"score": 5, "score": 1}``). A JSONDecodeError at the
    second occurrence of the key, so every reader that locates invalid JSON (line, column,
    character) locates this too; ``key`` is the key."""

    def __init__(self, key: str, doc: str, pos: int) -> None:
        from assay._util.control_chars import quoted

        self.what = f"duplicate key {quoted(key)}"
        super().__init__(f"{self.what}: expected each key once in an object", doc, pos)
        self.key = key

    def __str__(self) -> str:
        """Where, as a line of a file is told it (a column) or as a document (line and
        column)."""
        one_line = "\n" not in self.doc.rstrip()
        at = f"column {self.colno}" if one_line else f"line {self.lineno} column {self.colno}"
        return f"{self.what} at {at}: expected each key once in an object"


def not_json(exc: ValueError) -> str:
    """What a reader of a file says of a value it could not take as JSON: the repeated key
    and where (:class:`DuplicateKey`), else ``not JSON:`` and why."""
    return str(exc) if isinstance(exc, DuplicateKey) else f"not JSON: {exc}"


class _Repeated(ValueError):
    """Raised inside the decoder when an object repeats ``key``; ``position`` is where the
    repetition starts, once known."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key
        self.position: int | None = None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, or :class:`_Repeated` for the first key named twice."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return found


def loads_unique(text: str | bytes, **options: Any) -> Any:
    """:func:`loads`, refusing an object that names a key twice (:class:`DuplicateKey`, at the
    second occurrence): for what assay acts on, where the last value silently winning would
    be a wrong answer (a judge's answer, a suite file, a request body, a provider's answer).

    Without options one decoder serves every call: building one (its scanner) cost 5 us, a
    third of a chat answer's decoding."""
    if options or (isinstance(text, str) and text.startswith("\ufeff")):
        return loads(text, cls=UniqueDecoder, **options)  # the standard library's own errors
    if not isinstance(text, str):
        text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
    try:
        return _UNIQUE.decode(text)
    except RecursionError:
        raise _too_deep(text) from None


def refuse_repeated_keys(text: str | bytes) -> None:
    """Raise :class:`DuplicateKey` when JSON ``text`` names a key twice in one object; text
    that is not JSON passes (its reader has said so already). For text a faster reader
    (orjson) has read, which keeps a repeated key's last value without a word: the answers
    of a provider, the lines of a batch's results."""
    try:
        loads_unique(text)
    except ValueError as exc:
        if isinstance(exc, DuplicateKey):
            raise


class UniqueDecoder(json.JSONDecoder):
    """A JSON decoder that refuses an object naming a key twice (:class:`DuplicateKey`).

    The C decoder reads the text once; only text that repeats a key is read again, by the
    pure-Python decoder, to find where."""

    def __init__(self, **options: Any) -> None:
        super().__init__(object_pairs_hook=_unique_pairs, **options)
        self._options = options

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        try:
            return super().raw_decode(s, idx)
        except _Repeated as exc:
            raise DuplicateKey(exc.key, s, _repeat_position(s, idx, self._options)) from None


def _repeat_position(text: str, start: int, options: dict[str, Any]) -> int:
    """Where the first repeated key of the JSON value at ``start`` begins (``start`` when it
    cannot be found)."""
    decoder: Any = json.JSONDecoder(object_pairs_hook=_unique_pairs, **options)
    decoder.parse_object = _located_object
    decoder.scan_once = _PY_SCANNER(decoder)  # the C scanner reads objects itself
    try:
        decoder.raw_decode(text, start)
    except _Repeated as exc:
        return start if exc.position is None else exc.position
    except (ValueError, RecursionError):
        pass
    return start


_UNIQUE = UniqueDecoder()
"""The decoder :func:`loads_unique` uses without options: ``json.loads`` builds its ``cls``
(and a scanner) for every call; decoding keeps no state in the decoder."""

_PY_SCANNER: Any = getattr(json.scanner, "py_make_scanner")  # noqa: B009 (untyped)
_OBJECT: Any = getattr(json.decoder, "JSONObject")  # noqa: B009
_SCAN_STRING: Any = getattr(json.decoder, "scanstring")  # noqa: B009
_SPACE: Any = getattr(json.decoder, "WHITESPACE")  # noqa: B009


def _located_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, *args: Any
                    ) -> tuple[dict[str, Any], int]:
    """The decoder's own object reader, noting where the key of an object that repeats one
    starts (the innermost such object: nested objects end, and are checked, first)."""
    try:
        found: tuple[dict[str, Any], int] = _OBJECT(s_and_end, strict, scan_once, *args)
    except _Repeated as exc:
        if exc.position is None:
            with contextlib.suppress(ValueError, StopIteration, IndexError):
                exc.position = _second_key(s_and_end[0], s_and_end[1], exc.key, strict)
        raise
    return found


def _second_key(text: str, position: int, key: str, strict: bool) -> int | None:
    """Where ``key`` appears the second time among the keys of the object whose body starts
    at ``position`` (after its ``{``); None when it does not."""
    plain: Any = json.JSONDecoder(strict=strict)
    seen = False
    space = _SPACE.match
    while True:
        position = space(text, position).end()
        if text[position:position + 1] != '"':
            return None
        name, after = _SCAN_STRING(text, position + 1, strict)
        if name == key:
            if seen:
                return position
            seen = True
        after = space(text, after).end() + 1  # past the ':'
        _, after = plain.scan_once(text, space(text, after).end())
        position = space(text, after).end() + 1  # past the ',' (or the '}': then stopped)
