"""The seed's leak in a real PyTorch trainer (examples/pytorch-trainer/train.py): caught in API
mode, in marker mode with no leakgate code, and by the pytest plugin, each naming the Python line
that kept the VarMap; the fixed twin passes every time. Needs torch (Debian: python3-torch)."""
import os
import sys
import textwrap

import pytest

from conftest import SRC, channel, exec_py, run

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
