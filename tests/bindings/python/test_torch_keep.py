"""Who keeps it in PyTorch's terms (issue 41, item 2): a forward hook registered every epoch and
never removed is named by the module that holds it (its path from the model's global, the
hook's dict and the closure's variable), and heads trained with one Adam optimizer by the
optimizer's `state` keyed by their parameters (examples/python-leaks/torch_shapes.py, `hook`
and `optimizer`); each fixed twin prints no path. The globals, their lines and the hook's
definition line are read from the example's source. Needs torch (Debian: python3-torch): ctest
test_bindings_torch, a SKIP without it."""
import ast
import os
import re

import pytest

from conftest import SRC, exec_py

torch = pytest.importorskip("torch", reason="SKIP: torch is not installed (python3-torch)")

PROG = os.path.join(SRC, "examples", "python-leaks", "torch_shapes.py")


def source_lines():
    """{global name: the line assigning it, function name: its def line} of torch_shapes.py."""
    tree = ast.parse(open(PROG).read())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            out.setdefault(node.targets[0].id, node.lineno)
        elif isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, node.lineno)
    return out


def kept(lines):
    return [n for s in lines if s.get("type") == "session" for n in s.get("notes", [])
            if n.startswith("python: kept alive by:")]


def expected(shape):
    at = source_lines()
    if shape == "hook":
        # model[0]'s forward hooks; the hook's list `acts` is in its closure
        return (r"python: kept alive by: module __main__\.model \(Sequential, \S*torch_shapes\.py:"
                r"%d\) -> \.0\._forward_hooks\[[0-9]+\] function hook_session\.<locals>\."
                r"save_activation \(\S*torch_shapes\.py:%d\) closure `acts`\[[0-9]+\] Tensor "
                r"\(torch\)" % (at["model"], at["save_activation"]))
    # a head is a Linear(64, 64): its weight is the state's first key
    return (r"python: kept alive by: module __main__\.heads_opt \(Adam, \S*torch_shapes\.py:%d\) "
            r"-> \.state key Parameter float32 \[64, 64\]" % at["heads_opt"])


@pytest.mark.parametrize("shape", ["hook", "optimizer"])
def test_named_in_pytorch_terms(leakgate_bin, tmp_path, shape):
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "leak", [PROG, shape, "api"])
    assert rc == 1, out
    paths = kept(lines)
    assert any(re.search(expected(shape), p) for p in paths), (expected(shape), paths)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "fixed", [PROG, shape, "api", "fixed"])
    assert rc == 0, out
    assert not kept(lines), kept(lines)
