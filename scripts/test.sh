#!/usr/bin/env bash
# Set up, check and run every test: lint and types, the fast in-process suite, then the marked
# ones (embedded model, fault drills, fuzzing, PostgreSQL, browser, trace integrations, the
# guide's build).
set -euo pipefail
cd "$(dirname "$0")/.."
# Both builds of the embedded judge: the prebuilt one users get, and the compiled fallback.
bash scripts/setup.sh --both-backends
# Byte-code caches on: many tests run the assay command as a subprocess, and compiling the
# package from source in each one would dominate the run.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/ruff check src tests
.venv/bin/mypy
# A throw-away PostgreSQL server for the store tests (tests marked postgres fail under CI
# without it).
ASSAY_TEST_POSTGRES_URL="$(bash scripts/postgres.sh start)"
export ASSAY_TEST_POSTGRES_URL
trap 'bash scripts/postgres.sh stop' EXIT
# Debian's Chromium for the browser tests; with CI set, a missing browser or server fails the
# marked tests instead of skipping them.
ASSAY_CHROMIUM="$(bash scripts/browser.sh)"
export ASSAY_CHROMIUM
export CI="${CI:-true}"
MARKED="slow or postgres or drill or fuzz or browser or process or cluster or traces or docs"
# The in-process tests on every core and one worker more (some tests wait on timeouts, not
# the CPU), a test module per worker (its fixtures built once). The marked pass stays on
# one: its drills time processes, and one long embedded-model module would set its pace.
WORKERS=$(($(nproc) + 1))
.venv/bin/python -m pytest -m "not ($MARKED)" -q -n "$WORKERS" --dist loadfile "$@"
# The marked pass: pytest exits 5 when a selection holds no test, which is not a failure here.
status=0
.venv/bin/python -m pytest -m "$MARKED" -q "$@" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then
  exit "$status"
fi
