"""exec's own lines keep their order in one log: with stdout and stderr in one pipe (2>&1, a CI
log) stdout is fully buffered, and the "results and reports in" line (stderr) came out ahead of
the verdict and inside exec's notes (docs/realworld.md, finding 8)."""
import sys
import textwrap

from conftest import run

PROG = textwrap.dedent("""\
    import leakgate
    for i in range(5):
        with leakgate.session():
            leakgate.note("session %d: a note printed after the verdict" % i)
""")


def test_the_reports_line_follows_the_verdict_in_a_merged_log(leakgate_bin, tmp_path):
    prog = tmp_path / "notes.py"
    prog.write_text(PROG)
    rc, out = run([leakgate_bin, "exec", "--out", str(tmp_path / "o"), "--", sys.executable,
                   str(prog)])  # stdout and stderr: one pipe
    assert rc == 0, out
    lines = out.splitlines()
    verdict = next(i for i, x in enumerate(lines) if x.startswith("PASS:"))
    reports = [i for i, x in enumerate(lines) if "leakgate: results and reports in" in x]
    assert len(reports) == 1 and lines[reports[0]].startswith("leakgate: results"), out
    note = max(i for i, x in enumerate(lines) if "a note printed after the verdict" in x)
    assert verdict < note < reports[0], out
