"""Real training code from the package index under `leakgate exec` (docs/realworld.md): each of
examples/realworld/ in its leaking and its clean form, in marker mode (the programs know nothing
of leakgate). The leak must be LEAK (exit 1) and its twin PASS (exit 0); and the forward-hook
leak as pytest tests judged by the plugin. Each test needs its package (lightning,
pytorch_forecasting, transformers) and is SKIPPED, saying which, without it: run by ctest
test_bindings_realworld (tests/bindings/run_python.sh ... realworld), where a skip is a SKIP,
never a pass."""
import importlib.util
import os
import sys

import pytest

from conftest import SRC, channel, exec_py, run

EXAMPLES = os.path.join(SRC, "examples", "realworld")
EPOCH = "^epoch [0-9]+ done"
TRIAL = "^trial [0-9]+ done"
# (program, the package it needs, its session marker, the channels its leak must show)
CASES = {
    "lightning_history": ("lightning", EPOCH, ("je_allocated",)),
    "hf_forward_hook": ("transformers", EPOCH, ("je_allocated",)),
    "tft_registry": ("pytorch_forecasting", TRIAL, ("je_allocated",)),
}


def need(package):
    if importlib.util.find_spec(package) is None:
        pytest.skip("SKIP: %s is not installed (examples/realworld needs it)" % package)


def run_case(leakgate_bin, tmp_path, name, mode):
    package, marker, _ = CASES[name]
    need(package)
    return exec_py(leakgate_bin, tmp_path / mode, [os.path.join(EXAMPLES, name + ".py"), mode],
                   opts=["--no-reports", "--session-marker", marker])


def sessions(lines):
    return [x for x in lines if x.get("type") == "session"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_leak_is_a_leak(leakgate_bin, tmp_path, name):
    rc, out, lines = run_case(leakgate_bin, tmp_path, name, "leak")
    assert rc == 1, out
    assert len(sessions(lines)) == 12, out  # every epoch or trial a session, none lost
    for ch in CASES[name][2]:
        assert channel(lines, ch)["status"] == "leak", (ch, out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_clean_twin_passes(leakgate_bin, tmp_path, name):
    rc, out, lines = run_case(leakgate_bin, tmp_path, name, "clean")
    assert len(sessions(lines)) == 12, out
    verdict = next(x for x in lines if x.get("type") == "verdict")
    if name == "tft_registry" and rc != 0:
        # docs/realworld.md, finding 4: pandas and Lightning keep ~1 KiB every other trial (a
        # list and a dict that grow); je_allocated passes it, the exact census has no byte floor
        # and calls 3 such sessions a LEAK, and the census's whole-session profile then moves rss
        assert channel(lines, "je_allocated")["status"] == "pass", out
        pytest.xfail("the census judges a few KiB kept by pandas/Lightning a leak: %s"
                     % verdict.get("summary", "")[:300])
    assert rc == 0, out


def test_the_plugin_fails_the_kept_hook_and_passes_the_removed_one(leakgate_bin, tmp_path):
    need("transformers")
    rc, out = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                   os.path.join(EXAMPLES, "test_hf_hooks.py")], cwd=str(tmp_path),
                  env={"LEAKGATE_BIN": leakgate_bin})
    assert rc == 1 and "1 failed, 1 passed" in out, out
    assert "FAILED " in out and "test_epoch_keeps_its_hook" in out, out
