"""The binding's API: the library rule, no-ops outside exec, sessions, tags, owners and the
Python attribution under leakgate exec (API and marker mode), each judged by leakgate itself."""
import os
import sys
import textwrap

from conftest import channel, exec_py, run

LEAKY = textwrap.dedent("""\
    import sys, leakgate
    KEEP = []
    class Blob:
        pass
    def work(i, leak):
        b = Blob()
        b.data = [bytearray(4096) for _ in range(64)]
        leakgate.track(b, "blob", "blob-%d" % i)
        if leak:
            KEEP.append(b)
    for i in range(7):
        with leakgate.session():
            work(i, leak="leak" in sys.argv)
""")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_outside_exec_every_call_is_a_noop(libleakgate):
    code = textwrap.dedent("""\
        import leakgate
        assert not leakgate.active()
        assert leakgate.library_path, leakgate.library_how
        with leakgate.session():
            with leakgate.tag("t"):
                x = bytearray(1 << 20)
            o = leakgate.track(type("O", (), {})(), "k", "n")
            leakgate.retain(o, x); leakgate.release(o, x); leakgate.untrack(o)
            leakgate.note("hello")
        print("ok", leakgate.library_how)
    """)
    rc, out = run([sys.executable, "-c", code], env={"LEAKGATE_LIB": libleakgate})
    assert rc == 0 and "ok LEAKGATE_LIB" in out, out


def test_library_rule_directory_and_missing(libleakgate, tmp_path):
    code = "import leakgate; print(leakgate.library_path, '|', leakgate.library_how)"
    rc, out = run([sys.executable, "-c", code],
                  env={"LEAKGATE_LIB": os.path.dirname(libleakgate)})
    assert rc == 0 and os.path.basename(libleakgate) in out, out
    # not found: a stand-in whose calls return 0, as libleakgate's do outside exec
    code2 = ("import leakgate\nassert leakgate.library_path is None\n"
             "with leakgate.session():\n    pass\nprint('stand-in')")
    rc, out = run([sys.executable, "-c", code2],
                  env={"LEAKGATE_LIB": str(tmp_path / "nothing.so"), "PATH": "/nonexistent"})
    assert rc == 0 and "stand-in" in out, out


def test_under_exec_the_agent_is_found_without_configuration(leakgate_bin, tmp_path):
    code = ("import leakgate\nassert leakgate.active(), leakgate.library_how\n"
            "print(leakgate.library_how)\nwith leakgate.session():\n    pass\n")
    env = {"LEAKGATE_LIB": "", "PATH": "/nonexistent"}
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "o", ["-c", code], opts=["--warmup", "0",
                                                                          "--require", "none"],
                         env=env)
    assert "beside the preloaded agent" in out, out


def test_leak_named_by_owner_and_python_line(leakgate_bin, tmp_path):
    prog = write(tmp_path, "leaky.py", LEAKY)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [prog, "leak"])
    assert rc == 1, out
    assert channel(lines, "refs")["status"] == "leak"
    assert "blob blob-0 retained at work (leaky.py:8)" in channel(lines, "refs")["why"], out
    assert channel(lines, "je_allocated")["status"] == "leak", out
    notes = [n for s in lines if s.get("type") == "session" for n in s.get("notes", [])]
    assert any("kept alive by __main__.KEEP[" in n and "KEEP is stored into at" in n
               and "leaky.py:10 in work" in n for n in notes), notes
    assert "the program's own attribution" in out, out


def test_clean_twin_passes_with_attribution_on(leakgate_bin, tmp_path):
    prog = write(tmp_path, "leaky.py", LEAKY)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [prog])
    assert rc == 0, out
    assert channel(lines, "refs")["status"] == "pass"


def test_tracemalloc_lines_name_pure_python_growth(leakgate_bin, tmp_path):
    prog = write(tmp_path, "leaky.py", LEAKY)
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [prog, "leak"],
                             env={"LEAKGATE_PY_TRACEMALLOC": "16"})
    assert rc == 1, out
    last = [s for s in lines if s.get("type") == "session"][-1]
    assert any("/session" in n and "leaky.py:7 in work" in n for n in last["notes"]), last["notes"]
    # and the clean twin still passes with tracemalloc on (pure Python: its tables stay put).
    # One CI run (stop 45) saw je_resident step by ~2 MiB within the 6 sessions while rss stayed
    # flat: the verdict was INCONCLUSIVE ("not significant ... run more"), as it should be on that
    # evidence. A user would run it again, and so does this test, once; a twin that never passes,
    # or that leaks, still fails here.
    for attempt in ("c", "c2"):
        rc, out, _ = exec_py(leakgate_bin, tmp_path / attempt, [prog],
                             env={"LEAKGATE_PY_TRACEMALLOC": "16"})
        if rc != 3:
            break
        print("clean twin INCONCLUSIVE on attempt %s, running again:\n%s" % (attempt, out))
    assert rc == 0, out


def test_tag_scope_is_exact(leakgate_bin, tmp_path):
    prog = write(tmp_path, "tagged.py", textwrap.dedent("""\
        import leakgate, sys
        KEEP = []
        for i in range(6):
            with leakgate.session():
                with leakgate.tag("cache/rows"):
                    b = bytearray(100000)
                if "leak" in sys.argv:
                    KEEP.append(b)
                del b
    """))
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", [prog, "leak"])
    assert rc == 1, out
    assert channel(lines, "tagged_host")["status"] == "leak"
    s = [x for x in lines if x.get("type") == "session"][1]
    assert s["leaks"][0]["tag"] == "cache/rows" and s["leaks"][0]["bytes"] >= 100000, s["leaks"]
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "c", [prog])
    assert rc == 0 and channel(lines, "tagged_host")["status"] == "pass", out


def test_errors_are_raised(leakgate_bin, tmp_path):
    code = textwrap.dedent("""\
        import leakgate
        with leakgate.session():
            try:
                with leakgate.session():
                    pass
            except leakgate.LeakgateError as e:
                assert e.code == 1, e
                # the words are the library's (leakgate_strerror), not a copy in the binding
                assert "session_begin while one is open" in str(e), e
                print("ESESSION raised")
    """)
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "o", ["-c", code],
                         opts=["--warmup", "0", "--require", "none"])
    assert "ESESSION raised" in out, out


def test_marker_mode_with_python_m_leakgate(leakgate_bin, tmp_path):
    prog = write(tmp_path, "plain.py", textwrap.dedent("""\
        import sys
        CACHE = {}
        class Rows:
            pass
        for i in range(7):
            r = Rows()
            r.data = [bytearray(2048) for _ in range(100)]
            if "leak" in sys.argv:
                CACHE[i] = r
            print("epoch %d done" % i)
    """))
    marker = ["--session-marker", "^epoch [0-9]+ done"]
    rc, out, lines = exec_py(leakgate_bin, tmp_path / "o", ["-m", "leakgate", prog, "leak"],
                             opts=marker, env={"LEAKGATE_PY_TRACEMALLOC": "8"})
    assert rc == 1, out
    notes = [n for s in lines if s.get("type") == "session" for n in s.get("notes", [])]
    assert any("plain.py:7 in <module>" in n for n in notes), notes
    rc, out, _ = exec_py(leakgate_bin, tmp_path / "c", ["-m", "leakgate", prog], opts=marker,
                         env={"LEAKGATE_PY_TRACEMALLOC": "8"})
    assert rc == 0, out
