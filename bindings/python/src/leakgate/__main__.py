"""python -m leakgate [-m MODULE | SCRIPT] [ARGS...] — runs a program with the binding's
attribution installed, for programs that know nothing of leakgate: under
``leakgate exec --session-marker RE -- python -m leakgate train.py``, once leakgate arms heap
profiling the sessions the marker ends carry the lines where Python's heap grew (tracemalloc)
into the results and the verdict's printout. Outside exec it just runs the program.

python -m leakgate --where — the leakgate binary, agent and libleakgate this installation uses
(the package's own first: pip install builds them into leakgate/_native/); exit 1 when the
package carries no binary."""

import os
import runpy
import sys


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__.strip() + "\n")
        return 0 if argv else 2
    if argv[0] == "--where":
        return where()
    import leakgate
    from leakgate import _attrib

    _attrib.ensure()  # before the program's first line: one-time costs land before its sessions
    if argv[0] == "-m":
        if len(argv) < 2:
            sys.stderr.write("python -m leakgate: -m needs a module\n")
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")
    del leakgate
    return 0


def where():
    import shutil

    import leakgate
    from leakgate import _bundle
    exe = _bundle.binary()
    lines = [("binary", exe or "none in the package (%s/bin); LEAKGATE_BIN=%s, PATH: %s" % (
                  _bundle.ROOT, os.environ.get("LEAKGATE_BIN", ""), shutil.which("leakgate"))),
             ("agent", _bundle.agent() or "none in the package"),
             ("library", "%s (%s)" % (leakgate.library_path, leakgate.library_how))]
    for k, v in lines:
        sys.stdout.write("%-8s %s\n" % (k, v))
    return 0 if exe else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
