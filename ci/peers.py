"""ci/peers.py — the measurements behind docs/peers.md (run by ci/peers, which sets up).

For each program and tool: the exit status or outcome, whether it flagged the leak, what it
named, and the wall and CPU time (user + system of every process the run started, reaped
children included) as ratios to the bare program measured in the same run (runs interleaved,
medians over --reps). Every figure printed is measured here. The programs, each with its
fixed twin (the false-alarm check):

- torch: the PyTorch trainer with the seed's leak (examples/pytorch-trainer/train.py);
- history, hook: PyTorch's loss kept with its graph and the forward hook never removed
  (examples/python-leaks/torch_shapes.py);
- workers: a DataLoader whose two persistent forked workers cache every item
  (examples/python-leaks/worker_cache.py);
- rust: the Rust example (examples/rust-varmap), beside heaptrack.

    ci/peers.py --build BUILD [--reps 3] [--only torch,history,hook,workers,rust]
"""
import argparse
import glob
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TRAIN = os.path.join(ROOT, "examples", "pytorch-trainer", "train.py")
SHAPES = os.path.join(ROOT, "examples", "python-leaks", "torch_shapes.py")
WORKERS = os.path.join(ROOT, "examples", "python-leaks", "worker_cache.py")
MARKER = "^session [0-9]+ done"
EPOCH = "^epoch [0-9]+ done"
VERDICT = {0: "PASS", 1: "LEAK", 3: "INCONCLUSIVE"}
PM_LIMIT = "4 KB"  # pytest-memray's per-location limit on the small programs (shapes, workers)


def sh(cmd, env=None, cwd=None, timeout=None):
    """(exit status, output, wall s, CPU s of every child reaped meanwhile)."""
    e = dict(os.environ)
    e.update(env or {})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, _ = p.communicate()
        rc = "timeout"
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rc, out, wall, cpu


def short(s, n=420):
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n - 3] + "..."


def leakgate_named(text):
    """What exec's (or the plugin's) printout names, the program's terms first: PyTorch's notes,
    who keeps it, the Python line, the leaking child processes, the ledger, then one native
    stack."""
    torch_, kept, line, kids, refs, native = [], [], [], [], [], []
    for s in text.splitlines():
        s = s.strip()
        if s.startswith("python: torch:"):
            torch_.append(s[len("python: "):])
        elif "kept alive by" in s:
            kept.append(re.sub(r"^python: ", "", s))
        elif re.match(r"python: \+[0-9.]+ \S+/session .* at ", s):
            line.append(s[len("python: "):])
        elif s.startswith("processes:"):
            kids += ["child pid %s (%s) %s/session" % m for m in re.findall(
                r"LEAK: child pid (\d+) \(([^)]*)\): its rss .*? slope ([0-9.]+ \S+)/session", s)]
        elif s.startswith("refs ") and " leak " in s:
            refs.append(re.sub(r".*first in session \d+: ", "", s))
        elif re.match(r"^[0-9.]+ (B|KiB|MiB|GiB)/session \(95%", s):
            native.append(s)
    out = torch_[:2] + kept[:1] + line[:1] + kids[:2] + refs[:1]
    return [short(x) for x in (out + native[:1] if len(out) < 2 else out)[:3]]


def memray_leaks(paths, user_file):
    """Bytes not freed at exit over memray's files, and the two largest sites by the innermost
    frame in user_file."""
    import memray
    total, mine = 0, {}
    for path in paths:
        for r in memray.FileReader(path).get_leaked_allocation_records(merge_threads=True):
            total += r.size
            frame = next(((f, fn, ln) for fn, f, ln in r.stack_trace() if f == user_file), None)
            key = "%s:%d in %s" % (os.path.basename(frame[0]), frame[2], frame[1]) \
                if frame else "?"
            mine[key] = mine.get(key, 0) + r.size
    top = sorted(((k, v) for k, v in mine.items() if k != "?"), key=lambda kv: -kv[1])[:2]
    return total, top


def pytest_memray_named(out, user):
    """pytest-memray's failure: each leaked location's size and its first frame in the user's
    file (its hybrid stack, --stacks 40), else its first three frames."""
    named = []
    for size, frames in re.findall(r"- ([0-9.]+\S+) allocated here:\n((?:[ \t]+\S.*\n)+)", out):
        fr = [x.strip() for x in frames.splitlines()]
        mine = [x for x in fr if user in x]
        named.append("%s at %s" % (size, " <- ".join(mine[:2] if mine else fr[:3])))
    return named[:2]


