#!/usr/bin/env bash
# Set up assay for development in ./.venv: the package, its test tools and the embedded judge.
#
# The embedded judge runs llama.cpp from the prebuilt xllamacpp wheel (pinned below): nothing is
# compiled. Where no such wheel installs (another platform), or when asked with
# ASSAY_LOCAL_BACKEND=llama-cpp-python, llama-cpp-python is compiled from source instead (about
# 4-12 minutes on 2 cores), for a portable x86-64 baseline (no -march=native, no AMX: native
# builds crash on some virtual CPUs); its wheel is kept in .cache/wheels, so later runs of this
# script install it in seconds. The same variable chooses the backend at run time.
#
# --both-backends installs llama-cpp-python beside xllamacpp (compiled once, as above), so the
# tests run the embedded judge on each: scripts/test.sh asks for it, since the fallback is
# code users run and must not go untested.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
XLLAMACPP_VERSION="2026.10.11549"
LLAMA_VERSION="0.3.36"
WHEELS=".cache/wheels"
BACKEND="${ASSAY_LOCAL_BACKEND:-}"
BOTH=0
for arg in "$@"; do
  case "$arg" in
    --both-backends) BOTH=1 ;;
    *) echo "assay setup: unknown option $arg (expected --both-backends)" >&2; exit 2 ;;
  esac
done

# pip, without the warnings about this machine's absent local indexes, failing when pip fails.
pip_quiet() {
  local out status=0
  out=$(.venv/bin/python -m pip "$@" 2>&1) || status=$?
  printf '%s\n' "$out" | grep -v -e "is ignored" -e '^$' || true
  return "$status"
}

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
pip_quiet install --quiet --upgrade pip

# llama-cpp-python from its wheel in $WHEELS, built there first if it is not yet.
install_llama_cpp_python() {
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    echo "assay setup: building llama-cpp-python $LLAMA_VERSION (one time, several minutes)..."
    mkdir -p "$WHEELS"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF" \
      pip_quiet wheel --quiet --no-deps --no-cache-dir -w "$WHEELS" \
      "llama-cpp-python==$LLAMA_VERSION"
  fi
  pip_quiet install --quiet --find-links "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
}

EXTRA="local"
if [ "$BACKEND" = "llama-cpp-python" ] || ! pip_quiet install --quiet \
    --only-binary xllamacpp "xllamacpp==$XLLAMACPP_VERSION"; then
  EXTRA="local-llama-cpp"
  if [ "$BACKEND" != "llama-cpp-python" ]; then
    echo "assay setup: no prebuilt xllamacpp $XLLAMACPP_VERSION installs here (above);" \
      "the embedded judge will run on llama-cpp-python instead"
  fi
  install_llama_cpp_python
elif [ "$BOTH" = 1 ]; then
  EXTRA="local,local-llama-cpp"
  install_llama_cpp_python
fi
pip_quiet install --quiet --find-links "$WHEELS" -e ".[$EXTRA]" --group dev
# Compile assay's own modules once: the command starts faster, and so does every test that
# runs it as a subprocess (an editable install is not byte-compiled by pip).
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m compileall -q src >/dev/null
.venv/bin/python -c "import assay
from assay.llm.providers.local_backends import chosen
print('assay', assay.__version__, 'ready; the embedded judge runs on', chosen())"
