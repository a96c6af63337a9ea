"""The native parts this package carries, in ``leakgate/_native/`` (``pip install`` builds them
with the project's CMake, bindings/python/pyproject.toml): the ``leakgate`` binary, the agent
``leakgate exec`` preloads and libleakgate, with the shared libraries the binary needs beyond
glibc. The pytest plugin and the library rule (``_lib.py``) look here first; ``leakgate`` on the
venv's PATH (the console script) runs the binary; ``python -m leakgate --where`` says what was
found. A package installed from the sources without its native parts (the repository's own
tests put ``src/`` on the path) has none, and every function here returns None."""

import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")


def _file(*parts, exe=False):
    p = os.path.join(ROOT, *parts)
    return p if os.path.isfile(p) and (not exe or os.access(p, os.X_OK)) else None


def binary():
    """The packaged ``leakgate``, or None."""
    return _file("bin", "leakgate", exe=True)


def agent():
    """The packaged ``libleakgate-agent.so`` (the binary finds it by itself), or None."""
    return _file("lib", "leakgate", "libleakgate-agent.so")


def library():
    """The packaged ``libleakgate.so``, or None."""
    return _file("lib", "libleakgate.so") or _file("lib", "libleakgate.so.1")


def main(argv=None):
    """The ``leakgate`` console script: the packaged binary, with the same arguments."""
    argv = sys.argv[1:] if argv is None else argv
    exe = binary()
    if not exe:
        sys.stderr.write("leakgate: this Python package has no leakgate binary (%s): it was "
                         "installed without its native parts; reinstall with "
                         "`pip install ./bindings/python` from a leakgate checkout\n" % ROOT)
        return 2
    os.execv(exe, [exe] + list(argv))
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
