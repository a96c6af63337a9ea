"""Who keeps it (issue 41, item 1): with no option set, once leakgate arms heap profiling the
binding names the root that keeps what a leaking session kept, by the interpreter's referrers:
a module-level registry of trainers, a class attribute that caches them, and a reference
taken from C that no object shows, a local list of a function running in another thread
(examples/python-leaks/registry.py), in API mode, in marker mode (`python -m leakgate`) and
through the pytest plugin; the fixed twins print no path. The expected root, its line and the
list index are read from the example's source and the note's own session, never copied from a
run."""
import ast
import os
import re
import sys
import textwrap

import pytest

from conftest import SRC, exec_py, run

PROG = os.path.join(SRC, "examples", "python-leaks", "registry.py")
MARKER = ["--session-marker", "^run [0-9]+ done"]


def assigned_at(name, cls=None):
    """The line of registry.py that assigns `name` (in class `cls`): from its source."""
    tree = ast.parse(open(PROG).read())
    body = tree.body
    if cls:
        body = next(n.body for n in body if isinstance(n, ast.ClassDef) and n.name == cls)
    return next(n.lineno for n in body if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == name for t in n.targets))


def notes(lines):
    return [n for s in lines if s.get("type") == "session" for n in s.get("notes", [])]


def kept_lines(text_or_notes):
    lines = text_or_notes if isinstance(text_or_notes, list) else text_or_notes.splitlines()
    return [n.strip() for n in lines if "python: kept alive by:" in n]


def registry_named(line, module):
    """The registry's path: its global, the line that creates it, the index one of the two
    sessions the kept were born in appended (run N is session N: one a session from the first),
    the other trainer, and the bytes a session."""
    return re.search(r"python: kept alive by: module %s\.RUNS \(list, \S*registry\.py:%d\) -> "
                     r"\[([0-9]+)\] Trainer( \(registry\))? and 1 more like it; born in sessions "
                     r"([0-9]+)-[0-9]+ and kept: [0-9,]+ objects, ([0-9.]+) KiB/session"
                     % (re.escape(module), assigned_at("RUNS")), line)


@pytest.mark.parametrize("mode", ["api", "marker"])
def test_registry_is_named_by_its_global(leakgate_bin, tmp_path, mode):
    args, opts = ([PROG, "registry", "api"], []) if mode == "api" else (
        ["-m", "leakgate", PROG, "registry"], MARKER)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "leak", args, opts=opts)
    assert rc == 1, out
    kept = kept_lines(notes(lines))
    assert kept, notes(lines)
    m = registry_named(kept[0], "__main__")
    assert m, kept
    first = int(m.group(3))
    assert int(m.group(1)) in (first, first + 1), kept  # RUNS[N] is the trainer of session N
    # a model is 4096 floats (24 B each) in a list (8 B a slot): at least that much is kept
    weights = 4096 * (24 + 8)
    assert float(m.group(4)) * 1024 >= weights, kept
    assert "RUNS is stored into at" in kept[0] and "in run_session" in kept[0], kept
    assert any(re.search(r"python: who keeps it: [0-9]+ objects visited in [0-9.]+ s", n)
               for n in notes(lines)), notes(lines)
    assert "kept alive by: module __main__.RUNS" in out, out  # the printout under the verdict


def waits_at(func, queue):
    """The line where registry.py's function `func` waits on its `queue.get()`: where its
    thread is when the session ends."""
    tree = ast.parse(open(PROG).read())
    body = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func)
    return next(n.lineno for n in ast.walk(body) if isinstance(n, ast.Call)
                and getattr(n.func, "attr", None) == "get"
                and getattr(n.func.value, "id", None) == queue)


def root_of(shape):
    """The root that keeps a trainer a run in `shape`, as a regex: a class attribute, or the
    feeder thread's local list (read from its frames as the walk's copy was forked)."""
    if shape == "classattr":
        return (r"class attribute __main__\.Cache\.runs \(dict, \S*registry\.py:%d\)"
                % assigned_at("runs", "Cache"))
    return (r"local cache of feeder_loop \(list, \S*registry\.py:%d\) in thread 'feeder'"
            % waits_at("feeder_loop", "jobs"))


@pytest.mark.parametrize("shape", ["classattr", "thread"])
def test_class_attribute_and_thread_local_are_named(leakgate_bin, tmp_path, shape):
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "leak", [PROG, shape, "api"])
    assert rc == 1, out
    kept = kept_lines(notes(lines))
    want = (r"python: kept alive by: %s -> \[([0-9]+)\] Trainer and 1 more like it; born in "
            r"sessions ([0-9]+)-" % root_of(shape))
    m = re.search(want, kept[0]) if kept else None
    # Cache.runs[N] and cache[N] are the trainer of run N, run N is session N
    assert m and int(m.group(1)) - int(m.group(2)) in (0, 1), (want, kept)


def test_a_reference_from_c_is_said(leakgate_bin, tmp_path):
    # Py_IncRef through ctypes and never Py_DecRef: no object the collector sees keeps them
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "leak", [PROG, "capi", "api"])
    assert rc == 1, out
    said = [n for n in notes(lines) if n.startswith(
        "python: Trainer is held by a reference the garbage collector cannot see (a C "
        "extension's own")]
    assert said and not kept_lines(notes(lines)), notes(lines)


@pytest.mark.parametrize("shape", ["registry", "classattr", "capi", "thread"])
def test_fixed_twins_print_no_path(leakgate_bin, tmp_path, shape):
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "fixed", [PROG, shape, "api", "fixed"])
    assert rc == 0, out
    assert not [n for n in notes(lines) if n.startswith("python: who keeps it")], notes(lines)
    assert "python: kept alive by" not in out and "cannot see" not in out, out


def test_off_when_asked(leakgate_bin, tmp_path):
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "off", [PROG, "registry", "api"],
                             env={"LEAKGATE_PY_KEEP": "0"})
    assert rc == 1, out
    assert not kept_lines(notes(lines)), notes(lines)


def test_plugin(leakgate_bin, tmp_path):
    (tmp_path / "test_sweep.py").write_text(textwrap.dedent("""\
        import itertools
        import sys
        sys.path.insert(0, %r)
        import pytest
        import registry

        RUN = itertools.count()

        @pytest.mark.leakgate(sessions=8, warmup=1)
        def test_keeps_trainers():
            registry.run_session(next(RUN))

        @pytest.mark.leakgate(sessions=8, warmup=1)
        def test_keeps_losses():
            registry.run_session(next(RUN), fixed=True)
    """ % os.path.dirname(PROG)))
    rc, out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   str(tmp_path / "test_sweep.py")], cwd=str(tmp_path),
                  env={"LEAKGATE_BIN": leakgate_bin})
    assert "1 failed, 1 passed" in out, out
    assert re.search(r"FAILED \S*::test_keeps_trainers", out), out
    kept = kept_lines(out)
    assert kept and registry_named(kept[0], "registry"), out
