#!/usr/bin/env bash
# tests/bindings/run_pip_install.sh PYTHON BUILD_DIR SOURCE_DIR — `pip install ./bindings/python`
# is the whole install (ctest test_bindings_pip_install, issue 34): in a fresh virtualenv (no
# system site-packages), pip builds the package from the checkout (scikit-build-core and pytest
# from PyPI, leakgate's native parts with the project's CMake), and a two-test file
# (@pytest.mark.leakgate(sessions=10, warmup=2) on a leaking and a clean test) must give
# "1 failed, 1 passed" with no PATH and no LEAKGATE_* set: the binary, the agent and libleakgate
# are the package's own. Then `pip wheel ./bindings/python`: the wheel installs into a second fresh
# venv, its leakgate runs, and needs nothing outside the package beyond glibc and the C++ runtime.
# Exit 77 (ctest: Skipped) when there is no venv module or PyPI cannot be reached: never a pass.
set -uo pipefail
py=$1 build=$2 src=$3
work=$build/bindings-pip
fail() { echo "FAIL: $*"; exit 1; }
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "SKIP: $py has no venv module (Debian: python3-venv)"; exit 77
fi
rm -rf "$work/venv" "$work/venv-wheel" "$work/wheels" "$work/t"
mkdir -p "$work/t" "$work/wheels"
"$py" -m venv "$work/venv" || fail "python3 -m venv"
pip=("$work/venv/bin/python" -m pip --disable-pip-version-check)
if ! "${pip[@]}" download -q --no-deps --retries 0 --timeout 15 -d "$work/probe" \
        scikit-build-core >"$work/probe.log" 2>&1; then
    cat "$work/probe.log"
    echo "SKIP: PyPI cannot be reached (pip download scikit-build-core failed): not tested"
    exit 77
fi

# the install: what a user types (the build folder kept here, so a rerun rebuilds what changed)
skb=(--config-settings="build-dir=$work/skbuild")
"${pip[@]}" install -q "${skb[@]}" "$src/bindings/python" pytest ||
    fail "pip install $src/bindings/python"
"$work/venv/bin/python" -m leakgate --where || fail "python -m leakgate --where: no binary"
cat >"$work/t/test_two.py" <<'PY'
import pytest

KEEP = []


@pytest.mark.leakgate(sessions=10, warmup=2)
def test_leaking():
    KEEP.append(bytearray(256 * 1024))


@pytest.mark.leakgate(sessions=10, warmup=2)
def test_clean():
    rows = [bytearray(1024) for _ in range(100)]
    assert len(rows) == 100
PY
(cd "$work/t" && env -i HOME="$work/t" "$work/venv/bin/python" -m pytest -p no:cacheprovider \
    -q test_two.py) >"$work/t/out.txt" 2>&1
rc=$?
cat "$work/t/out.txt"
[ $rc -eq 1 ] || fail "pytest exited $rc, expected 1 (one test failed)"
grep -q "1 failed, 1 passed" "$work/t/out.txt" || fail "not '1 failed, 1 passed'"
grep -q "FAILED test_two.py::test_leaking - Failed: leakgate: LEAK" "$work/t/out.txt" ||
    fail "the leaking test did not fail as a LEAK"

# the wheel, into a second fresh venv; its binary needs nothing but glibc and the C++ runtime
"${pip[@]}" wheel -q --no-deps "${skb[@]}" -w "$work/wheels" "$src/bindings/python" ||
    fail "pip wheel $src/bindings/python"
whl=$(ls "$work/wheels"/leakgate-*.whl) || fail "no wheel in $work/wheels"
echo "wheel: $(basename "$whl") ($(du -h "$whl" | cut -f1))"
"$py" -m venv "$work/venv-wheel" || fail "python3 -m venv"
"$work/venv-wheel/bin/python" -m pip install -q --no-index --no-deps "$whl" ||
    fail "pip install $whl"
env -i "$work/venv-wheel/bin/python" -m leakgate --where || fail "the wheel carries no binary"
native=$("$work/venv-wheel/bin/python" -c 'from leakgate import _bundle; print(_bundle.ROOT)')
env -i "$native/bin/leakgate" --version || fail "the wheel's leakgate does not run"
outside=$(ldd "$native/bin/leakgate" "$native/lib/leakgate/libleakgate-agent.so" |
    awk '$2 == "=>" {print $1, $3}' | grep -v " $native/" |
    grep -Ev '^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so')
[ -z "$outside" ] || fail "the wheel's binaries need libraries from outside it: $outside"
echo "PASS: pip install ./bindings/python is the whole install; the wheel is self-contained"
