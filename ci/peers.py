"""ci/peers.py — the measurements behind docs/peers.md (run by ci/peers, which sets up).

For each program and tool: the exit status or outcome, whether it flagged the leak, after how
many sessions, what it named, and the wall time as a ratio to the bare program measured in the
same run (runs interleaved, medians over --reps). Every figure printed is measured here.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TRAIN = os.path.join(ROOT, "examples", "pytorch-trainer", "train.py")
MARKER = "^session [0-9]+ done"


def sh(cmd, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return p.returncode, p.stdout, time.monotonic() - t0


def leakgate_named(text):
    """The lines of exec's printout that name the leak."""
    out = []
    for line in text.splitlines():
        if line.startswith("refs ") and " leak " in line:
            out.append(re.sub(r".*first in session \d+: ", "", line).strip())
        if "kept alive by" in line:
            out.append(re.sub(r"^\s*python: ", "", line).strip())
        if re.match(r"^\s+[0-9.]+ (KiB|MiB)/session", line) and not out[-1:] == [line]:
            out.append(" ".join(line.split()))
    return out[:3]


def memray_leaks(path, user_file):
    import memray
    recs = list(memray.FileReader(path).get_leaked_allocation_records(merge_threads=True))
    total = sum(r.size for r in recs)
    mine = {}
    for r in recs:
        frame = next(((f, fn, ln) for fn, f, ln in r.stack_trace() if f == user_file), None)
        key = "%s:%d in %s" % (os.path.basename(frame[0]), frame[2], frame[1]) if frame else "?"
        mine[key] = mine.get(key, 0) + r.size
    top = sorted(mine.items(), key=lambda kv: -kv[1])[:2]
    return total, top


