"""``cli`` targets: no case data ever reaches a shell as code, whatever the template."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.targets.command import CommandTarget
from assay.targets.config import build_target
from assay.types.case import Case

PAYLOADS = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "'; touch PWNED; echo '",
    '"; touch PWNED; echo "',
    "x\ntouch PWNED\n",
    "x; touch PWNED",
    "x && touch PWNED",
    "x | touch PWNED",
    "$(touch${IFS}PWNED)",
    "\\\"$(touch PWNED)\\\"",
    "'\"$(touch PWNED)\"'",
    "{PROMPT}$(touch PWNED)",
    "${ASSAY_INPUT}$(touch PWNED)",
]

# Templates that are accepted: the data must come back verbatim and nothing may run.
SAFE_TEMPLATES: list[str | list[str]] = [
    "printf '%s' {input}",
    "printf '%s' {PROMPT}",
    "printf '%s' {input} # it's a comment with {input}",
    ["printf", "%s", "{input}"],
    ["sh", "-c", 'printf "%s" "$1"', "sh", "{input}"],
]

# Templates that would paste data into shell or interpreter code: refused when built.
REFUSED_TEMPLATES: list[str | list[str]] = [
    'echo "{input}"',
    "echo '{input}'",
    'printf %s "{PROMPT}"',
    "echo \"prefix {input} suffix\"",
    "echo $'{input}'",
    "echo \\{input}",
    "sh -c 'echo {input}'",
    ["sh", "-c", "echo {input}"],
    ["bash", "-lc", "echo {PROMPT}"],
    ["/usr/bin/env", "bash", "-c", "echo {input}"],
    [sys.executable, "-c", "print('{input}')"],
    ["python3", "-c", "print({input})"],
    ["node", "-e", "console.log('{input}')"],
]


@pytest.mark.parametrize("template", SAFE_TEMPLATES, ids=str)
async def test_no_payload_runs_a_command(tmp_path: Path, template: str | list[str]) -> None:
    target = CommandTarget(template, name="agent", cwd=tmp_path)
    for payload in PAYLOADS:
        execution = await target.run(Case(id="x", input=payload))
        assert execution.error is None, execution.error
        assert execution.output == payload.strip(), (template, payload)
        assert not (tmp_path / "PWNED").exists(), (template, payload)


@pytest.mark.parametrize("template", REFUSED_TEMPLATES, ids=str)
def test_placeholder_inside_shell_code_is_refused(tmp_path: Path,
                                                  template: str | list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        build_target({"name": "quoting", "provider": "cli", "command": template}, tmp_path)
    message = str(caught.value)
    assert "target 'quoting'" in message and "command" in message
    assert "{input}" in message or "{PROMPT}" in message


def test_refusal_names_the_field_used(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"target 'q': command_template .* double quotes"):
        build_target({"name": "q", "provider": "cli", "command_template": 'echo "{input}"'},
                     tmp_path)


async def test_nul_byte_in_argv_input_is_a_case_error(tmp_path: Path) -> None:
    target = CommandTarget(["printf", "%s", "{input}"], name="agent", cwd=tmp_path)
    execution = await target.run(Case(id="x", input="a\x00b"))
    assert execution.error is not None and "NUL" in execution.error
