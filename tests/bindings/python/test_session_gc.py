"""leakgate.session() collects Python's cyclic garbage before it ends the session
(docs/realworld.md, finding 3): a dropped reference cycle is not a leak, a kept one still is.
The program turns the automatic collector off, as a big heap's rare generation-2 collections
do in effect (Lightning's trainers waited 12 of 12 sessions for one)."""
import textwrap

from conftest import channel, exec_py

BLOCK = 300 * 1024  # a session's cycle holds this (jemalloc: a 320 KiB class): je_allocated sees it
CYCLES = textwrap.dedent("""\
    import gc, sys, leakgate
    gc.disable()
    KEEP = []
    for i in range(8):
        with leakgate.session():
            node = {"data": bytearray(%d)}
            node["self"] = node  # a cycle: only the collector frees it
            if "keep" in sys.argv:
                KEEP.append(node)
            del node
""" % BLOCK)


def run_cycles(leakgate_bin, tmp_path, *args):
    prog = tmp_path / "cycles.py"
    prog.write_text(CYCLES)
    return exec_py(leakgate_bin, tmp_path / ("o" + "".join(args)), [str(prog), *args])


def test_a_dropped_cycle_is_collected_before_the_session_ends(leakgate_bin, tmp_path):
    rc, out, lines = run_cycles(leakgate_bin, tmp_path)
    assert rc == 0, out
    assert channel(lines, "je_allocated")["status"] == "pass", out


def test_a_kept_cycle_is_still_a_leak(leakgate_bin, tmp_path):
    rc, out, lines = run_cycles(leakgate_bin, tmp_path, "keep")
    assert rc == 1, out
    je = channel(lines, "je_allocated")
    assert je["status"] == "leak", out
    assert BLOCK <= je["figure"] <= BLOCK * 1.1, je  # the bytearray every session