def mb(n):
    return "%.1f MB" % (n / 1e6)


class Table:
    def __init__(self):
        self.rows = []

    def add(self, program, tool, outcome, flagged, wall, cpu, names):
        self.rows.append((program, tool, outcome, flagged, wall, cpu, names))

    def print(self):
        print("| program | tool | outcome | flagged | wall / bare | CPU / bare | names |")
        print("|---|---|---|---|---|---|---|")
        for r in self.rows:
            flag = {True: "yes", False: "no", None: "(no verdict)"}[r[3]]
            print("| %s | %s | %s | %s | %s | %s | %s |" % (
                r[0], r[1], r[2], flag, "%.2fx" % r[4] if r[4] else "-",
                "%.2fx" % r[5] if r[5] else "-",
                ("; ".join(r[6]) if isinstance(r[6], list) else r[6] or "-").replace("|", "/")
                or "-"), flush=True)


def interleave(configs, reps):
    """configs: name -> fn(rep) -> (rc, out, wall, cpu, extra). Runs them in turn, reps times;
    returns name -> (median wall, median cpu, last result)."""
    times = {k: ([], []) for k in configs}
    last = {}
    for rep in range(reps):
        for k, fn in configs.items():
            r = fn(rep)
            times[k][0].append(r[2])
            times[k][1].append(r[3])
            last[k] = r
    return {k: (statistics.median(w), statistics.median(c), last[k])
            for k, (w, c) in times.items()}


def peer_pytest(tab, label, tdir, py, lg, reps, user, body_env=None):
    """The same test file under plain pytest, pytest --memray and leakgate's plugin, each with the
    other's plugin blocked; pytest-memray's time is a ratio to the plain run's, interleaved."""
    env = dict(body_env or {})
    base = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    res = interleave({
        "plain": lambda rep: sh(base + ["-p", "no:memray", "-p", "no:leakgate"], env, tdir),
        "memray": lambda rep: sh(base + ["--memray", "--stacks", "40", "-p", "no:leakgate"],
                                 dict(env, PYTHONMALLOC="malloc"), tdir),
    }, reps)
    pw, pc, _ = res["plain"]
    w, c, (rc, out, _, _) = res["memray"]
    tab.add(label, "pytest --memray --stacks 40, @limit_leaks('%s')" % LIMITS.get(label, PM_LIMIT),
            "FAILED" if rc else "passed", rc != 0, w / pw, c / pc,
            pytest_memray_named(out, user) or ("-" if rc == 0 else short(out[-400:])))
    # the plugin runs the test's sessions under exec in a child process: one run, and its time
    # is that whole run against the plain pytest (not an overhead: see docs/peers.md)
    rc, out, w, c = sh(base + ["-p", "no:memray"], dict(env, LEAKGATE_BIN=lg), tdir)
    names = leakgate_named(out)
    if rc and not names:  # a failure that names nothing: say why, from pytest's summary
        names = [short(" ".join(re.findall(r"^(?:FAILED|ERROR) .*$", out, re.M)) or out[-300:])]
    tab.add(label, "pytest, @leakgate (plugin)", "FAILED" if rc else "passed", rc != 0,
            w / pw, c / pc, names)


LIMITS = {}


def lg_exec(lg, d, cmd, marker=None):
    opts = [lg, "exec", "--quiet", "--no-reports", "--out", d]
    if marker:
        opts += ["--session-marker", marker]
    return sh(opts + ["--"] + cmd)


