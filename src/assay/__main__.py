"""The ``assay`` command's entry point (``python -m assay`` too).

``assay --version`` is answered before the command line framework and the library are
imported: asking which version is installed should not cost a second.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from assay import __version__

        print(f"assay {__version__}")
        return
    from assay.cli import main as run_command

    run_command()


if __name__ == "__main__":
    main()
