"""Python's cyclic garbage is collected before each session is measured (docs/realworld.md,
finding 3; the binding's settle hook, leakgate_set_settle_hook): a dropped reference cycle is
not a leak, a kept one still is — with leakgate.session() and in marker mode, where the
program knows nothing of leakgate. The program turns the automatic collector off, as a big
heap's rare generation-2 collections do in effect (Lightning's trainers waited 12 of 12
sessions for one); LEAKGATE_PY_SETTLE=0 shows what the hook prevents."""
import pytest
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
# the same in marker mode: no import of leakgate, a line ends each session
MARKED = textwrap.dedent("""    import gc, sys
    gc.disable()
    KEEP = []
    for i in range(8):
        node = {"data": bytearray(%d)}
        node["self"] = node
        if "keep" in sys.argv:
            KEEP.append(node)
        del node
        print("epoch %%d done" %% i, flush=True)
""" % BLOCK)
MARKER = ["--session-marker", "^epoch [0-9]+ done"]


def run_cycles(leakgate_bin, tmp_path, *args, marker=False, env=None):
    prog = tmp_path / ("marked.py" if marker else "cycles.py")
    prog.write_text(MARKED if marker else CYCLES)
    out = tmp_path / ("o%s%s%s" % (marker, "".join(args), bool(env)))
    return exec_py(leakgate_bin, out, [str(prog), *args], opts=MARKER if marker else (),
                   env=env)


@pytest.mark.parametrize("marker", [False, True], ids=["api", "marker"])
def test_a_dropped_cycle_is_collected_before_the_session_ends(leakgate_bin, tmp_path, marker):
    rc, out, lines = run_cycles(leakgate_bin, tmp_path, marker=marker)
    assert rc == 0, out
    assert channel(lines, "je_allocated")["status"] == "pass", out


def test_without_settling_a_dropped_cycle_looks_kept(leakgate_bin, tmp_path):
    """The hook is what makes the difference: off, the marker program's garbage is judged."""
    rc, out, lines = run_cycles(leakgate_bin, tmp_path, marker=True,
                                env={"LEAKGATE_PY_SETTLE": "0"})
    assert rc == 1, out
    assert channel(lines, "je_allocated")["status"] == "leak", out


@pytest.mark.parametrize("marker", [False, True], ids=["api", "marker"])
def test_a_kept_cycle_is_still_a_leak(leakgate_bin, tmp_path, marker):
    rc, out, lines = run_cycles(leakgate_bin, tmp_path, "keep", marker=marker)
    assert rc == 1, out
    je = channel(lines, "je_allocated")
    assert je["status"] == "leak", out
    assert BLOCK <= je["figure"] <= BLOCK * 1.1, je  # the bytearray every session
