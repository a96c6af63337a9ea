"""PyTorch's shapes of leak named in PyTorch's terms (issue 34, item 3), with no option set: a
loss kept with its autograd graph (`history.append(loss)`) and a forward hook registered every
session and never removed (examples/python-leaks/torch_shapes.py, `history` and `hook`). Each leak is LEAK and named — the tensor, its grad_fn and graph size and the
line that keeps it; the module, the hook and the line that registers it — and each fixed twin
passes, under exec in API mode, in marker mode (`python -m leakgate`) and through the pytest
plugin. Needs torch (Debian: python3-torch): ctest test_bindings_torch, a SKIP without it."""
import os
import re
import sys
import textwrap

import pytest

from conftest import SRC, exec_py, run

torch = pytest.importorskip("torch", reason="SKIP: torch is not installed (python3-torch)")

EXAMPLES = os.path.join(SRC, "examples", "python-leaks")
MARKER = ["--session-marker", "^epoch [0-9]+ done"]


def history_named(text, holder):
    return re.search(
        r"python: torch: [0-9]+ tensors kept with their autograd graphs in %s \([-+0-9.]+/session"
        r"[^)]*\): `loss`, float32 \[\], grad_fn MseLossBackward0, [0-9]+ nodes through "
        r"next_functions.*; history is stored into at \S*torch_shapes\.py:[0-9]+ in "
        r"history_session \(history\.append\(loss" % re.escape(holder), text)


def hook_named(text, module):
    return re.search(
        r"python: torch: forward hook hook_session\.<locals>\.save_activation "
        r"\(\S*torch_shapes\.py:[0-9]+\) is on %s \(Linear\(in_features=32, out_features=64, "
        r"bias=True\)\) [0-9]+ times \([-+0-9.]+/session[^)]*\), never removed; registered at "
        r"\S*torch_shapes\.py:[0-9]+ in hook_session; their closures keep `acts`: [0-9]+ tensors"
        % re.escape(module), text)


CASES = {"history": (history_named, "history"), "hook": (hook_named, "model.0")}
PROG = os.path.join(EXAMPLES, "torch_shapes.py")


def notes(lines):
    return "\n".join(n for s in lines if s.get("type") == "session" for n in s.get("notes", []))


@pytest.mark.parametrize("prog", sorted(CASES))
def test_api_mode(leakgate_bin, tmp_path, prog):
    named, holder = CASES[prog]
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "leak", [PROG, prog, "api"])
    assert rc == 1, out
    assert named(notes(lines), "__main__." + holder if prog == "history" else holder), \
        notes(lines)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "fixed", [PROG, prog, "api", "fixed"])
    assert rc == 0, out
    assert "python: torch:" not in notes(lines), notes(lines)


@pytest.mark.parametrize("prog", sorted(CASES))
def test_marker_mode(leakgate_bin, tmp_path, prog):
    named, holder = CASES[prog]
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "leak", ["-m", "leakgate", PROG, prog],
                             opts=MARKER)
    assert rc == 1, out
    # the printout under the verdict carries the latest notes; the names are in the results
    assert named(notes(lines), "__main__." + holder if prog == "history" else holder), \
        notes(lines)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "fixed",
                             ["-m", "leakgate", PROG, prog, "fixed"], opts=MARKER)
    assert rc == 0, out
    assert "python: torch:" not in notes(lines), notes(lines)


@pytest.mark.parametrize("prog", sorted(CASES))
def test_plugin(leakgate_bin, tmp_path, prog):
    named, holder = CASES[prog]
    (tmp_path / ("test_%s_shape.py" % prog)).write_text(textwrap.dedent("""\
        import sys
        sys.path.insert(0, %r)
        import pytest
        import torch_shapes  # its model, and its one-time costs paid at import

        @pytest.mark.leakgate(sessions=9, warmup=1)
        def test_leaks():
            torch_shapes.%s_session(0)

        @pytest.mark.leakgate(sessions=9, warmup=1)
        def test_fixed():
            torch_shapes.%s_session(0, fixed=True)
    """ % (EXAMPLES, prog, prog)))
    rc, out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   str(tmp_path / ("test_%s_shape.py" % prog))], cwd=str(tmp_path),
                  env={"LEAKGATE_BIN": leakgate_bin})
    assert "1 failed, 1 passed" in out, out
    assert re.search(r"FAILED \S*::test_leaks", out), out
    assert named(out, "torch_shapes." + holder), out
