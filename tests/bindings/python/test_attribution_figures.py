"""The Python attribution's own memory never moves what is judged (docs/realworld.md, finding
10): a pure-Python leak of 16 bytearrays of 4096 bytes a session, in marker mode, reads the
same je_allocated step every session — before the census arms, across the session it profiles
whole, while tracemalloc traces the next ones, and after the walk — with tracemalloc armed by
the leak (the default) and traced from the start."""
import textwrap

import pytest

from conftest import channel, exec_py

SESSIONS, BLOCKS, SIZE = 14, 16, 4096
LEAK = textwrap.dedent("""\
    KEEP = []
    for i in range(%d):
        KEEP.append([bytearray(%d) for _ in range(%d)])
        print("epoch %%d done" %% i, flush=True)
    """) % (SESSIONS, SIZE, BLOCKS)


def size_class(n):
    """jemalloc's size class for a request of n bytes above 4 KiB: four classes per doubling
    (n in (2^k, 2^(k+1)] rounds up to a multiple of 2^(k-2))."""
    k = (n - 1).bit_length() - 1
    step = 1 << (k - 2)
    return -(-n // step) * step


# a bytearray of SIZE asks for SIZE + 1 (its trailing NUL); its list's 16 slots are pymalloc's
PER_SESSION = BLOCKS * size_class(SIZE + 1)


@pytest.mark.parametrize("env", [{}, {"LEAKGATE_PY_TRACEMALLOC": "1"}],
                         ids=["armed-by-the-leak", "traced-from-the-start"])
def test_every_session_steps_by_the_leak_alone(leakgate_bin, tmp_path, env):
    prog = tmp_path / "leak.py"
    prog.write_text(LEAK)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [str(prog)], env=env,
                             opts=["--no-reports", "--session-marker", "^epoch [0-9]+ done"])
    assert rc == 1, out
    # the census profiled one session whole (its diffs are exact), and the attribution ran
    assert any((s.get("heap_profile") or {}).get("sample") == 1 for s in lines), out
    assert "python: kept alive by: module __main__.KEEP" in out, out
    totals = [s["delta"]["je_allocated"] for s in lines
              if s.get("type") == "session" and s["delta"]["je_allocated"] is not None]
    steps = [b - a for a, b in zip(totals, totals[1:])]
    assert len(steps) == SESSIONS - 2, steps
    # a step may carry an interpreter cache's few hundred bytes; never a table's or a profile's
    off = [(i + 2, s) for i, s in enumerate(steps) if abs(s - PER_SESSION) > 4096]
    assert not off, "sessions whose step is not %d B: %s\n%s" % (PER_SESSION, off, out)
    slope = channel(lines, "je_allocated")["figure"]
    assert abs(slope - PER_SESSION) <= 0.02 * PER_SESSION, (slope, PER_SESSION)
