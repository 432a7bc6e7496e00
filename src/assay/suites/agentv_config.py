"""AgentV's project settings file, ``.agentv/config.yaml``: which input files are guidelines.

::

    # .agentv/config.yaml
    guideline_patterns: ["**/*.instructions.md", "prompts/**/*.md"]

A file segment of a case's input (``{type: file, value: path}``) whose path, relative to the
project root, matches one of the patterns is a guideline file, as in AgentV: its path goes to
a code judge's ``guideline_files`` (not ``input_files``), and its text reaches the agent in a
system message headed ``[[ ## Guidelines ## ]]`` instead of inline in the user's message.

The file is looked for in the suite's directory and each parent up to the project root (the
nearest directory holding ``.git``); the first one found is used. The project root is where
paths are matched from; outside a git repository it is the directory holding ``.agentv``.
AgentV takes the root from the working directory instead; the two agree when a suite is run
from its repository, and assay's choice keeps a suite's meaning independent of where it is run.

Patterns are globs as AgentV writes them (micromatch): ``**`` spans directories, ``*`` and
``?`` stay within one name, ``[abc]`` and ``{a,b}`` choose, and a wildcard does not match a
name starting with a dot unless the pattern's name starts with one too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from assay._util.yaml_source import Problem, YamlSyntaxError, load_yaml_file

__all__ = ["CONFIG_FILE", "GuidelineConfig", "glob_regex", "load_guideline_config"]

CONFIG_FILE = Path(".agentv") / "config.yaml"


@dataclass(frozen=True)
class GuidelineConfig:
    """The guideline patterns in force for a suite, and the root they are matched from."""

    patterns: tuple[str, ...] = ()
    root: Path | None = None
    source: Path | None = None
    _compiled: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)

    def is_guideline(self, file: Path) -> bool:
        """True when ``file`` (an absolute path) matches a pattern, relative to the root."""
        if not self.patterns or self.root is None:
            return False
        try:
            relative = file.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return False  # outside the project: no pattern can name it
        return any(p.fullmatch(relative) for p in self._compiled)


def load_guideline_config(suite: Path) -> tuple[GuidelineConfig, list[Problem]]:
    """The nearest ``.agentv/config.yaml`` above ``suite`` read, with any problems in it.

    A config file with problems contributes no patterns; its problems are reported (file and
    line) so the suite is not run with its guidelines silently inlined.
    """
    start = suite.resolve().parent
    git_root = next((d for d in (start, *start.parents) if (d / ".git").exists()), None)
    chain = [start, *start.parents]
    if git_root is not None:
        chain = chain[:chain.index(git_root) + 1]
    for directory in chain:
        path = directory / CONFIG_FILE
        if path.is_file():
            return _read(path, git_root or directory)
    return GuidelineConfig(), []


def _read(path: Path, root: Path) -> tuple[GuidelineConfig, list[Problem]]:
    try:
        loaded = load_yaml_file(path)
    except YamlSyntaxError as exc:
        return GuidelineConfig(), [exc.problem]
    problems = list(loaded.problems)
    data = loaded.data
    if data is None:
        return GuidelineConfig(root=root, source=path), problems
    if not isinstance(data, dict):
        mark = loaded.source.root
        return GuidelineConfig(), [*problems, Problem.at(
            mark, "the config file must be a mapping", "guideline_patterns: [glob, ...]")]
    raw = data.get("guideline_patterns")
    if raw is None:
        return GuidelineConfig(root=root, source=path), problems
    mark = loaded.source.locate(("guideline_patterns",), value=True)
    if not isinstance(raw, list) or not all(isinstance(p, str) and p for p in raw):
        return GuidelineConfig(), [*problems, Problem.at(
            mark, "guideline_patterns must be a list of glob patterns",
            "a list such as ['**/*.instructions.md']")]
    compiled = []
    for index, pattern in enumerate(raw):
        try:
            compiled.append(re.compile(glob_regex(pattern)))
        except re.error as exc:
            problems.append(Problem.at(
                loaded.source.locate(("guideline_patterns", index), value=True),
                f"guideline pattern {pattern!r} is not a valid glob: {exc}", "a glob"))
    if problems:
        return GuidelineConfig(), problems
    return GuidelineConfig(tuple(raw), root, path, tuple(compiled)), []


def glob_regex(pattern: str) -> str:
    """A regular expression matching the relative POSIX paths ``pattern`` matches."""
    pattern = pattern.replace("\\", "/")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    segments = pattern.split("/")
    out = ""
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out += r"(?:(?!\.)[^/]+(?:/(?!\.)[^/]+)*)?" if last else r"(?:(?!\.)[^/]+/)*"
            continue
        out += ("" if segment.startswith(".") else r"(?!\.)") + _segment(segment)
        if not last:
            out += "/"
    return out


def _segment(text: str) -> str:
    """One path name's glob -> regex: ``*``, ``?``, ``[...]`` and ``{a,b}``."""
    out = ""
    i = 0
    while i < len(text):
        char = text[i]
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[" and "]" in text[i + 1:]:
            end = text.index("]", i + 1)
            body = text[i + 1:end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out += "[" + body.replace("\\", "\\\\") + "]"
            i = end
        elif char == "{" and "}" in text[i:]:
            close = _closing_brace(text, i)
            if close is None:
                out += re.escape(char)
            else:
                options = _split_options(text[i + 1:close])
                out += "(?:" + "|".join(_segment(o) for o in options) + ")"
                i = close
        else:
            out += re.escape(char)
        i += 1
    return out


def _closing_brace(text: str, start: int) -> int | None:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _split_options(body: str) -> list[str]:
    options, depth, current = [], 0, ""
    for char in body:
        if char == "," and depth == 0:
            options.append(current)
            current = ""
            continue
        depth += (char == "{") - (char == "}")
        current += char
    options.append(current)
    return options
