#!/bin/sh
# examples/python-leaks/keep_cost.sh LEAKGATE PYTHON [PROGRAM ARGS...] — what "who keeps it"
# (bindings/python/src/leakgate/_keep.py) costs at verdict time, in one run each: the walk's
# seconds and objects visited (its last line), the seconds of its four looks in the forked
# copies (which the program waits for) against the seconds since the binding's hook was
# installed, and exec's wall time.
# With no PROGRAM: the examples of this folder in API mode (torch_shapes.py needs torch in
# PYTHON). PYTHONPATH must reach the binding (bindings/python/src). docs/benchmarks.md, "Who
# keeps it: cost at verdict time".
set -eu
leakgate=${1:?usage: keep_cost.sh LEAKGATE PYTHON [PROGRAM ARGS...]}
python=${2:?usage: keep_cost.sh LEAKGATE PYTHON [PROGRAM ARGS...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
one() {  # one() LABEL EXEC-OPTIONS -- ARGS...: exec's wall time and the attribution's lines
    label=$1
    shift
    start=$(date +%s.%N)
    rc=0
    "$leakgate" exec --quiet --no-reports --out "$out/r" "$@" >"$out/log" 2>&1 || rc=$?
    end=$(date +%s.%N)
    cat "$out/r/results.jsonl" >>"$out/log" 2>/dev/null || true
    walk=$(grep -a -m1 -o 'python: who keeps it: [0-9]* objects visited in [0-9.]* s' "$out/log" || true)
    looks=$(grep -a -m1 -o 'its 4 looks took [0-9.]* s in the forked copies, which the program waits for, of the [0-9.]* s' "$out/log" || true)
    path=$(grep -a -m1 -c 'python: kept alive by:' "$out/log" || true)
    printf '%s: exit %s, exec wall %.1f s; %s; %s; a path: %s\n' "$label" "$rc" \
        "$(echo "$end - $start" | bc)" "${walk:-no walk}" "${looks:-no looks}" "$path"
}
if [ $# -gt 0 ]; then
    one "$*" "$@"
    exit 0
fi
cd "$here"
one "registry.py registry api" -- "$python" registry.py registry api
one "registry.py classattr api" -- "$python" registry.py classattr api
one "registry.py thread api" -- "$python" registry.py thread api
if "$python" -c 'import torch' 2>/dev/null; then
    one "torch_shapes.py hook api" -- "$python" torch_shapes.py hook api
    one "torch_shapes.py optimizer api" -- "$python" torch_shapes.py optimizer api
    one "loader_iters.py api" -- "$python" loader_iters.py api
else
    echo "torch_shapes.py: SKIP, $python has no torch"
fi
