#!/usr/bin/env bash
# tests/bindings/run_python.sh PYTHON BUILD_DIR SOURCE_DIR — the Python binding's tests (ctest
# test_bindings_python): installs bindings/python with pip into a fresh virtualenv (offline:
# --no-index --no-build-isolation, setuptools from the interpreter's site-packages, which the
# venv sees so Debian's python3-torch is there too) and runs tests/bindings/python with pytest.
# Exit 77 (ctest: Skipped) only when the toolchain is absent: no venv module, no pytest.
set -euo pipefail
py=$1 build=$2 src=$3
venv=$build/bindings-py/venv
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "SKIP: $py has no venv module (Debian: python3-venv)"; exit 77
fi
if ! "$py" -c 'import pytest, setuptools' 2>/dev/null; then
    echo "SKIP: $py has no pytest or setuptools (Debian: python3-pytest python3-setuptools)"; exit 77
fi
rm -rf "$venv"
"$py" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q --no-index --no-build-isolation "$src/bindings/python"
export LEAKGATE_BIN=$build/harness/leakgate
export LEAKGATE_TEST_LIB=$build/agent/libleakgate.so
export LEAKGATE_SOURCE_DIR=$src
cd "$build/bindings-py"
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$src/tests/bindings/python"
