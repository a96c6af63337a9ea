#!/usr/bin/env bash
# examples/realworld/overhead.sh REPEATS PROGRAM — a clean twin's training seconds (from the
# start after its imports to its last marker, which prints them) run plain on glibc's malloc,
# plain with jemalloc preloaded, and under `leakgate exec`, interleaved; one line a repeat.
#
#   LEAKGATE=build/harness/leakgate PYTHON=python3 examples/realworld/overhead.sh 2 hf_forward_hook
set -euo pipefail
n=${1:?usage: overhead.sh REPEATS PROGRAM} prog=${2:?usage: overhead.sh REPEATS PROGRAM}
here=$(cd "$(dirname "$0")" && pwd)
lg=${LEAKGATE:-leakgate} py=${PYTHON:-python3}
je=${JEMALLOC:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
marker='^epoch [0-9]+ done'
[ "$prog" = tft_registry ] && marker='^trial [0-9]+ done'
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
secs() { grep -E "$marker" "$1" | tail -1 | awk '{print $(NF-1)}'; }
for i in $(seq "$n"); do
    "$py" "$here/$prog.py" clean >"$out/glibc" 2>&1
    LD_PRELOAD=$je "$py" "$here/$prog.py" clean >"$out/je" 2>&1
    rc=0
    "$lg" exec --no-reports --out "$out/exec-out" --session-marker "$marker" -- \
        "$py" "$here/$prog.py" clean >"$out/exec" 2>&1 || rc=$?
    g=$(secs "$out/glibc") j=$(secs "$out/je") e=$(secs "$out/exec")
    echo "$prog $i: glibc $g s, jemalloc $j s, exec $e s (exit $rc);" \
         "exec/glibc $(echo "scale=2; $e / $g" | bc), exec/jemalloc $(echo "scale=2; $e / $j" | bc)"
done
