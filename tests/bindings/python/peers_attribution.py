"""What naming Python lines costs, beside memray, on the same program in one run
(docs/peers.md, "Python lines"). Each configuration runs in turn, interleaved, REPS times; the
table gives the median wall and CPU time (user + system of every process: leakgate, the agent's
program, its forks, memray's) and both as ratios to the bare program of the same run.

    python3 tests/bindings/python/peers_attribution.py --leakgate BUILD/harness/leakgate \\
        --python VENV/bin/python [--reps 5] [--program examples/python-leaks/memo.py] \\
        [--arg json] [--short]

VENV needs memray (pip install memray) for its rows, and sees the binding's sources (PYTHONPATH
or bindings/python/dev-install); the leakgate rows run in marker mode with ``python -m leakgate``.
The program gets --arg (repeated) and --epochs; sessions are its "epoch N done" lines; --short
leaves out the two rows that trace every session (a minute each on memo.py).
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def configs(a, out):
    prog = [a.program] + a.arg + [str(a.epochs)]
    exec_ = [a.leakgate, "exec", "--quiet", "--no-reports", "--out", out,
             "--session-marker", "^epoch [0-9]+ done", "--", a.python, "-m", "leakgate"] + prog
    memray = [a.python, "-m", "memray", "run", "-q", "-f", "-o",
              os.path.join(out, "memray.bin"), "--trace-python-allocators"]
    long = [] if a.short else [
        ("leakgate exec, once armed traced to the end (LEAKGATE_PY_SESSIONS=0, 16 frames)",
         {"LEAKGATE_PY_SESSIONS": "0"}, exec_),
        ("leakgate exec, tracemalloc from the start (LEAKGATE_PY_TRACEMALLOC=16)",
         {"LEAKGATE_PY_TRACEMALLOC": "16"}, exec_)]
    return [
        ("bare", {}, [a.python] + prog),
        ("leakgate exec, attribution off (LEAKGATE_PY_ATTRIBUTION=0)",
         {"LEAKGATE_PY_ATTRIBUTION": "0"}, exec_),
        ("leakgate exec (default: armed when a channel leaks)", {}, exec_)] + long + [
        ("memray run --trace-python-allocators", {}, memray + prog),
        ("memray run --trace-python-allocators --native", {}, memray + ["--native"] + prog),
    ]


def run(env, cmd):
    e = dict(os.environ)
    e.update(env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leakgate", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--program", default=os.path.join(SRC, "examples", "python-leaks", "memo.py"))
    ap.add_argument("--epochs", type=int, default=24)
    ap.add_argument("--arg", action="append", default=[])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--short", action="store_true")
    a = ap.parse_args()
    out = tempfile.mkdtemp(prefix="leakgate-peers-")
    rows = configs(a, out)
    times = {name: [] for name, _, _ in rows}
    said = {}
    for _ in range(a.reps):
        for name, env, cmd in rows:
            wall, cpu, rc, text = run(env, cmd)
            times[name].append((wall, cpu))
            lines = [x for x in text.splitlines() if x.startswith(("LEAK", "PASS", "INCONC"))]
            named = [x.strip() for x in text.splitlines()
                     if x.strip().startswith("python: +")][:1]
            said[name] = "exit %d%s%s" % (rc, "; " + lines[0].split(" over ")[0] if lines else "",
                                          "; " + named[0] if named else "")
    bare_w = statistics.median(w for w, _ in times["bare"])
    bare_c = statistics.median(c for _, c in times["bare"])
    print("program: %s %d; reps: %d; python: %s; load: %s"
          % (" ".join([os.path.relpath(a.program, SRC)] + a.arg), a.epochs, a.reps, a.python,
             " ".join("%.1f" % x for x in os.getloadavg())))
    print()
    print("| configuration | wall (median) | / bare | CPU (median) | / bare | outcome |")
    print("|---|---|---|---|---|---|")
    for name, _, _ in rows:
        w = statistics.median(x for x, _ in times[name])
        c = statistics.median(x for _, x in times[name])
        print("| %s | %.2f s | %.2fx | %.2f s | %.2fx | %s |"
              % (name, w, w / bare_w, c, c / bare_c, said[name]))


if __name__ == "__main__":
    main()
