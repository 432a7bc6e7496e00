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
    """The state of the git working tree holding ``where`` (a file or folder), or None."""
    folder = where if where.is_dir() else where.parent
    commit = _git(folder, "rev-parse", "HEAD")
    if not commit:
        return None
    branch = _git(folder, "symbolic-ref", "--short", "-q", "HEAD") or next(
        (os.environ[name] for name in CI_BRANCH_VARIABLES if os.environ.get(name)), None)
    status = _git(folder, "status", "--porcelain", "--untracked-files=no")
    return GitTree(commit=commit, branch=branch or None, dirty=bool(status))


__all__ = ["GitTree", "git_tree"]
