"""Shared by the binding's tests: the leakgate binary and libleakgate of the build under test
(LEAKGATE_BIN, LEAKGATE_TEST_LIB, set by tests/bindings/run_python.sh), and a runner."""
import json
import os
import subprocess
import sys

import pytest

SRC = os.environ.get("LEAKGATE_SOURCE_DIR", os.path.abspath(os.path.join(
    os.path.dirname(__file__), "..", "..", "..")))


@pytest.fixture(scope="session")
def leakgate_bin():
    b = os.environ.get("LEAKGATE_BIN")
    if not b or not os.access(b, os.X_OK):
        pytest.fail("LEAKGATE_BIN must name the built leakgate binary")
    return b


@pytest.fixture(scope="session")
def libleakgate():
    p = os.environ.get("LEAKGATE_TEST_LIB")
    if not p or not os.path.exists(p):
        pytest.fail("LEAKGATE_TEST_LIB must name the built libleakgate.so")
    return p


def run(cmd, env=None, cwd=None, timeout=600):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout


def exec_py(leakgate_bin, out, args, opts=(), env=None, cwd=None):
    """leakgate exec [opts] --out OUT -- python ARGS; (exit status, output, results lines)."""
    rc, text = run([leakgate_bin, "exec", "--quiet", "--out", str(out), *opts, "--",
                    sys.executable, *args], env=env, cwd=cwd)
    path = os.path.join(str(out), "results.jsonl")
    lines = [json.loads(x) for x in open(path)] if os.path.exists(path) else []
    return rc, text, lines


def plugin_site(tmp_path, name, source):
    """A site directory (tmp_path/site: put it on PYTHONPATH) where the pytest plugin `name`,
    the module `source`, is installed as a distribution with a pytest11 entry point, as pip
    would install a peer's plugin."""
    site = tmp_path / "site"
    info = site / (name + "-1.0.dist-info")
    info.mkdir(parents=True)
    info.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name)
    info.joinpath("entry_points.txt").write_text("[pytest11]\n%s = %s\n" % (name, name))
    (site / (name + ".py")).write_text(source)
    return site


def plugin_results(tmp_path, nodeid):
    """The results.jsonl the pytest plugin wrote for the test NODEID under tmp_path (the default
    --leakgate-out, leakgate-pytest)."""
    from leakgate.pytest_plugin import out_dir_name
    return tmp_path / "leakgate-pytest" / out_dir_name(nodeid) / "results.jsonl"


def channel(lines, name):
    v = [x for x in lines if x.get("type") == "verdict"]
    assert v, "no verdict line"
    return next(c for c in v[0]["channels"] if c["channel"] == name)
