"""exec's process tree with PyTorch (docs/design.md, "The process tree"): a DataLoader with
num_workers=2 and persistent workers, whose dataset keeps what each item made inside the worker,
is a leak named by the workers' pids while the main process passes; its twin, which keeps
nothing, passes with three processes judged; without persistent workers, the two an epoch starts
and joins are counted, not judged. With --stacks each grown worker is named by the dataset's
line that allocates what it keeps (leakgate/_child.py), and the clean twin still passes with its
workers tracing themselves. Marker mode: the program knows nothing of leakgate.
Needs torch (Debian: python3-torch)."""
import os
import re
import sys
import textwrap

import pytest

from conftest import channel, exec_py

torch = pytest.importorskip("torch", reason="SKIP: torch is not installed (python3-torch)")

EPOCHS, WARMUP, ITEMS, ITEM_BYTES = 12, 2, 16, 128 * 1024
LOADER = textwrap.dedent("""\
    import os, sys
    from torch.utils.data import DataLoader, Dataset

    KEEP = sys.argv[1] == "grow"
    PERSIST = sys.argv[1] != "brief"  # brief: new workers every epoch, joined as it ends
    kept = []  # in each worker: what its items keep


    class Items(Dataset):
        def __len__(self):
            return %(items)d

        def __getitem__(self, i):
            buf = bytes([i %% 251]) * %(item_bytes)d  # written: resident
            if KEEP:
                kept.append(buf)
            return len(buf)


    def total(batch):  # plain ints back to the main process: no tensor in shared memory
        return sum(batch)


    def hello(_):
        print("worker pid %%d" %% os.getpid(), flush=True)


    loader = DataLoader(Items(), batch_size=4, num_workers=2, persistent_workers=PERSIST,
                        worker_init_fn=hello, collate_fn=total)
    for e in range(%(epochs)d):
        print("epoch %%d done %%d" %% (e, sum(loader)), flush=True)
    """) % {"items": ITEMS, "item_bytes": ITEM_BYTES, "epochs": EPOCHS}
OPTS = ["--warmup", str(WARMUP), "--no-reports", "--session-marker", "^epoch [0-9]+ done"]


def run_loader(leakgate_bin, tmp_path, mode, opts=()):
    prog = tmp_path / "loader.py"
    prog.write_text(LOADER)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / mode, [str(prog), mode],
                             opts=list(opts) + OPTS)
    pids = [int(p) for p in re.findall(r"worker pid (\d+)", out)]
    assert len(pids) == (2 * EPOCHS if mode == "brief" else 2), out
    verdict = next(x for x in lines if x.get("type") == "verdict")
    return rc, out, lines, pids, verdict


def test_a_growing_dataloader_worker_is_a_leak_named_by_pid(leakgate_bin, tmp_path):
    rc, out, lines, pids, verdict = run_loader(leakgate_bin, tmp_path, "grow")
    assert rc == 1, out
    procs = verdict["processes"]
    assert procs["status"] == "leak" and procs["judged"] == 3, procs
    for pid in pids:  # each worker keeps its share of the items, every epoch
        # named by its program and script, paths by their base names
        assert "child pid %d (%s loader.py grow)" % (pid, os.path.basename(sys.executable)) \
            in procs["leaking"], procs
        assert "LEAK: child pid %d (" % pid in out, out
    assert channel(lines, "rss")["status"] == "pass", out  # the main process keeps nothing
    # each worker's readings rose by its half of the epoch's items every measured session
    sessions = [x for x in lines if x.get("type") == "session"]
    rss = {p["pid"]: [] for p in sessions[-1]["processes"]}
    for s in sessions[WARMUP - 1:]:
        for p in s["processes"]:
            rss.setdefault(p["pid"], []).append(p["rss"])
    want = (EPOCHS - WARMUP) * ITEMS // 2 * ITEM_BYTES
    for pid in pids:
        rise = rss[pid][-1] - rss[pid][0]
        assert want * 0.9 <= rise <= want * 1.5, (pid, rise, want)


def test_a_dataloader_that_keeps_nothing_passes_with_its_workers_judged(leakgate_bin, tmp_path):
    rc, out, lines, pids, verdict = run_loader(leakgate_bin, tmp_path, "clean")
    assert rc == 0, out
    procs = verdict["processes"]
    assert procs["status"] == "pass" and procs["judged"] == 3 and procs["children"] == 2, procs
    assert "judged 3 process(es)" in verdict["summary"], verdict["summary"]


def test_workers_that_live_within_an_epoch_are_counted(leakgate_bin, tmp_path):
    rc, out, lines, pids, verdict = run_loader(leakgate_bin, tmp_path, "brief")
    assert rc == 0, out
    procs = verdict["processes"]
    assert procs["within"] == 2 * EPOCHS and procs["judged"] == 1, procs
    assert "%d child(ren) began and ended within a session" % (2 * EPOCHS) in procs["why"], procs


def test_with_stacks_a_growing_worker_is_named_by_its_python_line(leakgate_bin, tmp_path):
    """--stacks: each worker traces itself (leakgate/_child.py) and is named by the line of the
    dataset that allocates what it keeps, before its native stack (CPython's)."""
    rc, out, lines, pids, verdict = run_loader(leakgate_bin, tmp_path, "grow", ["--stacks"])
    assert rc == 1, out
    procs = verdict["processes"]
    assert procs["status"] == "leak" and procs["judged"] == 3, procs
    line = next(i for i, text in enumerate(LOADER.splitlines(), 1) if "bytes([i %" in text)
    for pid in pids:
        m = re.search(r"pid %d grew at its Python line: \+([0-9.]+) (KiB|MiB)/session \(\d+ "
                      r"blocks\) at loader\.py:%d in Items\.__getitem__ \(tracemalloc in the "
                      r"child, 8 frames, sessions #(\d+)-#(\d+)\)" % (pid, line), procs["why"])
        assert m, procs["why"]
        rate = float(m.group(1)) * (1 << (20 if m.group(2) == "MiB" else 10))
        span = int(m.group(4)) - int(m.group(3)) + 1
        want = ITEMS // 2 * ITEM_BYTES  # its half of the epoch's items
        # epochs here take milliseconds: a look lands up to a session off at each end
        assert want * (span - 1) / span <= rate <= want * (span + 1) / span, (m.group(0), want)
        assert "LEAK: child pid %d (" % pid in out, out


def test_with_stacks_a_dataloader_that_keeps_nothing_passes(leakgate_bin, tmp_path):
    """--stacks: the workers' tracing adds no growth of their own (tracemalloc's tables hold
    what they keep; the looks run in forked copies, which are not counted as children)."""
    rc, out, lines, pids, verdict = run_loader(leakgate_bin, tmp_path, "clean", ["--stacks"])
    assert rc == 0, out
    procs = verdict["processes"]
    assert procs["status"] == "pass" and procs["judged"] == 3 and procs["children"] == 2, procs
    assert "Python line" not in procs["why"], procs
