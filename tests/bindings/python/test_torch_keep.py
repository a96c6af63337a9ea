"""Who keeps it in PyTorch's terms (issue 41, item 2): a forward hook registered every epoch and
never removed is named by the module that holds it (its path from the model's global, the
hook's dict and the closure's variable), heads trained with one Adam optimizer by the
optimizer's `state` keyed by their parameters, and DataLoader iterators kept after one batch by
the batches their workers prefetched and the workers they keep alive
(examples/python-leaks/torch_shapes.py, `hook` and `optimizer`, and loader_iters.py); each
fixed twin prints no path. The globals, their lines, the hook's definition line and the
loader's sizes are read from the examples' sources. Needs torch (Debian: python3-torch): ctest
test_bindings_torch, a SKIP without it."""
import ast
import os
import re

import pytest

from conftest import SRC, exec_py

torch = pytest.importorskip("torch", reason="SKIP: torch is not installed (python3-torch)")

PROG = os.path.join(SRC, "examples", "python-leaks", "torch_shapes.py")
LOADER = os.path.join(SRC, "examples", "python-leaks", "loader_iters.py")


def source_lines(prog=PROG):
    """{global name: the line assigning it, function name: its def line} of prog."""
    tree = ast.parse(open(prog).read())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            out.setdefault(node.targets[0].id, node.lineno)
        elif isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, node.lineno)
    return out


def constants():
    """loader_iters.py's `A, B = 1, 2` assignments of numbers, by name (the loader's sizes)."""
    tree = ast.parse(open(LOADER).read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            try:
                values = ast.literal_eval(node.value)
            except ValueError:
                continue
            out.update(zip((t.id for t in node.targets[0].elts), values))
    return out


def kept(lines):
    return [n for s in lines if s.get("type") == "session" for n in s.get("notes", [])
            if n.startswith("python: kept alive by:")]


def expected(shape):
    at = source_lines(LOADER if shape == "loader" else PROG)
    if shape == "hook":
        # model[0]'s forward hooks; the hook's list `acts` is in its closure
        return (r"python: kept alive by: module __main__\.model \(Sequential, \S*torch_shapes\.py:"
                r"%d\) -> \.0\._forward_hooks\[[0-9]+\] function hook_session\.<locals>\."
                r"save_activation \(\S*torch_shapes\.py:%d\) closure `acts`\[[0-9]+\] Tensor "
                r"\(torch\)" % (at["model"], at["save_activation"]))
    if shape == "loader":
        # ITERS[N] is epoch N's iterator; its batches that came back before batch 0 was taken
        # (a worker's, while the first row is slow), each [x, y] as default_collate stacks them
        c = constants()
        return (r"python: kept alive by: module __main__\.ITERS \(list, \S*loader_iters\.py:%d\) "
                r"-> \[[0-9]+\] DataLoader iterator \(torch, %d workers, prefetch_factor %d\)"
                r"(?: and 1 more like it)? -> its prefetched batch(?:es)? (?P<batches>[0-9, and]+) "
                r"of %d, received from its workers and never taken \(\[Tensor float32 \[%d, "
                r"%d\], Tensor float32 \[%d, 1\]\]\); its %d worker processes \(pids "
                r"(?P<pids>[0-9, ]+)\) live on with it"
                % (at["ITERS"], c["WORKERS"], c["PREFETCH"], c["ROWS"] // c["BATCH"],
                   c["BATCH"], c["FEATURES"], c["BATCH"], c["WORKERS"]))
    # a head is a Linear(64, 64): its weight is the state's first key
    return (r"python: kept alive by: module __main__\.heads_opt \(Adam, \S*torch_shapes\.py:%d\) "
            r"-> \.state key Parameter float32 \[64, 64\]" % at["heads_opt"])


@pytest.mark.parametrize("shape", ["hook", "optimizer", "loader"])
def test_named_in_pytorch_terms(leakgate_bin, tmp_path, shape):
    args = [LOADER] if shape == "loader" else [PROG, shape]
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "leak", args + ["api"])
    assert rc == 1, out
    paths = kept(lines)
    found = [m for m in (re.search(expected(shape), p) for p in paths) if m]
    assert found, (expected(shape), paths)
    if shape == "loader":
        loader_named(found[0], lines)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "fixed", args + ["api", "fixed"])
    assert not kept(lines), kept(lines)
    # the loader's batches come back as tensors in shared memory, and torch.multiprocessing
    # keeps an entry for each storage received (reductions.shared_cache, pruned only past 128
    # entries): the binding's settle hook prunes the dead ones before each measurement, so the
    # fixed loader passes (before it, the census called those entries kept every epoch)
    assert rc == 0, out


def loader_named(m, lines):
    """The batches named are some of the first prefetch_factor x num_workers asked for, but
    batch 0 (taken), and the pids are children exec saw."""
    c = constants()
    batches = [int(b) for b in re.split(r", | and ", m.group("batches"))]
    assert batches and all(0 < b < c["PREFETCH"] * c["WORKERS"] for b in batches), m.group(0)
    seen = {p["pid"] for s in lines if s.get("type") == "session"
            for p in s.get("processes", [])}
    pids = [int(p) for p in m.group("pids").split(", ")]
    assert len(pids) == c["WORKERS"] and set(pids) <= seen, (pids, seen)
