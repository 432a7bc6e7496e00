#!/usr/bin/env bash
# Set up, then run every test: the default suite, then the slow ones (embedded model, drills).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -m "not slow" -q "$@"
# The slow pass: pytest exits 5 when a selection holds no test, which is not a failure here.
status=0
.venv/bin/python -m pytest -m slow -q "$@" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then
  exit "$status"
fi
