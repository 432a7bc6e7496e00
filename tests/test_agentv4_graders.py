"""AgentV 4's ``python``, ``javascript`` and ``webhook`` graders: code run as a code judge (a
subprocess started from an argument list, the case on stdin) and a POST to a real HTTP server.

AgentV 4.42.4 itself does not run these three (it answers ``Unknown grader type: "python"``);
AgentV 5 defines them, and this is its contract: the code is the body of ``main(output,
context)`` (one line: an expression), the answer ``true``/``false``, a number or ``{pass, score,
reason}``, a score above 0 passing unless a ``threshold`` is set."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.judges.base import EvalContext
from assay.judges.code.inline import InlineCode
from assay.judges.code.webhook import Webhook
from assay.llm import JudgeEngine
from assay.types import Case, Execution
from tests.test_agentv4 import cli_agent, write
from tests.test_cli_run import assay as assay_cli

CASE = Case(id="c1", input="What is the capital of France?", expected_output="Paris",
            expected_outcomes=["Names Paris"], metadata={"topic": "geo"})


async def judge(evaluator: Any, answer: str = "The capital is Paris.", case: Case = CASE):
    engine = JudgeEngine()
    try:
        return await evaluator.evaluate(case, Execution(input=case.input, output=answer),
                                        EvalContext(engine))
    finally:
        await engine.aclose()


@pytest.mark.parametrize("code, value, passed", [
    ("'Paris' in output", 1.0, True),
    ("'Rome' in output", 0.0, False),
    ("len(output) / 100", 0.21, True),  # a number above 0 passes (AgentV's default)
    ("0", 0.0, False),
    ("{'pass': False, 'score': 0.4, 'reason': 'too short'}", 0.4, False),
    ("{'pass': True}", 1.0, True),
    ("context['criteria'] == 'Names Paris' and context['metadata']['topic'] == 'geo' "
     "and context['expected_output'][0]['content'] == 'Paris'", 1.0, True),
    ("words = output.split()\nif 'Paris.' in words:\n    return {'score': 0.9, 'reason': "
     "'named'}\nreturn 0", 0.9, True),
])
async def test_python_assertions_answer_as_agentv_defines(code, value, passed):
    score = await judge(InlineCode(language="python", value=code, name="py"))
    assert score.error is None, score.error
    assert score.value == pytest.approx(value) and score.passed is passed


@pytest.mark.parametrize("code, value, passed", [
    ("output.includes('Paris')", 1.0, True),
    ("output.includes('Rome')", 0.0, False),
    ("const n = output.length; n / 100", 0.21, True),
    ("return { pass: context.expectedOutput[0].content === 'Paris', reason: 'ref' }", 1.0,
     True),
    ("await new Promise((r) => setTimeout(r, 5));\nreturn context.criteria.length > 3", 1.0,
     True),
])
async def test_javascript_assertions_run_in_node_with_camel_case_context(code, value, passed):
    score = await judge(InlineCode(language="javascript", value=code, name="js"))
    assert score.error is None, score.error
    assert score.value == pytest.approx(value) and score.passed is passed


async def test_a_threshold_sets_the_pass_mark():
    score = await judge(InlineCode(language="python", value="0.5", threshold=0.6))
    assert score.value == 0.5 and score.passed is False


@pytest.mark.parametrize("language, code, message", [
    ("python", "1 / 0", "ZeroDivisionError"),
    ("python", "'yes'", "returned 'yes'; expected true or false, a number in [0, 1]"),
    ("python", "1.5", "outside [0, 1]"),
    ("python", "{'score': 'high'}", "score='high'"),
    ("javascript", "undefinedName + 1", "undefinedName is not defined"),
])
async def test_an_assertion_that_cannot_answer_is_an_error_never_a_zero(language, code,
                                                                         message):
    score = await judge(InlineCode(language=language, value=code))
    assert score.value is None and score.error is not None
    assert message in score.error.message


async def test_the_answer_never_reaches_a_shell_or_the_code(tmp_path, monkeypatch):
    """The code and the case travel as JSON on stdin to a fixed harness started from an
    argument list: an answer full of shell and Python syntax is data."""
    monkeypatch.chdir(tmp_path)
    hostile = "$(touch PWNED) `touch PWNED2`; __import__('os').system('touch PWNED3')"
    for language in ("python", "javascript"):
        score = await judge(InlineCode(language=language, value="output.length > 0"
                                       if language == "javascript" else "len(output) > 0",
                                       cwd=str(tmp_path)), answer=hostile)
        assert score.value == 1.0
    assert not list(tmp_path.glob("PWNED*"))


async def test_a_hung_assertion_is_killed_at_its_timeout():
    score = await judge(InlineCode(language="python", value="import time\ntime.sleep(30)",
                                   timeout_s=0.5))
    assert score.error is not None and score.error.code == "code_judge_timeout"


# -- webhook ----------------------------------------------------------------------------------


class _Hook(BaseHTTPRequestHandler):
    answers: dict[str, tuple[int, Any, dict[str, str]]] = {}
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        type(self).seen.append({"path": self.path, "body": body,
                                "authorization": self.headers.get("Authorization")})
        status, answer, headers = type(self).answers.get(self.path, (404, {}, {}))
        data = json.dumps(answer).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    _Hook.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_a_webhook_is_posted_the_answer_and_the_case(hook):
    _Hook.answers = {"/yes": (200, {"pass": True, "score": 0.9, "reason": "fine"}, {}),
                     "/no": (200, False, {}), "/num": (200, 0.25, {})}
    passed = await judge(Webhook(value=f"{hook}/yes", config={"strict": True}))
    assert (passed.value, passed.passed, passed.rationale) == (0.9, True, "fine")
    failed = await judge(Webhook(value=f"{hook}/no"))
    assert (failed.value, failed.passed) == (0.0, False)
    number = await judge(Webhook(value=f"{hook}/num"))
    assert (number.value, number.passed) == (0.25, True)
    sent = _Hook.seen[0]["body"]
    assert sent["output"] == "The capital is Paris."
    assert sent["context"]["criteria"] == "Names Paris"
    assert sent["context"]["config"] == {"strict": True}


async def test_a_webhook_that_fails_is_an_error_saying_why(hook):
    _Hook.answers = {"/down": (500, {"error": "boom"}, {}),
                     "/away": (307, {}, {"Location": "http://example.invalid/steal"}),
                     "/prose": (200, "looks good to me", {})}
    down = await judge(Webhook(value=f"{hook}/down"))
    assert down.error is not None and "HTTP 500" in down.error.message
    away = await judge(Webhook(value=f"{hook}/away"))
    assert away.error is not None and "redirected (HTTP 307) to another origin" in \
        away.error.message
    prose = await judge(Webhook(value=f"{hook}/prose"))
    assert prose.error is not None and "expected true or false" in prose.error.message
    assert [s["path"] for s in _Hook.seen] == ["/down", "/away", "/prose"]  # not followed


def test_a_webhook_password_is_sent_as_a_header_and_never_stored(tmp_path, hook):
    _Hook.answers = {"/judge": (200, True, {})}
    url = hook.replace("http://", "http://judge:s3cret-hook-pass@") + "/judge"
    cli_agent(tmp_path, "Paris")
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(json.dumps({"target": "agent", "tests": [
        {"id": "t", "input": "Capital?", "assertions": [{"type": "webhook", "value": url}]}]}))
    result = assay.evaluate(suite, store=f"sqlite:///{tmp_path / 'runs.db'}")
    assert result.records[0].scores[0].value == 1.0
    assert _Hook.seen[0]["authorization"].startswith("Basic ")
    stored = (tmp_path / "runs.db").read_bytes()
    assert b"s3cret-hook-pass" not in stored


def test_python_and_javascript_graders_in_a_suite_file(tmp_path):
    cli_agent(tmp_path, "Paris")
    suite = write(tmp_path / "EVAL.yaml", """
        target: agent
        tests:
          - id: t
            criteria: Names Paris
            input: Capital of France?
            assertions:
              - {type: python, value: "output == 'Paris'", weight: 3}
              - type: javascript
                value: |
                  const n = output.length;
                  return { score: n > 3 ? 1 : 0, reason: `length ${n}` };
        """)
    record = assay.evaluate(suite).records[0]
    assert [(s.name, s.value, s.rationale) for s in record.scores] == [
        ("python", 1.0, "assertion passed"), ("javascript", 1.0, "length 5")]
    assert record.score == 1.0


def test_python_that_does_not_compile_is_located_before_the_agent_runs(tmp_path):
    """Found when the suite is read (compiling runs nothing), at the code's own place, not as
    an error score once every case has been answered; a parser overflow is a problem too."""
    write(tmp_path / "EVAL.yaml", """
        tests:
          - id: a
            input: hi
            assertions:
              - {type: contains, value: hi}
              - {type: python, value: "return ("}
              - type: python
                value: |
                  words = output.split()
                  if words
                      return 1
              - {type: python, value: "%s1"}
        """ % ("-" * 100_000))
    out = assay_cli(tmp_path, "validate", "EVAL.yaml")
    assert out.returncode == 2, out.stdout + out.stderr
    said = out.stdout + out.stderr
    assert "EVAL.yaml:6:31: inline_code evaluator value: the python code does not compile: " \
        "invalid syntax (its line 1)" in said
    assert "EVAL.yaml:8:16: inline_code evaluator value: the python code does not compile: " \
        "expected ':' (its line 2)" in said
    assert "EVAL.yaml:12:31: inline_code evaluator value: the python code does not " \
        "compile: it is nested too deeply" in said
    assert "Traceback" not in said
    # another interpreter's Python may read what this one cannot: left to it
    assert InlineCode(language="python", value="print 'x'", interpreter="python2").value


def test_inline_code_needs_code(tmp_path):
    with pytest.raises(ValueError, match="the code is empty"):
        InlineCode(language="python", value="  ")
    assert Path(tmp_path).is_dir()
