"""leakgate's sitecustomize: how ``leakgate exec -- python PROG`` gets the binding with no
command change. exec puts this folder first on a Python CMD's PYTHONPATH (harness/exec/exec_py.c;
off with ``--no-python`` or LEAKGATE_PY=0), and Python imports this module at start-up.

1. The user's own ``sitecustomize`` (the next one on ``sys.path``: Debian's, a venv's, one on
   PYTHONPATH) is imported first, as Python would have, and becomes ``sys.modules
   ["sitecustomize"]``: this module never shadows it. Its errors reach ``site`` as before.
2. Then, only in the process leakgate's agent was loaded into (LEAKGATE_AGENT_PID: not in a
   child Python, which inherits PYTHONPATH) and unless LEAKGATE_PY is "0", what ``python -m
   leakgate PROG`` does before PROG's first line: the package this folder lies in is imported
   as ``leakgate`` and its session hook installed (``_attrib.ensure``). A program that imports
   leakgate, or runs as ``python -m leakgate``, gets that same module: nothing is installed
   twice. A failure here is one line on stderr, never the program's end.
3. Under ``leakgate exec --stacks`` (LEAKGATE_AGENT_CHILD_PROF), in every Python of CMD's tree:
   the children it forks, and the process itself when it is a child of CMD, trace their own
   allocations so that exec names a growing child by its Python line (``_child.py``).

Keep this file importable by any Python 3 (a child of another version reads it too).
"""
import os
import sys


def _chain():
    """Imports the next sitecustomize on sys.path, if there is one, in this module's place."""
    import importlib.machinery
    import importlib.util

    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    path = [p for p in sys.path if os.path.realpath(os.path.abspath(p or os.curdir)) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


def _wanted():
    return (os.environ.get("LEAKGATE_PY", "1") != "0" and bool(os.environ.get("LEAKGATE_AGENT_FD"))
            and os.environ.get("LEAKGATE_AGENT_PID") == str(os.getpid())
            and sys.implementation.name == "cpython")


def _load():
    """The package this folder lies in, as ``leakgate`` (unless one is imported already)."""
    if "leakgate" not in sys.modules:
        import importlib.util

        pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        spec = importlib.util.spec_from_file_location(
            "leakgate", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["leakgate"] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules["leakgate"]
            raise
    from leakgate import _attrib

    _attrib.ensure()  # as python -m leakgate: before the program's first line


def _children():
    """Under --stacks: each Python child of the tree traces itself (_child.py). Loaded from the
    package when CMD imported it, else alone: a child image does not load libleakgate."""
    if "leakgate" in sys.modules:
        from leakgate import _child
    else:
        import importlib.util

        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "_child.py")
        spec = importlib.util.spec_from_file_location("_leakgate_child", path)
        _child = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_child)
    _child.install()


try:
    _chain()
finally:
    if _wanted():
        try:
            _load()
        except Exception as e:  # the program runs anyway, without python: lines
            sys.stderr.write("leakgate: the Python binding was not set up in this program "
                             "(%s: %s); leakgate exec --no-python leaves it out\n"
                             % (type(e).__name__, e))
    if (os.environ.get("LEAKGATE_AGENT_CHILD_PROF") and os.environ.get("LEAKGATE_PY", "1") != "0"
            and os.environ.get("LEAKGATE_PY_CHILD", "1") != "0"
            and sys.implementation.name == "cpython"):
        try:
            _children()
        except Exception as e:  # the program runs anyway, its children without python: lines
            sys.stderr.write("leakgate: Python children will not name their lines (%s: %s)\n"
                             % (type(e).__name__, e))