def torch_trainer(tab, a, lg, py, tmp):
    targs = [TRAIN, "--sessions", str(a.sessions), "--params-mb", str(a.params_mb)]
    for fixed in (False, True):
        fx = ["--fixed"] if fixed else []
        name = "fixed" if fixed else "buggy"
        mfile = lambda mode, rep: os.path.join(tmp, "%s-%s-%d.bin" % (mode, name, rep))

        def memray(mode, extra):
            def run(rep):
                r = sh([py, "-m", "memray", "run", "-q", "-f", "--trace-python-allocators"]
                       + extra + ["-o", mfile(mode, rep)] + targs + ["--no-api"] + fx,
                       env={"PYTHONMALLOC": "malloc"})
                assert r[0] == 0, r[1]
                return r
            return run
        res = interleave({
            "bare": lambda rep: sh([py] + targs + ["--no-api"] + fx),
            "lg-api": lambda rep: lg_exec(lg, os.path.join(tmp, "lg-%s-%d" % (name, rep)),
                                          [py] + targs + fx),
            "lg-marker": lambda rep: lg_exec(lg, os.path.join(tmp, "lgm-%s-%d" % (name, rep)),
                                             [py, "-m", "leakgate"] + targs + ["--no-api"] + fx,
                                             MARKER),
            "memray": memray("memray", []),
            "memray-native": memray("memray-native", ["--native"]),
        }, a.reps)
        bw, bc, _ = res["bare"]
        for k in ("lg-api", "lg-marker"):
            w, c, (rc, out, _, _) = res[k]
            tab.add("torch " + name, "leakgate exec " + (
                "(API)" if k == "lg-api" else "(marker, python -m leakgate)"),
                VERDICT.get(rc, "exit %s" % rc), rc == 1, w / bw, c / bc, leakgate_named(out))
        for k in ("memray", "memray-native"):
            w, c, _ = res[k]
            total, top = memray_leaks([mfile(k, a.reps - 1)], TRAIN)
            tab.add("torch " + name, "memray run --trace-python-allocators" +
                    (" --native" if k == "memray-native" else "") + " (leaks at exit)",
                    "%s not freed at exit" % mb(total), None, w / bw, c / bc,
                    ["%s %s" % (mb(v), s) for s, v in top])
        # pytest: one test per session body. The file carries both tools' markers; each tool
        # runs with the other's plugin blocked (-p no:leakgate, -p no:memray), and leakgate's
        # plugin passes -p on to the test's process under exec.
        tdir = os.path.join(tmp, "pytest-torch-" + name)
        os.makedirs(tdir, exist_ok=True)
        with open(os.path.join(tdir, "test_peer.py"), "w") as f:
            f.write(PEER_TEST % (os.path.dirname(TRAIN), fixed, a.params_mb))
        LIMITS["torch " + name] = "1 MB"
        peer_pytest(tab, "torch " + name, tdir, py, lg, a.reps, "train.py")


def torch_shapes(tab, a, lg, py, tmp, shape):
    for fixed in (False, True):
        fx = ["fixed"] if fixed else []
        name = "%s %s" % (shape, "fixed" if fixed else "buggy")
        prog = [SHAPES, shape] + fx + [str(a.epochs)]
        mfile = lambda rep: os.path.join(tmp, "memray-%s-%d.bin" % (name.replace(" ", "-"), rep))
        res = interleave({
            "bare": lambda rep: sh([py] + prog),
            "lg": lambda rep: lg_exec(lg, os.path.join(tmp, "lg-%s-%d" % (name, rep)),
                                      [py, "-m", "leakgate"] + prog, EPOCH),
            "memray": lambda rep: sh([py, "-m", "memray", "run", "-q", "-f",
                                      "--trace-python-allocators", "-o", mfile(rep)] + prog,
                                     env={"PYTHONMALLOC": "malloc"}),
        }, a.reps)
        bw, bc, _ = res["bare"]
        w, c, (rc, out, _, _) = res["lg"]
        tab.add(name, "leakgate exec (marker, python -m leakgate)", VERDICT.get(rc, rc),
                rc == 1, w / bw, c / bc, leakgate_named(out))
        w, c, _ = res["memray"]
        total, top = memray_leaks([mfile(a.reps - 1)], SHAPES)
        tab.add(name, "memray run --trace-python-allocators (leaks at exit)",
                "%s not freed at exit" % mb(total), None, w / bw, c / bc,
                ["%s %s" % (mb(v), s) for s, v in top])
        tdir = os.path.join(tmp, "pytest-%s" % name.replace(" ", "-"))
        os.makedirs(tdir, exist_ok=True)
        with open(os.path.join(tdir, "test_peer.py"), "w") as f:
            f.write(SHAPE_TEST % (os.path.dirname(SHAPES), PM_LIMIT, shape, fixed))
        peer_pytest(tab, name, tdir, py, lg, a.reps, "torch_shapes.py")