def mb(n):
    return "%.1f MB" % (n / 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--params-mb", type=float, default=4)
    ap.add_argument("--rust-params-mb", type=float, default=32)
    a = ap.parse_args()
    lg = os.path.join(a.build, "harness", "leakgate")
    py = sys.executable
    tmp = tempfile.mkdtemp(prefix="lg-peers-")
    targs = [TRAIN, "--sessions", str(a.sessions), "--params-mb", str(a.params_mb)]
    rows = []
    for fixed in (False, True):
        fx = ["--fixed"] if fixed else []
        name = "fixed" if fixed else "buggy"
        times = {k: [] for k in ("bare", "lg-api", "lg-marker", "memray", "memray-native")}
        res = {}
        for rep in range(a.reps):
            rc, out, t = sh([py] + targs + ["--no-api"] + fx)
            assert rc == 0, out
            times["bare"].append(t)
            d = os.path.join(tmp, "lg-%s-%d" % (name, rep))
            rc, out, t = sh([lg, "exec", "--quiet", "--out", d, "--", py] + targs + fx)
            times["lg-api"].append(t)
            res["lg-api"] = (rc, out)
            d = os.path.join(tmp, "lgm-%s-%d" % (name, rep))
            rc, out, t = sh([lg, "exec", "--quiet", "--session-marker", MARKER, "--out", d, "--",
                             py, "-m", "leakgate"] + targs + ["--no-api"] + fx)
            times["lg-marker"].append(t)
            res["lg-marker"] = (rc, out)
            for mode, extra in (("memray", []), ("memray-native", ["--native"])):
                f = os.path.join(tmp, "%s-%s-%d.bin" % (mode, name, rep))
                rc, out, t = sh([py, "-m", "memray", "run", "-q", "--trace-python-allocators"]
                                + extra + ["-o", f] + targs + ["--no-api"] + fx,
                                env={"PYTHONMALLOC": "malloc"})
                assert rc == 0, out
                times[mode].append(t)
                res[mode] = f
        bare = statistics.median(times["bare"])
        for k in ("lg-api", "lg-marker"):
            rc, out = res[k]
            rows.append(("torch " + name, "leakgate exec " + ("(API)" if k == "lg-api" else
                                                            "(marker, python -m leakgate)"),
                         {0: "PASS", 1: "LEAK", 3: "INCONCLUSIVE"}.get(rc, "exit %d" % rc),
                         rc == 1, statistics.median(times[k]) / bare,
                         "; ".join(leakgate_named(out)) or "-"))
        for k in ("memray", "memray-native"):
            total, top = memray_leaks(res[k], TRAIN)
            rows.append(("torch " + name, "memray run --trace-python-allocators" +
                         (" --native" if k == "memray-native" else "") + " (leaks at exit)",
                         "%s not freed at exit" % mb(total), None,
                         statistics.median(times[k]) / bare,
                         "; ".join("%s %s" % (mb(v), s) for s, v in top)))
        # pytest-memray: one test per session body, @pytest.mark.limit_leaks. The file carries
        # both tools' markers; each tool runs with the other's plugin blocked (-p no:leakgate,
        # -p no:memray), and leakgate's plugin passes -p on to the test's process under exec:
        # pytest-memray loaded there would wrap the body in its tracker inside every session.
        tdir = os.path.join(tmp, "pytest-" + name)
        os.makedirs(tdir, exist_ok=True)
        with open(os.path.join(tdir, "test_peer.py"), "w") as f:
            f.write(PEER_TEST % (os.path.dirname(TRAIN), fixed, a.params_mb))
        t_plain = statistics.median(sh([py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                        "-p", "no:memray", "-p", "no:leakgate"], cwd=tdir)[2]
                                    for _ in range(a.reps))
        outs = [sh([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--memray",
                    "-p", "no:leakgate"], cwd=tdir, env={"PYTHONMALLOC": "malloc"})
                for _ in range(a.reps)]
        rc, out, _ = outs[-1]
        leaked = re.findall(r"- ([0-9.]+\S+) allocated here:\n((?:\s+\S.*\n){1,6})", out)
        named = "; ".join("%s at %s" % (size, " <- ".join(
            x.strip() for x in frames.splitlines()[:3])) for size, frames in leaked[:2])
        rows.append(("torch " + name, "pytest --memray, @limit_leaks('1 MB')",
                     "FAILED" if rc else "passed", rc != 0,
                     statistics.median(o[2] for o in outs) / t_plain, named or "-"))
        outs = [sh([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:memray"],
                   cwd=tdir, env={"LEAKGATE_BIN": lg}) for _ in range(1)]
        rc, out, t = outs[0]
        rows.append(("torch " + name, "pytest, @leakgate (plugin)",
                     "FAILED" if rc else "passed", rc != 0, t / t_plain,
                     "; ".join(leakgate_named(out)) or "-"))
    # heaptrack on the Rust example
    rv = os.path.join(a.build, "bindings-rust", "target", "release", "rust-varmap")
    rargs = ["--params-mb", str(a.rust_params_mb), "--steps", "3"]
    if os.path.exists(rv):
        for fixed in (False, True):
            fx = ["--fixed"] if fixed else []
            name = "fixed" if fixed else "buggy"
            tb, tl, th = [], [], []
            for rep in range(a.reps):
                tb.append(sh([rv] + rargs + fx)[2])
                d = os.path.join(tmp, "rlg-%s-%d" % (name, rep))
                rc, out, t = sh([lg, "exec", "--quiet", "--out", d, "--", rv] + rargs + fx)
                tl.append(t)
                ho = os.path.join(tmp, "ht-%s-%d" % (name, rep))
                hrc, hout, t = sh(["heaptrack", "-o", ho, rv] + rargs + fx)
                th.append(t)
            bare = statistics.median(tb)
            rows.append(("rust " + name, "leakgate exec", {0: "PASS", 1: "LEAK"}.get(rc, rc),
                         rc == 1, statistics.median(tl) / bare,
                         "; ".join(leakgate_named(out)) or "-"))
            f = [x for x in os.listdir(tmp) if x.startswith("ht-%s-%d" % (name, a.reps - 1))][0]
            _, pr, _ = sh(["heaptrack_print", "-f", os.path.join(tmp, f), "-n", "2", "-s", "2"])
            peak = re.search(r"peak heap memory consumption: (\S+)", pr)
            leaked = re.search(r"total memory leaked: (\S+)", pr)
            peaksite = re.search(r"PEAK MEMORY CONSUMERS\n\n?(\S+) peak memory consumed over "
                                 r"\d+ calls from\n((?:.*\n){1,40})", pr)
            if peaksite:
                frames = [x for x in peaksite.group(2).splitlines()
                          if x and not x.startswith(" ")]
                user = next((x for x in frames if "rust_varmap" in x), frames[0])
                peaksite = (peaksite.group(1), "%s (first frame: %s)" % (user, frames[0][:60]))
            rows.append(("rust " + name, "heaptrack (peak / leaked at exit)",
                         "peak %s, leaked %s" % (peak and peak.group(1), leaked and leaked.group(1)),
                         None, statistics.median(th) / bare,
                         ("%s at peak from %s" % peaksite) if peaksite else "-"))
    print("| program | tool | outcome | flagged | time / bare | names |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        flag = {True: "yes", False: "no", None: "(no verdict)"}[r[3]]
        print("| %s | %s | %s | %s | %.2fx | %s |" % (r[0], r[1], r[2], flag, r[4],
                                                     r[5].replace("|", "/")))
    print("\nsessions per run: %d (leakgate: 1 warm-up + %d judged); pytest: one session per "
          "test; reps: %d; params: %s MB; machine: %s, %d cores" % (
              a.sessions, a.sessions - 1, a.reps, a.params_mb, os.uname().nodename,
              os.cpu_count()))


PEER_TEST = '''
import argparse, sys
import pytest
sys.path.insert(0, %r)
import train

ARGS = argparse.Namespace(fixed=%r, hidden=32, params_mb=%r, steps=8, features=4, horizon=6)
ARGS.n_series = max(1, int(ARGS.params_mb * 1e6 / (4 * ARGS.hidden)))
DATA = train.make_batches(8, 32, 24, 4, 6, 16, 1)
VAL = train.make_batches(2, 32, 24, 4, 6, 16, 2)
# one-time costs outside the test, for every tool alike: torch's first model, OpenBLAS's buffer
# pool (128 MiB on first sgemm), warnings registered once
train.run_session(-1, argparse.Namespace(**dict(vars(ARGS), fixed=True)), DATA, VAL)

@pytest.mark.limit_leaks("1 MB")
@pytest.mark.leakgate(sessions=5)
def test_one_session():
    train.run_session(len(train._TRAINERS), ARGS, DATA, VAL)
'''

if __name__ == "__main__":
    main()
