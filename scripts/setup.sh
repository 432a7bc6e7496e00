#!/usr/bin/env bash
# Set up assay for development in ./.venv: the package, its test tools and the embedded judge.
#
# llama-cpp-python compiles from source (about 4-12 minutes on 2 cores). It is built once for a
# portable x86-64 baseline (no -march=native, no AMX: native builds crash on some virtual CPUs)
# and the wheel is kept in .cache/wheels, so later runs of this script install it in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
LLAMA_VERSION="0.3.36"
WHEELS=".cache/wheels"

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "is ignored" || true

if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "assay setup: building llama-cpp-python $LLAMA_VERSION (one time, several minutes)..."
  mkdir -p "$WHEELS"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF" \
    .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir -w "$WHEELS" \
    "llama-cpp-python==$LLAMA_VERSION" 2>&1 | grep -v "is ignored" || true
fi
.venv/bin/python -m pip install --quiet --find-links "$WHEELS" \
  "llama-cpp-python==$LLAMA_VERSION" 2>&1 | grep -v "is ignored" || true
.venv/bin/python -m pip install --quiet --find-links "$WHEELS" -e ".[local]" --group dev 2>&1 \
  | grep -v "is ignored" || true
# Compile assay's own modules once: the command starts faster, and so does every test that
# runs it as a subprocess (an editable install is not byte-compiled by pip).
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m compileall -q src >/dev/null
.venv/bin/python -c "import assay, llama_cpp; print('assay', assay.__version__, 'ready')"
