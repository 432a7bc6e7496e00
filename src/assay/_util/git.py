"""The git state of the working tree a run was made from: commit, branch and whether it had
uncommitted changes, recorded with the run so that two runs of different code never read as
"made the same way".

Read with ``git`` itself (argv only, a few seconds at most); a tree that is not a repository,
or a machine without git, has no state (None), never an error. In CI a checkout of a pull
request is on no branch: the branch CI names (``$GITHUB_HEAD_REF``, ``$GITHUB_REF_NAME``,
``$CI_COMMIT_REF_NAME``) stands in.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 5.0
CI_BRANCH_VARIABLES = ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME")


@dataclass(frozen=True)
class GitTree:
    commit: str
    branch: str | None
    dirty: bool


def _git(where: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(where), *args], capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_tree(where: Path) -> GitTree | None:
    """The state of the git working tree holding ``where`` (a file or folder), or None.

    One ``git status`` gives all three (its header names the commit and the branch, and any
    other line is a changed file): a run starts one process for it, not three."""
    folder = where if where.is_dir() else where.parent
    status = _git(folder, "status", "--porcelain=v2", "--branch", "--untracked-files=no")
    if status is None:
        return None
    lines = status.splitlines()
    header = {}
    for line in lines:
        if line.startswith("# "):
            key, _, value = line[2:].partition(" ")
            header[key] = value
    commit = header.get("branch.oid", "(initial)")
    if commit == "(initial)":  # no commit yet
        return None
    branch = header.get("branch.head", "(detached)")
    if branch == "(detached)":
        branch = next((os.environ[name] for name in CI_BRANCH_VARIABLES
                       if os.environ.get(name)), "")
    dirty = any(not line.startswith("#") for line in lines)
    return GitTree(commit=commit, branch=branch or None, dirty=dirty)


__all__ = ["GitTree", "git_tree"]
