#!/usr/bin/env bash
# Set up, then run every test: the default suite, then the slow ones (embedded model, drills).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -m "not slow" -q "$@"
.venv/bin/python -m pytest -m slow -q "$@"
