#!/usr/bin/env bash
# tests/bindings/run_python.sh PYTHON BUILD_DIR SOURCE_DIR — the Python binding's tests (ctest
# test_bindings_python) against this build's leakgate, agent and libleakgate: bindings/python's
# sources are installed into a fresh virtualenv (which sees the interpreter's site-packages, so
# Debian's pytest and python3-torch are there) as pip would install them, minus the native parts
# (bindings/python/dev-install: offline, no second native build; tests/bindings/run_pip_install.sh
# tests `pip install ./bindings/python` itself), and tests/bindings/python runs with pytest.
# Exit 77 (ctest: Skipped) when the toolchain is absent (no venv module, no pytest) and when a
# test skipped: a skip is never a pass.
#
#   run_python.sh PYTHON BUILD_DIR SOURCE_DIR          # every test but test_torch*.py and
#                                                     # test_realworld.py
#   run_python.sh PYTHON BUILD_DIR SOURCE_DIR torch    # test_torch*.py alone (ctest
#                                                     # test_bindings_torch: SKIP without torch)
#   run_python.sh PYTHON BUILD_DIR SOURCE_DIR realworld  # test_realworld.py alone (ctest
#                                                     # test_bindings_realworld: SKIP without
#                                                     # lightning, pytorch_forecasting, transformers)
#
# PYTHON may itself be a virtualenv's (LG_REALWORLD_PYTHON: where those packages are installed):
# its site-packages are then added to the test venv's path, as --system-site-packages adds the
# base interpreter's.
set -euo pipefail
py=$1 build=$2 src=$3 which=${4:-}
venv=$build/bindings-py/venv${which:+-$which}
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "SKIP: $py has no venv module (Debian: python3-venv)"; exit 77
fi
if ! "$py" -c 'import pytest' 2>/dev/null; then
    echo "SKIP: $py has no pytest (Debian: python3-pytest)"; exit 77
fi
rm -rf "$venv"
"$py" -m venv --without-pip --system-site-packages "$venv"
"$src/bindings/python/dev-install" "$venv/bin/python"
# a virtualenv's PYTHON: its own site-packages (with their .pth files) after the test venv's
"$py" -c 'import site, sys; sys.prefix != sys.base_prefix and print("\n".join(
    "import site; site.addsitedir(%r)" % d for d in site.getsitepackages()))' \
    >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/parent-venv.pth"
export LEAKGATE_BIN=$build/harness/leakgate
export LEAKGATE_TEST_LIB=$build/agent/libleakgate.so
export LEAKGATE_SOURCE_DIR=$src
cd "$build/bindings-py"
if [ "$which" = torch ]; then
    tests=("$src"/tests/bindings/python/test_torch*.py)
elif [ "$which" = realworld ]; then
    tests=("$src/tests/bindings/python/test_realworld.py")
else
    tests=("$src/tests/bindings/python" --ignore "$src/tests/bindings/python/test_realworld.py")
    for t in "$src"/tests/bindings/python/test_torch*.py; do tests+=(--ignore "$t"); done
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
"$venv/bin/python" -m pytest -p no:cacheprovider -q -rs "${tests[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# 5: nothing collected (a module that skips whole, as test_torch.py does without torch)
if { [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ]; } && grep -Eq '^SKIPPED|[0-9]+ skipped' "$log"; then
    echo "SKIP: a test above skipped (its SKIPPED line says why): exit 77, not a pass"
    exit 77
fi
exit "$rc"