def workers(tab, a, lg, py, tmp):
    for grow in (True, False):
        mode = "grow" if grow else "clean"
        name = "workers " + ("buggy" if grow else "fixed")
        prog = [WORKERS, mode, str(a.epochs)]
        mfile = lambda rep: os.path.join(tmp, "memray-workers-%s-%d.bin" % (mode, rep))
        res = interleave({
            "bare": lambda rep: sh([py] + prog),
            "lg": lambda rep: lg_exec(lg, os.path.join(tmp, "lgw-%s-%d" % (mode, rep)),
                                      [py, "-m", "leakgate"] + prog, EPOCH),
            "memray": lambda rep: sh([py, "-m", "memray", "run", "-q", "-f", "--follow-fork",
                                      "--trace-python-allocators", "-o", mfile(rep)] + prog,
                                     env={"PYTHONMALLOC": "malloc"}),
        }, a.reps)
        bw, bc, _ = res["bare"]
        w, c, (rc, out, _, _) = res["lg"]
        judged = re.search(r"judged (\d+) process", out)
        tab.add(name, "leakgate exec (marker, python -m leakgate)",
                "%s, %s processes judged" % (VERDICT.get(rc, rc), judged and judged.group(1)),
                rc == 1, w / bw, c / bc, leakgate_named(out))
        w, c, _ = res["memray"]
        kids = sorted(glob.glob(mfile(a.reps - 1) + ".*"))
        per = [memray_leaks([k], WORKERS) for k in kids]
        tab.add(name, "memray run --follow-fork --trace-python-allocators (leaks at exit, "
                "per process)", "%d child files; not freed at exit: %s" % (
                    len(kids), ", ".join(mb(t) for t, _ in per)), None, w / bw, c / bc,
                ["worker %s: %s" % (k.rsplit(".", 1)[1], "; ".join(
                    "%s %s" % (mb(v), s) for s, v in top) or "-") for k, (_, top) in
                 zip(kids, per)])
        # heaptrack follows the forks through LD_PRELOAD; one try, bounded
        limit = max(60.0, 20 * bw)
        rc, out, w, c = sh(["heaptrack", "-o", os.path.join(tmp, "htw-%s" % mode),
                            sys.executable if not a.python_for_heaptrack
                            else a.python_for_heaptrack] + prog, timeout=limit)
        if rc == "timeout":
            tab.add(name, "heaptrack (one try)", "did not finish: killed after %.0f s (bare: "
                    "%.1f s)" % (limit, bw), None, None, None, "-")
        else:
            tab.add(name, "heaptrack (one try)", "exit %s" % rc, None, w / bw, c / bc,
                    short(out[-200:]))
        tdir = os.path.join(tmp, "pytest-workers-" + mode)
        os.makedirs(tdir, exist_ok=True)
        with open(os.path.join(tdir, "test_peer.py"), "w") as f:
            f.write(WORKER_TEST % (os.path.dirname(WORKERS), PM_LIMIT))
        peer_pytest(tab, name, tdir, py, lg, a.reps, "worker_cache.py", {"WORKER_CACHE": mode})


