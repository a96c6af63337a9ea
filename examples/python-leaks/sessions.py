"""How the examples here run their sessions, from their arguments: `api` puts each session inside
`leakgate.session()`; otherwise each ends with a printed marker line ("WORD N done") for
`leakgate exec --session-marker`. `fixed` runs the twin without the leak; a number is how many
sessions (12 when none is given).
"""
import sys


def run(session, word, args=None):
    """Calls session(i, fixed) for each session i, as the arguments say."""
    args = sys.argv[1:] if args is None else args
    fixed, api = "fixed" in args, "api" in args
    count = next((int(a) for a in args if a.isdigit()), 12)
    if api:
        import leakgate
    for i in range(count):
        if api:
            with leakgate.session():
                session(i, fixed)
        else:
            session(i, fixed)
            print("%s %d done" % (word, i), flush=True)
