"""The seed's leak in a real PyTorch trainer (examples/pytorch-trainer/train.py): caught in API
mode, in marker mode with no leakgate code, and by the pytest plugin, each naming the Python line
that kept the VarMap; the fixed twin passes every time, also in ci/peers' layout beside a peer's
plugin that wraps the body in a profiler. Needs torch (Debian: python3-torch)."""
import json
import os
import sys
import textwrap

import pytest

from conftest import SRC, channel, exec_py, plugin_results, plugin_site, run

torch = pytest.importorskip("torch", reason="SKIP: torch is not installed (python3-torch)")
TRAIN = os.path.join(SRC, "examples", "pytorch-trainer", "train.py")
KEPT = "kept alive by __main__._TRAINERS['run-"
LINE = "_TRAINERS is stored into at "


def notes(lines):
    return [n for s in lines if s.get("type") == "session" for n in s.get("notes", [])]


def test_api_mode_catches_the_leak_and_names_the_line(leakgate_bin, tmp_path):
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [TRAIN])
    assert rc == 1, out
    for ch in ("tagged_host", "refs", "je_allocated", "rss"):
        assert channel(lines, ch)["status"] == "leak", (ch, out)
    assert "varmap tft.varmap retained at run_session (train.py:" in channel(lines, "refs")["why"]
    n = notes(lines)
    assert any(KEPT in x and LINE in x and "train.py:" in x and "TFTTrainer.__init__" in x
               for x in n), n


def test_api_mode_fixed_twin_passes(leakgate_bin, tmp_path):
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [TRAIN, "--fixed"])
    assert rc == 0, out
    assert channel(lines, "tagged_host")["status"] == "pass"


def test_marker_mode_without_leakgate_code(leakgate_bin, tmp_path):
    marker = ["--session-marker", "^session [0-9]+ done"]
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [TRAIN, "--no-api"], opts=marker)
    assert rc == 1, out
    assert channel(lines, "je_allocated")["status"] == "leak", out
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "c", [TRAIN, "--no-api", "--fixed"],
                             opts=marker)
    assert rc == 0, out


def test_pytest_plugin_catches_it_and_passes_the_fix(leakgate_bin, tmp_path):
    (tmp_path / "test_trainer.py").write_text(textwrap.dedent("""\
        import argparse, sys
        import pytest
        sys.path.insert(0, %r)
        import train

        def args(fixed):
            a = argparse.Namespace(fixed=fixed, hidden=32, params_mb=0.5, steps=4, features=4,
                                   horizon=6, n_series=3906)
            return a

        DATA = train.make_batches(4, 32, 24, 4, 6, 16, 1)
        VAL = train.make_batches(1, 32, 24, 4, 6, 16, 2)
        train.TemporalFusionTransformer(4, 32, 4, 1, 6)  # torch's one-time state, outside

        @pytest.mark.leakgate(sessions=5)
        def test_session_buggy():
            train.run_session(len(train._TRAINERS), args(False), DATA, VAL)

        @pytest.mark.leakgate(sessions=5)
        def test_session_fixed():
            train.run_session(len(train._TRAINERS), args(True), DATA, VAL)
    """ % os.path.dirname(TRAIN)))
    rc, out = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
                  cwd=str(tmp_path), env={"LEAKGATE_BIN": leakgate_bin})
    assert rc == 1 and "1 failed, 1 passed" in out, out
    assert "FAILED test_trainer.py::test_session_buggy" in out, out
    assert "kept alive by train._TRAINERS['run-" in out and LINE in out, out


