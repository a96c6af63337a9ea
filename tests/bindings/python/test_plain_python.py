"""A plain ``python PROG`` under ``leakgate exec --session-marker`` (issues 34 and 41): exec
loads the binding into a Python CMD by itself (harness/exec/exec_py.c, the package's
_site/sitecustomize.py), so the printout names the global that keeps what leaked
(examples/python-leaks/sweep.py); its fixed twin prints none; --no-python and LEAKGATE_PY=0 turn
it off; a user's own sitecustomize still runs; `python -m leakgate` and a program that imports
leakgate find it set up once. Expected names and lines are read from the example's source."""
import ast
import os
import re
import stat

import pytest

from conftest import SRC, exec_py

PROG = os.path.join(SRC, "examples", "python-leaks", "sweep.py")
MARKER = ["--session-marker", "^run [0-9]+ done"]


def source_lines():
    """(the line that creates FINISHED, the line in main() that appends to it): from sweep.py."""
    tree = ast.parse(open(PROG).read())
    made = next(n.lineno for n in tree.body if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == "FINISHED" for t in n.targets))
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    stored = next(n.lineno for n in ast.walk(main) if isinstance(n, ast.Call)
                  and getattr(n.func, "attr", None) == "append"
                  and getattr(n.func.value, "id", None) == "FINISHED")
    return made, stored


def kept(out):
    return [x.strip() for x in out.splitlines() if "python: kept alive by:" in x]


def python_lines(out):
    return [x.strip() for x in out.splitlines() if x.strip().startswith("python:")]


def assert_named(rc, out, shift=0):
    """One kept line, naming FINISHED by sweep.py's lines (shift: lines put before them)."""
    made, stored = (n + shift for n in source_lines())
    assert rc == 1, out
    want = (r"python: kept alive by: module __main__\.FINISHED \(list, \S*sweep\.py:%d\) -> "
            r"\[[0-9]+\] Trainer.*; FINISHED is stored into at \S*sweep\.py:%d in main"
            % (made, stored))
    lines = kept(out)
    assert len(lines) == 1 and re.search(want, lines[0]), (want, lines, out)


def test_plain_python_names_the_global(leakgate_bin, tmp_path):
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "leak", [PROG], opts=MARKER)
    assert_named(rc, out)
    assert "rerun" not in out and "python -m leakgate PROG" not in out, out


def test_fixed_twin_names_nothing(leakgate_bin, tmp_path):
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "fixed", [PROG, "fixed"], opts=MARKER)
    assert rc == 0, out
    assert not python_lines(out), out


@pytest.mark.parametrize("how", ["--no-python", "LEAKGATE_PY=0"])
def test_off_switch(leakgate_bin, tmp_path, how):
    opts, env = (MARKER + [how], None) if how.startswith("--") else (MARKER, {"LEAKGATE_PY": "0"})
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "off", [PROG], opts=opts, env=env)
    assert rc == 1, out  # still a leak: only the Python lines are gone
    assert not python_lines(out), out


def test_user_sitecustomize_still_runs(leakgate_bin, tmp_path):
    site, mark = tmp_path / "usersite", tmp_path / "ran"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\nopen(%r, 'w').write('%%d %%s' %% (os.getpid(), "
        "'leakgate' in sys.modules))\n" % str(mark))
    old = os.environ.get("PYTHONPATH")
    env = {"PYTHONPATH": str(site) + (os.pathsep + old if old else "")}
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "leak", [PROG], opts=MARKER, env=env)
    assert mark.exists(), out
    pid, loaded = mark.read_text().split()
    assert loaded == "False", "the user's sitecustomize runs first, as python -m leakgate's would"
    assert_named(rc, out)


def test_a_script_run_through_its_interpreter(leakgate_bin, tmp_path):
    # CMD is the script, not "python": recognised by the interpreter its #! names
    import sys
    script = tmp_path / "sweep.py"
    script.write_text("#!%s\n" % sys.executable + open(PROG).read())
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    from conftest import run
    rc, out = run([leakgate_bin, "exec", "--quiet", "--out", str(tmp_path / "o"), *MARKER,
                   "--", str(script)])
    assert_named(rc, out, shift=1)  # the #! line


@pytest.mark.parametrize("how", ["-m leakgate", "import leakgate"])
def test_set_up_once(leakgate_bin, tmp_path, how):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import sys\nimport leakgate\nfrom leakgate import _attrib\n"
        "print('state', type(_attrib._state).__name__, sys.modules['leakgate'] is leakgate,\n"
        "      leakgate.__file__, flush=True)\n"
        "sys.argv = [%r]\nexec(compile(open(%r).read(), %r, 'exec'))\n" % (PROG, PROG, PROG))
    args = (["-m", "leakgate", str(prog)] if how.startswith("-m") else [str(prog)])
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "o", args, opts=MARKER)
    want = os.path.join(SRC, "bindings", "python", "src", "leakgate", "__init__.py")
    assert "state _Attribution True %s" % os.path.realpath(want) in out.replace(
        want, os.path.realpath(want)), out
    assert len(kept(out)) == 1, out
