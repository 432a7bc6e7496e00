"""Deterministic answers to chat-completions requests.

An answer depends only on the request, so the same request always gets the same answer. Tests
steer it with directives placed in a message:

``<<mock:{"score": 85, "justification": "close"}>>``
    answer with exactly this JSON (as content, or as the forced tool call's arguments)
``<<mock-raw:any text>>``
    answer with this text, valid or not
``<<mock-seq:["bad", "{\\"score\\": 1}"]>>``
    the Nth element for the Nth attempt in a conversation (re-asks append messages)
``<<mock-logprobs:{"4": 0.6, "5": 0.3, "3": 0.1}>>``
    when the request asks for ``logprobs``: these probabilities for the alternatives at every
    digit of the answer (the chosen digit gets its own probability from the table)

The mock server's hostile faults transform a normal answer with :func:`as_prose` (no JSON,
the score in words) and :func:`with_bool_scores` (``"score": true``).

A request with ``logprobs: true`` gets ``choices[0].logprobs.content``: the answer split into
tokens (every digit a token of its own), each certain except digits, where the chosen digit has
probability 0.8 and its neighbours 0.1 each unless a ``mock-logprobs`` directive says otherwise.

Without a directive, a requested schema is filled in: a ``score``-like number is the token
overlap (F1) between an ``<expected...>`` block and an ``<actual...>`` block of the prompt (tag
names may end in a boundary code, ``<actual_output_3f9a1c2b7d4e>``) when
both exist, else a stable value derived from a hash of the request.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import orjson

_DIRECTIVE = re.compile(r"<<mock(-raw|-seq)?:(.*?)>>", re.S)
_LOGPROBS = re.compile(r"<<mock-logprobs:(.*?)>>", re.S)
_TOKEN = re.compile(r"\d|[A-Za-z_]+|\s+|[^\w\s]")
_BLOCK = re.compile(
    r"<([A-Za-z_]*?(expected|reference|actual|candidate)[A-Za-z0-9_]*)>(.*?)</\1>", re.S | re.I)
_WORD = re.compile(r"\w+")


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The full OpenAI-shaped response for a request."""
    messages = request.get("messages") or []
    text = "\n".join(_message_text(m) for m in messages)
    user_text = "\n".join(_message_text(m) for m in messages if m.get("role") == "user")
    tool = _forced_tool(request)
    schema = _schema(request, tool)
    content = _directed(messages, text)
    if content is None:
        if schema is not None:
            content = orjson.dumps(fill(schema, user_text)).decode()
        else:
            last = _message_text(messages[-1]) if messages else ""
            content = f"mock answer: {last[:80]}"
    message: dict[str, Any]
    finish = "stop"
    if tool is not None:
        call_id = "call_" + hashlib.sha1(text.encode()).hexdigest()[:12]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": tool, "arguments": content}}],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": content}
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    if request.get("logprobs") and tool is None:
        choice["logprobs"] = {"content": token_logprobs(
            content, int(request.get("top_logprobs") or 0), _logprob_table(messages))}
    return {
        "id": "chatcmpl-" + hashlib.sha1(text.encode()).hexdigest()[:16],
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "mock"),
        "choices": [choice],
        "usage": {
            "prompt_tokens": max(1, len(text) // 4),
            "completion_tokens": max(1, len(content) // 4),
            "total_tokens": max(1, len(text) // 4) + max(1, len(content) // 4),
        },
    }


def token_logprobs(content: str, top: int,
                   table: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """OpenAI-shaped ``logprobs.content`` for ``content``: one entry per token, each with up
    to ``top`` alternatives. Digits are uncertain (``table``, or 0.8 for the chosen digit and
    0.1 for each neighbour); every other token is certain."""
    out: list[dict[str, Any]] = []
    for token in _TOKEN.findall(content):
        if token.isdigit():
            spread = table if table else _neighbours(int(token))
            chosen = spread.get(token, 1e-6)
            alternatives = sorted(spread.items(), key=lambda kv: (-kv[1], kv[0]))
        else:
            chosen, alternatives = 1.0, [(token, 1.0)]
        out.append({"token": token, "logprob": math.log(chosen), "bytes": list(token.encode()),
                    "top_logprobs": [{"token": alt, "logprob": math.log(p),
                                      "bytes": list(alt.encode())}
                                     for alt, p in alternatives[:top] if p > 0]})
    return out


def _neighbours(digit: int) -> dict[str, float]:
    table = {str(digit): 0.8}
    for other in (digit - 1, digit + 1):
        if 0 <= other <= 9:
            table[str(other)] = 0.1
    return table


def _logprob_table(messages: list[dict[str, Any]]) -> dict[str, float] | None:
    for m in messages:
        if m.get("role") in ("user", "system"):
            found = _LOGPROBS.search(_message_text(m))
            if found:
                table = orjson.loads(found.group(1))
                return {str(k): float(v) for k, v in table.items()}
    return None


def similarity(expected: str, actual: str) -> float:
    """Token-overlap F1 of two texts, in [0, 1]: the mock's notion of 'how similar'."""
    e = _WORD.findall(expected.lower())
    a = _WORD.findall(actual.lower())
    if not e and not a:
        return 1.0
    if not e or not a:
        return 0.0
    remaining = list(a)
    common = 0
    for word in e:
        if word in remaining:
            remaining.remove(word)
            common += 1
    if common == 0:
        return 0.0
    precision, recall = common / len(a), common / len(e)
    return 2 * precision * recall / (precision + recall)


def fill(schema: dict[str, Any], text: str, path: str = "",
         root: dict[str, Any] | None = None) -> Any:
    """A value that satisfies ``schema``, chosen deterministically from ``text``."""
    root = root if root is not None else schema
    if "$ref" in schema:
        ref = str(schema["$ref"])
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return fill(target or {"type": "object"}, text, path, root)
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return fill(schema["allOf"][0], text, path, root)
    if schema.get("enum"):
        options = schema["enum"]
        index = re.findall(r"\[(\d+)\]", path)
        if index:  # inside an array: distinct items get distinct values (ids, keys)
            return options[int(index[-1]) % len(options)]
        return options[_hash_index(text + path, len(options))]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return fill(options[0], text, path, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: fill(v, text, f"{path}.{k}", root) for k, v in props.items()}
    if kind == "array":
        item = schema.get("items", {"type": "string"})
        n = max(int(schema.get("minItems", 0)), 1)
        return [fill(item, text, f"{path}[{i}]", root) for i in range(n)]
    if kind in ("number", "integer"):
        low = float(schema.get("minimum", schema.get("exclusiveMinimum", 0.0)))
        high = float(schema.get("maximum", schema.get("exclusiveMaximum", 1.0 if kind ==
                                                     "number" else 100.0)))
        fraction = _score_fraction(text, path)
        value = low + (high - low) * fraction
        return round(value) if kind == "integer" else round(value, 4)
    if kind == "boolean":
        return _score_fraction(text, path) >= 0.5
    if kind == "null":
        return None
    return f"mock {path.lstrip('.') or 'text'}"


def _score_fraction(text: str, path: str) -> float:
    blocks = {"expected": [], "actual": []}  # type: dict[str, list[str]]
    for match in _BLOCK.finditer(text):
        side = "expected" if match.group(2).lower() in ("expected", "reference") else "actual"
        blocks[side].append(match.group(3))
    if blocks["expected"] and blocks["actual"]:
        return similarity(blocks["expected"][0], blocks["actual"][0])
    return _hash_index(text + path, 1001) / 1000


def _hash_index(text: str, n: int) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16) % n


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content or ""


def _forced_tool(request: dict[str, Any]) -> str | None:
    tools = request.get("tools") or []
    if not tools:
        return None
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function"):
        return str(choice["function"]["name"])
    if choice in ("required", {"type": "required"}) or isinstance(choice, dict):
        return str(tools[0]["function"]["name"])
    return None


def _schema(request: dict[str, Any], tool: str | None) -> dict[str, Any] | None:
    if tool is not None:
        for t in request.get("tools") or []:
            if t.get("function", {}).get("name") == tool:
                return t["function"].get("parameters") or {"type": "object"}
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema") or {"type": "object"}
    if fmt.get("type") == "json_object":
        return fmt.get("schema") or {"type": "object"}
    return None


def _directed(messages: list[dict[str, Any]], text: str) -> str | None:
    match = None
    for m in messages:
        if m.get("role") in ("user", "system"):
            found = _DIRECTIVE.search(_message_text(m))
            match = found or match
    if match is None:
        return None
    kind, body = match.group(1), match.group(2)
    if kind == "-raw":
        return body
    if kind == "-seq":
        items = orjson.loads(body)
        attempt = sum(1 for m in messages if m.get("role") == "assistant")
        item = items[min(attempt, len(items) - 1)]
        return item if isinstance(item, str) else orjson.dumps(item).decode()
    return body


def _edit_answer(response: dict[str, Any], edit: Any) -> dict[str, Any]:
    """``response`` with ``edit`` applied to its answer text (content or tool arguments)."""
    message = response["choices"][0]["message"]
    for call in message.get("tool_calls") or []:
        call["function"]["arguments"] = edit(call["function"]["arguments"])
    if message.get("content") is not None:
        message["content"] = edit(message["content"])
    return response


PROSE = ("Thanks for the question! Having read both texts carefully, I would say they agree "
         "fairly well, so I'd give it about eight out of ten overall.")


def as_prose(response: dict[str, Any]) -> dict[str, Any]:
    """The answer as a chatty paragraph: no JSON at all, the score in words."""
    message = response["choices"][0]["message"]
    message.pop("tool_calls", None)
    message["content"] = PROSE
    response["choices"][0]["finish_reason"] = "stop"
    return response


def with_bool_scores(response: dict[str, Any]) -> dict[str, Any]:
    """The JSON answer with every ``score`` field set to ``true``."""
    def edit(text: str) -> str:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
        return orjson.dumps(_bool_scores(value)).decode()
    return _edit_answer(response, edit)


def with_duplicate_score(response: dict[str, Any]) -> dict[str, Any]:
    """The JSON answer with its ``score`` named a second time, with another value: a judge
    that changes its mind within one answer (``{"score": 5, ..., "score": 1}``)."""
    def edit(text: str) -> str:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
        if not isinstance(value, dict) or "score" not in value:
            return text
        first = value["score"]
        other = (not first) if isinstance(first, bool) else 0 if first else 1
        return f'{orjson.dumps(value).decode()[:-1]},"score":{orjson.dumps(other).decode()}}}'
    return _edit_answer(response, edit)


def quoting(response: dict[str, Any], quote: str) -> dict[str, Any]:
    """The answer with ``quote`` added to its text: to every string field of a JSON answer
    (its justification, reasoning...), after a plain text answer."""
    def edit(text: str) -> str:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return f"{text} ({quote})"
        if not isinstance(value, dict):
            return text
        return orjson.dumps({k: f"{v} ({quote})" if isinstance(v, str) else v
                             for k, v in value.items()}).decode()
    return _edit_answer(response, edit)


def _bool_scores(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: True if k == "score" else _bool_scores(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bool_scores(v) for v in value]
    return value