# ci/peers' layout (docs/peers.md): one test file for every tool, the whole session run once at
# import, the test marked for leakgate and for a peer whose plugin wraps the body in a profiler
# (pytest-memray's limit_leaks: a memray Tracker, whose profile function makes CPython 3.11 give
# each code object a line table the first time it runs traced). The peer here is a stand-in
# installed the same way (a pytest11 entry point), so the test needs nothing from PyPI.
PEER_PLUGIN = '''
import functools, sys
import pytest

def pytest_configure(config):
    config.addinivalue_line("markers", "profiled: run the test under a profile function")

@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    if pyfuncitem.get_closest_marker("profiled"):
        func = pyfuncitem.obj

        @functools.wraps(func)
        def wrapper(*a, **kw):
            sys.setprofile(lambda *x: None)
            try:
                return func(*a, **kw)
            finally:
                sys.setprofile(None)
        pyfuncitem.obj = wrapper
    yield
'''

PEER_TEST = '''
import argparse, sys
import pytest
sys.path.insert(0, %r)
import train

def args(fixed):
    return argparse.Namespace(fixed=fixed, hidden=32, params_mb=0.5, steps=4, features=4,
                              horizon=6, n_series=3906)

DATA = train.make_batches(4, 32, 24, 4, 6, 16, 1)
VAL = train.make_batches(1, 32, 24, 4, 6, 16, 2)
train.run_session(-1, args(True), DATA, VAL)  # every one-time cost, outside the test

@pytest.mark.profiled
@pytest.mark.leakgate(sessions=5)
def test_session_fixed():
    train.run_session(len(train._TRAINERS), args(True), DATA, VAL)

@pytest.mark.profiled
@pytest.mark.leakgate(sessions=5)
def test_session_buggy():
    train.run_session(len(train._TRAINERS), args(False), DATA, VAL)
'''


def peer_layout(tmp_path):
    site = plugin_site(tmp_path, "peerprof", PEER_PLUGIN)
    (tmp_path / "test_peer.py").write_text(PEER_TEST % os.path.dirname(TRAIN))
    return {"PYTHONPATH": str(site)}


def peer_verdict(tmp_path, test):
    return [json.loads(x) for x in open(plugin_results(tmp_path, "test_peer.py::" + test))][-1]


def test_plugin_child_blocks_the_plugins_the_parent_blocked(leakgate_bin, tmp_path):
    # The false alarm docs/peers.md had open: `pytest -p no:memray` ran leakgate's plugin, whose
    # child pytest loaded pytest-memray anyway; its tracker ran inside every session and the
    # fixed twin failed on 7.86 KiB tagged `varmap` in session 0 (the line tables of torch's
    # code, first traced inside the tag scope). The child now gets the parent's -p options.
    env = peer_layout(tmp_path)
    env["LEAKGATE_BIN"] = leakgate_bin
    rc, out = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:peerprof",
                   "-q", "test_peer.py"], cwd=str(tmp_path), env=env)
    assert rc == 1 and "1 failed, 1 passed" in out, out
    assert "FAILED test_peer.py::test_session_buggy" in out, out
    assert "wrapper" not in out, out  # no profiler in the child
    v = peer_verdict(tmp_path, "test_session_fixed")
    assert v["status"] == "pass", v
    # the real leak in the same layout: the VarMap's tagged storage, kept in every session
    v = peer_verdict(tmp_path, "test_session_buggy")
    tagged = next(c for c in v["channels"] if c["channel"] == "tagged_host")
    assert v["status"] == "leak" and tagged["status"] == "leak", v
    assert tagged["why"].startswith("6 of 6 session(s) left tagged memory alive"), tagged


def test_plugin_names_a_profiler_that_wraps_the_body(leakgate_bin, tmp_path):
    # With the peer's plugin loaded (not blocked), its profiler runs inside the sessions: the
    # false alarm itself, now with a note naming the wrapper that ran around the body.
    env = peer_layout(tmp_path)
    env["LEAKGATE_BIN"] = leakgate_bin
    rc, out = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                   "test_peer.py::test_session_fixed"], cwd=str(tmp_path), env=env)
    assert rc == 1, out
    assert "1 of 6 session(s) left tagged memory alive" in out and "first in session 0" in out, out
    assert "the test function is a wrapper, wrapper (" in out and "peerprof.py:" in out, out
