"""pytest plugin ``leakgate`` (entry point pytest11): leak tests judged by leakgate itself.

    @pytest.mark.leakgate(sessions=6, warmup=1)
    def test_train_session(model_config):
        train_one_session(model_config)          # the body is one session

``pytest`` runs each marked test (every test with ``--leakgate``) under its own ``leakgate exec``:
a fresh ``python -m pytest NODEID`` with the agent preloaded (and the options of this run that
decide what it loads: ``-p``, conftest, import mode, ini overrides), where this plugin calls the
test body ``warmup + sessions`` times, each inside ``leakgate.session()``. So the channels, budgets,
rules, verdict and "why" are exactly the CLI's (the exec parent judges; nothing is judged in
Python), the results are a results JSONL per test (``leakgate report`` and ``compare`` read
them) with report.html beside it, and Python-level attribution (who holds a tracked object,
tracemalloc lines) comes with the verdict. A leak fails the test; so does an inconclusive verdict
(a PASS is earned), with the why of each channel.

Under ``leakgate exec -- python -m pytest ...`` the plugin runs the sessions in that process
instead: the agent is already there, every channel is measured and exec's own verdict (its exit
status) judges every session of the process as one run, so select one leakgate test.

The binary is, first match wins: ``--leakgate-bin``, the one this package carries (``pip install``
builds it into ``leakgate/_native/``), ``LEAKGATE_BIN``, ``leakgate`` on PATH. Without one the body
still runs its sessions and the test FAILS as not judged, naming the channels this process lacks;
so does an inconclusive verdict. A CI is never green over nothing: only
``--leakgate-skip-unjudged`` turns those two into skips (a leak still fails).
Fixtures are set up once per test; the sessions repeat its body with the same arguments.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys

import pytest

CHANNELS = ("tagged_host", "refs", "je_allocated", "je_active", "je_resident", "rss")


def pytest_addoption(parser):
    g = parser.getgroup("leakgate", "leak tests judged by leakgate (leakgate exec)")
    g.addoption("--leakgate", action="store_true",
                help="gate every test, as if marked @pytest.mark.leakgate")
    g.addoption("--leakgate-sessions", type=int, default=6, metavar="N",
                help="measured sessions for tests whose marker does not say (default 6)")
    g.addoption("--leakgate-warmup", type=int, default=1, metavar="W",
                help="warm-up sessions for tests whose marker does not say (default 1)")
    g.addoption("--leakgate-out", default="leakgate-pytest", metavar="DIR",
                help="where each test's results.jsonl and report go (DIR/NODEID-HASH/: the "
                     "test id folded to a name, and a hash of the whole id)")
    g.addoption("--leakgate-bin", default=None, metavar="PATH",
                help="the leakgate binary (default: the one this package carries, else "
                     "LEAKGATE_BIN, else leakgate on PATH)")
    g.addoption("--leakgate-skip-unjudged", action="store_true",
                help="skip, instead of failing, a marked test that could not be judged (no "
                     "leakgate binary, or an inconclusive verdict); a leak still fails")
    g.addoption("--leakgate-require", default=None, metavar="CH,...",
                help="channels the verdict requires (leakgate exec --require)")
    g.addoption("--leakgate-malloc", action="store_true",
                help="PYTHONMALLOC=malloc in the test's process: every Python object a malloc "
                     "that jemalloc's channels see (not with tag scopes: Python's free lists keep "
                     "freed objects allocated, which a tag scope reports as exact leaks)")
    g.addoption("--leakgate-timeout", type=float, default=900, metavar="S",
                help="seconds a gated test may run (default 900)")
    g.addoption("--leakgate-child", action="store_true", help=argparse_hidden())


def argparse_hidden():
    import argparse
    return argparse.SUPPRESS


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "leakgate(sessions=6, warmup=1, require=None): run the test body as warm-up "
        "plus measured sessions under leakgate exec; fail on a leak, an inconclusive verdict or no "
        "leakgate to judge it (--leakgate-skip-unjudged: skip the last two)")


def _plan(item):
    m = item.get_closest_marker("leakgate")
    opt = item.config.getoption
    if m is None and not opt("--leakgate"):
        return None
    kw = dict(m.kwargs) if m else {}
    if m and m.args:
        kw.setdefault("sessions", m.args[0])
    return (int(kw.get("sessions", opt("--leakgate-sessions"))),
            int(kw.get("warmup", opt("--leakgate-warmup"))),
            kw.get("require", opt("--leakgate-require")))


def _in_process():
    import leakgate
    return leakgate.active()


def _run_sessions(item, n):
    import leakgate
    fn = item.obj
    args = {a: item.funcargs[a] for a in item._fixtureinfo.argnames}
    said = _what_else_runs(fn)
    for _ in range(n):
        with leakgate.session():
            for line in said:
                leakgate.note(line)
            fn(**args)


def _what_else_runs(fn):
    """Lines naming what runs inside the sessions beside the test's own body: a wrapper (a
    decorator, or another plugin's pytest_pyfunc_call hookwrapper that replaced the test
    function, as pytest-memray does for its markers) and a tracer or profiler already set
    (coverage, a debugger). Their work is measured with the test's; a tracer or profiler also
    makes CPython 3.11 allocate each code object's line table the first time it traces that code,
    which inside a tag scope is a tagged leak of the session that first runs it."""
    out = []
    code = getattr(fn, "__code__", None)
    if getattr(fn, "__wrapped__", None) is not None and code is not None:
        out.append("pytest: the test function is a wrapper, %s (%s:%d): what it does around "
                   "the body (another plugin's tracker?) is measured with the test"
                   % (code.co_name, code.co_filename, code.co_firstlineno))
    for what, f in (("tracer", sys.gettrace()), ("profiler", sys.getprofile())):
        if f is not None:
            out.append("pytest: a %s is set (%r): its one-time state, and CPython's line table "
                       "of each code object it first traces, is born in the sessions" % (what, f))
    return out


def _binary(config):
    """The leakgate binary, first match wins: --leakgate-bin, the package's own, LEAKGATE_BIN,
    PATH; None when there is none."""
    from leakgate import _bundle
    return (config.getoption("--leakgate-bin") or _bundle.binary()
            or os.environ.get("LEAKGATE_BIN") or shutil.which("leakgate"))


def _unjudged(config, why):
    """A test leakgate could not judge fails (a CI is never green over nothing), or with
    --leakgate-skip-unjudged is skipped; either way saying why."""
    if config.getoption("--leakgate-skip-unjudged"):
        pytest.skip(why)
    pytest.fail(why + "\n(--leakgate-skip-unjudged skips such a test instead of failing it)",
                pytrace=False)


def out_dir_name(nodeid):
    """The folder, under --leakgate-out, of the test NODEID: a readable prefix (the id with other
    characters folded to `_`, cut at 100) and 16 hex digits of the SHA-256 of the whole id, so two
    ids that fold or cut alike (`a b` and `a_b`, long parametrized ids) never share a folder: a
    shared one let the later test overwrite the earlier's results (and, under xdist, fail)."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_.-")[:100] or "test"
    digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return "%s-%s" % (readable, digest)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    plan = _plan(pyfuncitem)
    if plan is None:
        return None
    sessions, warmup, require = plan
    config = pyfuncitem.config
    if config.getoption("--leakgate-child") or _in_process():
        _run_sessions(pyfuncitem, warmup + sessions)
        return True
    exe = _binary(config)
    if not exe:
        _run_sessions(pyfuncitem, warmup + sessions)
        from leakgate import _bundle
        _unjudged(config, "leakgate: not judged: no leakgate binary (--leakgate-bin, this "
                  "package's %s, LEAKGATE_BIN, PATH), so no leakgate exec; this process lacks "
                  "every channel (%s: the agent and jemalloc are not loaded); the body ran %d "
                  "session(s) unjudged"
                  % (os.path.join(_bundle.ROOT, "bin", "leakgate"), ", ".join(CHANNELS),
                     warmup + sessions))
    return _run_under_exec(pyfuncitem, exe, sessions, warmup, require)


