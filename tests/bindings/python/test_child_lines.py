"""exec --stacks names a growing Python child by the line of its own code (issue 34, item 4;
bindings/python/src/leakgate/_child.py, harness/exec/exec_child_py.c): a ``multiprocessing``
worker, forked or spawned (an image of its own), that keeps what each request made is a leak
named by its pid and by its line, bytes per session, while its twin that keeps nothing passes
with its worker judged, never traced (a child traces itself only once exec finds its series
leaking) and named nowhere.
Marker mode: the program knows nothing of leakgate."""
import multiprocessing
import re
import textwrap

import pytest

from conftest import exec_py

SESSIONS, WARMUP, STEP = 12, 2, 256 * 1024
PROG = textwrap.dedent("""\
    import multiprocessing as mp
    import sys
    import time

    kept = []  # in the worker: what its requests keep


    def serve(requests, answers, keep):
        for n in iter(requests.get, None):
            buf = bytearray(n)  # the worker's step
            buf[::4096] = b"x" * len(buf[::4096])  # written: resident
            if keep:
                kept.append(buf)
            answers.put(len(buf))


    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1])
        requests, answers = ctx.Queue(), ctx.Queue()
        worker = ctx.Process(target=serve, args=(requests, answers, sys.argv[2] == "grow"))
        worker.start()
        print("worker pid %%d" %% worker.pid, flush=True)
        for s in range(%(sessions)d):
            time.sleep(0.25)  # the worker idle a while at each session's end
            requests.put(%(step)d)
            print("session %%d done %%d" %% (s, answers.get()), flush=True)
        requests.put(None)
        worker.join()
    """) % {"sessions": SESSIONS, "step": STEP}
OPTS = ["--stacks", "--warmup", str(WARMUP), "--no-reports", "--session-marker",
        "^session [0-9]+ done"]


def step_line():
    """The line of PROG that allocates the worker's step, found in its text."""
    return next(i for i, line in enumerate(PROG.splitlines(), 1) if "bytearray(n)" in line)


def run(leakgate_bin, tmp_path, method, mode):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip("SKIP: no %s start method here" % method)
    prog = tmp_path / "prog.py"
    prog.write_text(PROG)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / (method + mode), [str(prog), method, mode],
                             opts=OPTS)
    pid = int(re.search(r"worker pid (\d+)", out).group(1))
    verdict = next(x for x in lines if x.get("type") == "verdict")
    return rc, out, pid, verdict["processes"]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_growing_python_worker_is_named_by_its_line(leakgate_bin, tmp_path, method):
    rc, out, pid, procs = run(leakgate_bin, tmp_path, method, "grow")
    assert rc == 1 and procs["status"] == "leak", out
    m = re.search(r"pid %d grew at its Python line: \+([0-9.]+) (KiB|MiB)/session \(\d+ blocks\) "
                  r"at prog\.py:(\d+) in serve \(tracemalloc in the child, 8 frames, sessions "
                  r"#(\d+)-#(\d+)\)" % pid, procs["why"])
    assert m, procs["why"]
    assert int(m.group(3)) == step_line(), (m.group(0), step_line())
    rate = float(m.group(1)) * (1 << (20 if m.group(2) == "MiB" else 10))
    span = int(m.group(5)) - int(m.group(4)) + 1
    # the child looks as it grows, between session ends: its span's ends are off by up to one
    # session's growth each way
    assert STEP * (span - 1) / span <= rate <= STEP * (span + 1) / span, (rate, span, m.group(0))
    assert int(m.group(4)) >= WARMUP, m.group(0)  # traced from its first growth after the warm-up
    # before its native stack, which is CPython's
    assert procs["why"].index("grew at its Python line") < procs["why"].index(
        "grew by allocation stack"), procs["why"]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_python_worker_that_keeps_nothing_passes_untraced(leakgate_bin, tmp_path, method):
    rc, out, pid, procs = run(leakgate_bin, tmp_path, method, "clean")
    assert rc == 0 and procs["status"] == "pass", out
    assert procs["judged"] >= 2 and "Python line" not in procs["why"], procs
    heap = tmp_path / (method + "clean") / "heap"
    # exec told the children the sessions and that none leaks: this one never traced nor looked
    assert (heap / "child.sessions").read_text() == "%d\narm\n" % SESSIONS
    assert not (heap / ("child.%d.py" % pid)).exists(), sorted(p.name for p in heap.iterdir())
