#!/bin/sh
# keep_cost.sh — what naming the root of a leak costs under `leakgate exec` (issue 41): each
# leaking program run with the retention paths (the default) and without them (LEAKGATE_KEEP=0
# in its environment), in turn, RUNS times; prints the median wall seconds of each and their
# ratio. The cost falls only on runs the census has called leaks: one session's allocations
# recorded with their stacks, one scan of the roots (docs/exec.md, "Who keeps it").
#
#   tests/bench/keep_cost.sh BUILD_DIR [RUNS]
set -eu
build=${1:?usage: keep_cost.sh BUILD_DIR [RUNS]}
runs=${2:-7}
lg="$build/harness/leakgate"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pair() { # NAME -- CMD...
    name=$1
    shift 2
    python3 - "$runs" "$name" "$lg" "$out" "$@" <<'PY'
import os, statistics, subprocess, sys, time
runs, name, lg, out, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
t = {"on": [], "off": []}
for _ in range(runs):
    for mode in ("on", "off"):
        env = dict(os.environ, LEAKGATE_KEEP="1" if mode == "on" else "0")
        t0 = time.monotonic()
        r = subprocess.run([lg, "exec", "--no-reports", "--out", os.path.join(out, mode)] + cmd,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t[mode].append(time.monotonic() - t0)
        if mode == "on" and "native: " not in r.stdout:
            sys.exit(f"{name}: no retention path printed:\n{r.stdout}")
on, off = statistics.median(t["on"]), statistics.median(t["off"])
print(f"{name:28s} paths {on:7.3f} s  without {off:7.3f} s  ratio {on / off:5.2f}")
PY
}
pair "C global, 40 sessions" -- "$build/tests/exec_keep" global 40
pair "C chain, 40 sessions" -- "$build/tests/exec_keep" chain 40
pair "malloc-heavy leak, 20 sessions" -- "$build/tests/exec_census" heavy-leak 20