def _run_under_exec(item, exe, sessions, warmup, require):
    config = item.config
    root = str(config.rootpath)
    out = os.path.abspath(os.path.join(str(config.invocation_params.dir),
                                       config.getoption("--leakgate-out"), out_dir_name(item.nodeid)))
    cmd = [exe, "exec", "--warmup", str(warmup), "--sessions", str(sessions), "--out", out]
    if require:
        cmd += ["--require", require]
    cmd += ["--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--leakgate-child", "--leakgate", "--leakgate-sessions", str(sessions),
            "--leakgate-warmup", str(warmup), "--rootdir", root]
    if config.inipath:
        cmd += ["-c", str(config.inipath)]
    cmd += _loading_options(config)
    cmd.append(item.nodeid)
    env = dict(os.environ)
    if config.getoption("--leakgate-malloc"):
        env["PYTHONMALLOC"] = "malloc"
    try:
        p = subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=config.getoption("--leakgate-timeout"))
    except subprocess.TimeoutExpired as e:
        pytest.fail("leakgate: %s ran past --leakgate-timeout (%ss)" % (item.nodeid, e.timeout),
                    pytrace=False)
    item.user_properties.append(("leakgate_results", os.path.join(out, "results.jsonl")))
    text = p.stdout
    verdict = _verdict_part(text)
    where = "results: %s/results.jsonl, report: %s/report.html" % (out, out)
    if p.returncode == 0:
        item.add_report_section("call", "leakgate", verdict + "\n" + where)
        return True
    if p.returncode == 3:
        _unjudged(config, "leakgate: not judged: INCONCLUSIVE (a PASS is earned; leakgate exec "
                  "exit 3)\n%s\n%s" % (verdict, where))
    word = {1: "LEAK", 2: "usage error",
            4: "the test's process failed"}.get(p.returncode, "exit %d" % p.returncode)
    pytest.fail("leakgate: %s (leakgate exec exit %d)\n%s\n%s"
                % (word, p.returncode, text if p.returncode in (2, 4) else verdict, where),
                pytrace=False)


# The parent's options that decide what code the test's process loads: plugins (-p NAME,
# -p no:NAME), conftest files, the import mode, ini overrides. The child must be the same pytest
# as the parent: a plugin the parent blocked but the child loads runs inside the sessions (ci/peers
# blocked pytest-memray with -p no:memray; the child loaded it, and its tracker wrapped the body).
_LOADING = {"-p": True, "-o": True, "--override-ini": True, "--confcutdir": True,
            "--import-mode": True, "--noconftest": False}


def _loading_options(config):
    args, out, i = [str(a) for a in config.invocation_params.args], [], 0
    here = str(config.invocation_params.dir)
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=") if a.startswith("--") else (a[:2], "", a[2:])
        takes = _LOADING.get(name)
        i += 1
        if takes is None or (not takes and (eq or value)):
            continue
        if takes and not eq and not value:
            if i == len(args):
                break
            value, i = args[i], i + 1
        if name == "--confcutdir":
            value = os.path.join(here, value)
        out += [name, value] if takes else [name]
    return out


def _verdict_part(text):
    """exec's verdict table, its summary and the attribution lines, without the progress."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("channel ") and " verdict " in line:
            return "\n".join(lines[i:])
    return text
