#!/usr/bin/env bash
# Run every benchmark one after the other and print their tables.
#
#   bash benchmarks/run_all.sh            # full run (about 15 minutes on 2 cores, peers included)
#   QUICK=1 bash benchmarks/run_all.sh    # small smoke-sized run of each
#   REPEAT=3 bash benchmarks/run_all.sh   # median of 3 for the throughput grids
#
# Each script's output is also kept in benchmarks/results/<name>.raw (not committed).
# PYTHON picks the interpreter (default: the project's .venv). The peers' virtualenvs are
# created under benchmarks/.venvs on first use, which needs PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
mkdir -p benchmarks/results

if ! "$PYTHON" -c "import openai" 2>/dev/null; then
    echo "installing openai for the openai-sdk comparison" >&2
    "$PYTHON" -m pip install --quiet openai
fi

if [ -n "${QUICK:-}" ]; then
    ceiling_args=(--processes 1,2 --seconds 2)
    throughput_args=(--quick)
    suite_args=(--quick)
    peers_args=(--n 40 --latency 0,50 --max-seconds 3)
    calibration_args=(--quick)
else
    ceiling_args=()
    throughput_args=(--repeat "${REPEAT:-1}")
    suite_args=(--repeat "${REPEAT:-1}")
    peers_args=()
    calibration_args=(--repeat "${REPEAT:-1}")
fi

run() {
    local name=$1
    shift
    echo
    "$PYTHON" "benchmarks/$name.py" "$@" | tee "benchmarks/results/$name.raw"
}

run mock_ceiling "${ceiling_args[@]}"
run judge_throughput "${throughput_args[@]}"
run suite_throughput "${suite_args[@]}"
run calibration_throughput "${calibration_args[@]}"
run peers "${peers_args[@]}"
