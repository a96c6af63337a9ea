#!/bin/sh
# census_cost.sh — the exact census's cost under `leakgate exec`: each program run with the
# census (the default) and without it (LEAKGATE_CENSUS=0 in its environment), in turn, RUNS
# times; prints the median wall seconds of each and their ratio (docs/benchmarks.md).
#
#   tests/bench/census_cost.sh BUILD_DIR [RUNS]
set -eu
build=${1:?usage: census_cost.sh BUILD_DIR [RUNS]}
runs=${2:-7}
here=$(cd "$(dirname "$0")" && pwd)
lg="$build/harness/leakgate"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pair() { # NAME ENV... -- CMD...
    name=$1
    shift
    python3 - "$runs" "$name" "$lg" "$out" "$@" <<'PY'
import os, statistics, subprocess, sys, time
runs, name, lg, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
rest = sys.argv[5:]
cut = rest.index("--")
env_kv, cmd = rest[:cut], rest[cut + 1:]
base = dict(os.environ, **dict(kv.split("=", 1) for kv in env_kv))
t = {"on": [], "off": []}
for _ in range(runs):
    for mode in ("on", "off"):
        env = dict(base, LEAKGATE_CENSUS="1" if mode == "on" else "0")
        t0 = time.monotonic()
        subprocess.run([lg, "exec", "--no-reports", "--out", os.path.join(out, mode)] + cmd,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t[mode].append(time.monotonic() - t0)
on, off = statistics.median(t["on"]), statistics.median(t["off"])
print(f"{name:24s} census {on:7.3f} s  without {off:7.3f} s  ratio {on / off:5.2f}")
PY
}
pair "malloc-heavy C" -- -- "$build/tests/exec_census" heavy 20
pair "malloc-heavy, big blocks" -- -- "$build/tests/exec_census" heavy-big 20
pair "exec_clean (C example)" -- -- "$build/tests/exec_clean" 16
pair "exec_workload.py" PYTHONMALLOC=malloc -- --session-marker '^epoch' -- python3 \
    "$here/exec_workload.py" 12