def rust(tab, a, lg, tmp):
    rv = os.path.join(a.build, "bindings-rust", "target", "release", "rust-varmap")
    rargs = ["--params-mb", str(a.rust_params_mb), "--steps", "3"]
    if not os.path.exists(rv):
        print("no %s: the Rust rows are left out" % rv, file=sys.stderr)
        return
    for fixed in (False, True):
        fx = ["--fixed"] if fixed else []
        name = "fixed" if fixed else "buggy"
        res = interleave({
            "bare": lambda rep: sh([rv] + rargs + fx),
            "lg": lambda rep: lg_exec(lg, os.path.join(tmp, "rlg-%s-%d" % (name, rep)),
                                      [rv] + rargs + fx),
            "ht": lambda rep: sh(["heaptrack", "-o", os.path.join(tmp, "ht-%s-%d" % (name, rep)),
                                  rv] + rargs + fx),
        }, a.reps)
        bw, bc, _ = res["bare"]
        w, c, (rc, out, _, _) = res["lg"]
        tab.add("rust " + name, "leakgate exec", VERDICT.get(rc, rc), rc == 1, w / bw, c / bc,
                leakgate_named(out))
        f = [x for x in os.listdir(tmp) if x.startswith("ht-%s-%d" % (name, a.reps - 1))][0]
        _, pr, _, _ = sh(["heaptrack_print", "-f", os.path.join(tmp, f), "-n", "2", "-s", "2"])
        peak = re.search(r"peak heap memory consumption: (\S+)", pr)
        leaked = re.search(r"total memory leaked: (\S+)", pr)
        peaksite = re.search(r"PEAK MEMORY CONSUMERS\n\n?(\S+) peak memory consumed over "
                             r"\d+ calls from\n((?:.*\n){1,40})", pr)
        if peaksite:
            frames = [x for x in peaksite.group(2).splitlines() if x and not x.startswith(" ")]
            user = next((x for x in frames if "rust_varmap" in x), frames[0])
            peaksite = (peaksite.group(1), "%s (first frame: %s)" % (user, frames[0][:60]))
        w, c, _ = res["ht"]
        tab.add("rust " + name, "heaptrack (peak / leaked at exit)",
                "peak %s, leaked %s" % (peak and peak.group(1), leaked and leaked.group(1)),
                None, w / bw, c / bc, ("%s at peak from %s" % peaksite) if peaksite else "-")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=6, help="the trainer's sessions")
    ap.add_argument("--epochs", type=int, default=12, help="sessions of the small programs")
    ap.add_argument("--params-mb", type=float, default=4)
    ap.add_argument("--rust-params-mb", type=float, default=32)
    ap.add_argument("--only", default="torch,history,hook,workers,rust",
                    help="programs, comma-separated")
    ap.add_argument("--python-for-heaptrack", default="/usr/bin/python3",
                    help="heaptrack runs this interpreter (not a venv's launcher)")
    a = ap.parse_args()
    lg = os.path.join(os.path.abspath(a.build), "harness", "leakgate")
    py = sys.executable
    tmp = tempfile.mkdtemp(prefix="lg-peers-")
    only = a.only.split(",")
    tab = Table()
    t0 = time.monotonic()
    load0 = os.getloadavg()
    programs = [("torch", lambda: torch_trainer(tab, a, lg, py, tmp)),
                ("history", lambda: torch_shapes(tab, a, lg, py, tmp, "history")),
                ("hook", lambda: torch_shapes(tab, a, lg, py, tmp, "hook")),
                ("workers", lambda: workers(tab, a, lg, py, tmp)),
                ("rust", lambda: rust(tab, a, lg, tmp))]
    failed = []
    for name, fn in programs:
        if name in only:
            try:
                fn()
            except Exception as e:  # the other programs' rows still print
                failed.append(name)
                tab.add(name, "(ci/peers.py)", "error: %s" % short(repr(e)), None, None, None,
                        "-")
    tab.print()
    print("\ntorch: %d sessions (leakgate: 1 warm-up + %d judged), %s MB of parameters; history, "
          "hook, workers: %d epochs (leakgate: its default warm-up); pytest: one session per "
          "test (the plugin: 9 sessions, 1 warm-up); reps: %d; %.0f s in all; machine: %s, %d "
          "cores, load %.1f at the start, %.1f at the end; files in %s" % (
              a.sessions, a.sessions - 1, a.params_mb, a.epochs, a.reps,
              time.monotonic() - t0, os.uname().nodename, os.cpu_count(), load0[0],
              os.getloadavg()[0], tmp))
    return 1 if failed else 0


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

SHAPE_TEST = '''
import sys
import pytest
sys.path.insert(0, %r)
import torch_shapes  # its model, and its one-time costs paid at import

@pytest.mark.limit_leaks(%r)
@pytest.mark.leakgate(sessions=9, warmup=1)
def test_one_epoch():
    torch_shapes.%s_session(0, fixed=%r)
'''

WORKER_TEST = '''
import sys
import pytest
sys.path.insert(0, %r)
import worker_cache  # WORKER_CACHE=grow|clean; its persistent workers started at import

@pytest.mark.limit_leaks(%r)
@pytest.mark.leakgate(sessions=9, warmup=1)
def test_one_epoch():
    worker_cache.epoch()
'''

if __name__ == "__main__":
    sys.exit(main())
