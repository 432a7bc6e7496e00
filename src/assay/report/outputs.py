"""Output files never overwrite input files.

``assay run s.jsonl -o s.jsonl`` must not empty the suite it is about to read, and a results
file must not land on a targets file or a recorded target's outputs. Every output path is
checked against every file the run reads (compared by real path and, when both exist, by
device and inode, so symlinks and hard links are caught too) before anything is opened.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from assay.errors import ConfigError


def _same(a: Path, b: Path) -> bool:
    try:
        if a.resolve() == b.resolve():
            return True
    except OSError:
        return False
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_outputs(outputs: Mapping[str, Path], inputs: Iterable[Path]) -> None:
    """Raise ConfigError when an output is an input, or two outputs are the same file."""
    sources = [Path(p) for p in inputs]
    named = list(outputs.items())
    for option, path in named:
        for source in sources:
            if _same(Path(path), source):
                raise ConfigError(
                    f"{option} {path} is also an input of this run ({source}); writing it "
                    "would destroy it. Choose another output path.", code="output_is_input")
    for i, (option, path) in enumerate(named):
        for other, other_path in named[i + 1:]:
            if _same(Path(path), Path(other_path)):
                raise ConfigError(f"{option} and {other} are the same file ({path})",
                                  code="output_is_input")


def check_writable(option: str, path: Path) -> None:
    """Raise ConfigError now (before a run) when ``path`` cannot be written: its directory
    cannot be created or written, or it is a directory itself."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{option} {path} is a directory; give a file path",
                          code="unwritable_output")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot create its directory: "
                          f"{exc.strerror or exc}", code="unwritable_output") from None
    if not os.access(path.parent, os.W_OK | os.X_OK) or (
            path.exists() and not os.access(path, os.W_OK)):
        raise ConfigError(f"{option} {path}: not writable (permission denied)",
                          code="unwritable_output")
