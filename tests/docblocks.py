"""The code blocks of assay's Markdown (README.md and the guide under docs/), and how a test
runs them as a reader would.

Every fenced block is one of three kinds, decided here and nowhere else:

- **a file**: the prose just before it ends by naming a file of the repository
  (`` `examples/suite/EVAL.yaml`: ``); the block must be that file, byte for byte;
- **not run**: an HTML comment just before it says so and why (``<!-- not run: REASON -->``);
- **run**: every other ``bash`` or ``python`` block. A block of any other language that is
  neither a file nor marked is an error, so no block is left unchecked by accident.

A page's blocks run in order in one temporary copy of ``examples/``, so what one block makes
(a stored run, a results file) is there for the next, as it is for a reader. A block runs in
the copy's root, or in ``examples/NAME`` when the prose before it says "from
`` `examples/NAME` ``". Bash runs a line at a time with ``.venv/bin`` on ``PATH`` and the mock
server as the OpenAI endpoint; ``RUN_ID``, ``RUN_A``, ``RUN_B`` and ``BASELINE_ID`` name the
runs stored so far (the newest, the oldest, the newest, the oldest); a line exits 0 or 1 (1 is
a gate that failed, which a page may show) and never with a traceback.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNABLE = ("bash", "python")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->\s*$", re.S)
NAMED_FILE = re.compile(r"`([\w./-]+)`:?\s*$")
FROM_EXAMPLE = re.compile(r"[Ff]rom\s+`examples/([^`]+)`")
EXITS = re.compile(r"#\s*exits (\d+)\b")
PLACEHOLDER = re.compile(r"\b(RUN_ID|RUN_A|RUN_B|BASELINE_ID)\b")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text, and the prose before it."""

    page: str
    line: int
    language: str
    code: str
    before: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def not_run(self) -> str | None:
        """The reason given for not running it, when the page gives one."""
        marked = NOT_RUN.search(self.before.rstrip())
        return marked.group("reason") if marked else None

    @property
    def shown_file(self) -> Path | None:
        """The repository file the block shows, when the prose before it names one."""
        named = NAMED_FILE.search(self.before.rstrip())
        if named and (ROOT / named.group(1)).is_file():
            return ROOT / named.group(1)
        return None

    @property
    def kind(self) -> str:
        """``file``, ``not run``, ``run``, or ``unchecked`` (an error)."""
        if self.not_run:
            return "not run"
        if self.shown_file is not None:
            return "file"
        return "run" if self.language in RUNNABLE else "unchecked"

    @property
    def example(self) -> str | None:
        """The folder of examples/ the prose says the block runs from, if any."""
        named = FROM_EXAMPLE.findall(self.before[-400:])
        return named[-1] if named else None


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, indented ones (in lists) included."""
    lines = path.read_text().splitlines(keepends=True)
    page = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    found: list[Block] = []
    prose_start = 0
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index].rstrip("\n"))
        if not opening:
            index += 1
            continue
        close = re.compile(rf"^{opening['indent']}{opening['fence'][0]}{{{len(opening['fence'])},}}\s*$")
        end = next((j for j in range(index + 1, len(lines)) if close.match(lines[j])), None)
        if end is None:
            raise AssertionError(f"{page}:{index + 1}: a code block that is never closed")
        found.append(Block(page=page, line=index + 1,
                           language=(opening["info"].strip().split() or [""])[0],
                           code=textwrap.dedent("".join(lines[index + 1:end])),
                           before="".join(lines[prose_start:index])))
        prose_start = index = end + 1
    return found


def guide_pages() -> list[Path]:
    """README.md and every page of the guide."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def env_for(mock_url: str) -> dict[str, str]:
    """The environment a reader's shell has: assay on PATH, OpenAI pointed at the mock."""
    return {**os.environ, "OPENAI_BASE_URL": mock_url, "OPENAI_API_KEY": "dummy",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def copy_examples(into: Path) -> Path:
    """A throw-away copy of examples/, the folder the pages' commands run in."""
    shutil.copytree(ROOT / "examples", into / "examples",
                    ignore=shutil.ignore_patterns("*.db", "*.db-*", "results", "__pycache__"))
    return into


class Reader:
    """Runs a page's blocks in order, in one copy of examples/, as a reader would."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = dict(env)
        self.background: list[subprocess.Popen[str]] = []

    def run(self, block: Block) -> None:
        cwd = self.root / "examples" / block.example if block.example else self.root
        if block.language == "python":
            done = subprocess.run([sys.executable, "-c", block.code], cwd=cwd,
                                  capture_output=True, text=True, env=self.env, timeout=300)
            assert done.returncode == 0, f"{block.where}\n{done.stdout}\n{done.stderr}"
            return
        for command, exits in shell_lines(block.code):
            cwd = self.run_line(block, command, cwd, exits)

    def run_line(self, block: Block, command: str, cwd: Path,
                 exits: tuple[int, ...] = (0, 1)) -> Path:
        """One command; returns the folder the next one runs in (``cd`` moves it)."""
        words = shlex.split(command)
        if words[0] == "cd" and len(words) == 2:
            return (cwd / words[1]).resolve()
        if words[0] == "export" and len(words) == 2:
            name, _, value = words[1].partition("=")
            self.env[name] = os.path.expandvars(value)
            return cwd
        command = PLACEHOLDER.sub(lambda m: self.run_id(m.group(1), command, cwd), command)
        if command.endswith("&"):
            self.start(command[:-1], cwd)
            return cwd
        done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True,
                              text=True, env=self.env, timeout=300)
        said = f"{block.where}: {command}\n{done.stdout}\n{done.stderr}"
        assert done.returncode in exits, f"exit {done.returncode}, not {exits}: {said}"
        assert "Traceback" not in done.stderr, said
        return cwd

    def start(self, command: str, cwd: Path) -> None:
        """A command left running (a server), once it has said it is ready."""
        process = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, text=True,
                                   env=self.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.background.append(process)
        assert process.stdout is not None
        banner = process.stdout.readline()  # printed once its port is bound
        assert process.poll() is None, f"{command} stopped at once: {banner}"

    def run_id(self, placeholder: str, command: str, cwd: Path) -> str:
        from assay.store.runs import RunStore

        store = re.search(r"--store\s+(\S+)", command)
        path = (cwd / store.group(1)) if store else cwd / ".assay" / "runs.db"
        runs = [r.id for r in RunStore(f"sqlite:///{path}").run_records()]
        assert runs, f"{command}: no run is stored in {path} for {placeholder}"
        return runs[0] if placeholder in ("RUN_ID", "RUN_B") else runs[-1]

    def close(self) -> None:
        for process in self.background:
            process.terminate()
            process.wait(timeout=10)
            if process.stdout is not None:
                process.stdout.close()


def shell_lines(code: str) -> list[tuple[str, tuple[int, ...]]]:
    """A bash block's commands, ``\\`` continuations joined, each with the exit codes it may
    end with: the one its comment names (``# exits 1: ...``), else 0 or 1."""
    commands: list[tuple[str, tuple[int, ...]]] = []
    pending = ""
    for line in code.splitlines():
        text = pending + line
        if text.rstrip().endswith("\\"):
            pending = text.rstrip()[:-1] + " "
            continue
        pending = ""
        code_part = strip_comment(text)
        command = code_part.strip()
        said = EXITS.match(text[len(code_part):])
        if command:
            commands.append((command, (int(said.group(1)),) if said else (0, 1)))
    return commands


def strip_comment(line: str) -> str:
    """A line without its trailing ``# comment`` (a ``#`` inside quotes is kept)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line
