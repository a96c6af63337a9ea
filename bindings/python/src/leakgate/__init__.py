"""leakgate for Python: sessions, tag scopes and owners over libleakgate (include/leakgate.h).

    import leakgate

    for epoch in range(20):
        with leakgate.session():                 # measured and judged by `leakgate exec`
            with leakgate.tag("model"):          # this thread's allocations are tagged "model"
                model = build_model()
            leakgate.track(model, "model", "tft")  # alive at the session's end: a leak, by name
            train(model)

Run it as ``leakgate exec -- python train.py``. Outside exec every call is a cheap no-op and
the program runs unchanged. Under exec, once leakgate arms heap profiling (a channel leaks), the
session ends name the lines of the program where Python's heap grew (tracemalloc, its own memory
taken out of what is judged), PyTorch's shapes of leak in its terms, and who holds a tracked
object that outlived its session, in the session's results (``_attrib.py``; off with
LEAKGATE_PY_ATTRIBUTION=0).

Which libleakgate.so is used, and how it is found: ``leakgate._lib`` (``library_path``).
"""

import contextlib
import gc
import os
import sys
import threading
import weakref

from . import _lib

__all__ = [
    "LeakgateError", "active", "session", "tag", "track", "retain", "release", "untrack",
    "note", "library_path", "API_VERSION",
]

API_VERSION = 1
OK, ESESSION, ELOST, EINVAL = 0, 1, 2, 3

_c, library_path, library_how = _lib.load()
under_exec = bool(os.environ.get("LEAKGATE_AGENT_FD")) and os.environ.get(
    "LEAKGATE_AGENT_PID") == str(os.getpid())
if library_path is None and under_exec:
    sys.stderr.write("leakgate: under leakgate exec but libleakgate.so was not found (%s): "
                     "the sessions are not measured; set LEAKGATE_LIB\n" % library_how)


def _words(code):
    """The library's words for a status (leakgate_strerror: the header's LEAKGATE_STATUS_MAP)."""
    f = getattr(_c, "leakgate_strerror", None)
    words = f(code) if f is not None else None
    return words.decode("utf-8", "replace") if isinstance(words, bytes) else "error"


class LeakgateError(RuntimeError):
    """A leakgate call failed; ``code`` is the LEAKGATE_E* value."""

    def __init__(self, call, code):
        super().__init__("%s: %s (%d)" % (call, _words(code), code))
        self.code = code


def _check(call, rc):
    if rc != OK:
        raise LeakgateError(call, rc)
    return rc


def active():
    """True when this process runs under ``leakgate exec`` with the agent connected."""
    return bool(_c.leakgate_active())


if _c.leakgate_api_version() != API_VERSION:
    raise ImportError("libleakgate %s speaks API version %d, this binding %d"
                      % (library_path, _c.leakgate_api_version(), API_VERSION))

# The agent keeps the site strings it is given (it does not copy them): keep one bytes object
# per distinct site alive for the process's life.
_sites = {}
_sites_lock = threading.Lock()


def _b(s):
    with _sites_lock:
        v = _sites.get(s)
        if v is None:
            v = _sites[s] = s.encode("utf-8", "replace")
        return v


def _site(depth):
    f = sys._getframe(depth + 1)
    code = f.f_code
    return _b(code.co_filename), f.f_lineno, _b(getattr(code, "co_qualname", code.co_name))


def _ptr(obj):
    return None if obj is None else id(obj)


@contextlib.contextmanager
def session():
    """One session: begun on entry, ended (measured, reported, judged) on exit. Under exec,
    Python's cyclic garbage is collected before the end is measured (``_attrib._settle``, which
    marker mode gets too): unreachable cycles (a Lightning Trainer and its module point at each
    other) wait for a generation-2 collection that a process with torch loaded may not run for
    dozens of sessions, and are not a leak."""
    from . import _attrib  # noqa: F401  (installs the attribution hook on first use)

    hooked = _attrib.ensure()
    _check("leakgate_session_begin", _c.leakgate_session_begin())
    try:
        yield
    finally:
        if _c.leakgate_active() and not _attrib.settles():  # an agent without the settle hook
            gc.collect()
        rc = _c.leakgate_session_end()
        if not hooked:
            _ended[0] += 1
        _check("leakgate_session_end", rc)


@contextlib.contextmanager
def tag(name):
    """Tags this thread's native allocations (malloc, C++ new, PyTorch's CPU tensors) with
    ``name`` until the block ends; a tagged allocation born in a session and alive at its end is
    an exact leak, reported by tag."""
    _tagged[0] = True  # the attribution then starts no tracemalloc of its own: see _attrib.py
    _check("leakgate_tag_push", _c.leakgate_tag_push(name.encode()))
    try:
        yield
    finally:
        _check("leakgate_tag_pop", _c.leakgate_tag_pop())


_tagged = [False]  # a tag scope was opened
_tracked = {}  # id -> (weakref.finalize, kind, name, session born) of tracked objects
_ended = [0]  # sessions ended so far: the index of the open one (the hook counts them)


def track(obj, kind, name, holder=None):
    """Enters ``obj`` in leakgate's ledger of shared objects, born holding ``holder``'s reference
    (default: the caller's frame's ``self``, else the object itself). When Python destroys the
    object the ledger forgets it; alive at its session's end, it is a leak (channel ``refs``),
    reported with the retains nobody released, where they were taken, and (under exec) the chain
    of Python objects that still holds it. Returns ``obj``."""
    if holder is None:
        holder = sys._getframe(1).f_locals.get("self", obj)
    f, line, fn = _site(1)
    # kind and name are copied by the ledger; the site strings are kept (see _b)
    _check("leakgate_track", _c.leakgate_track(_ptr(obj), str(kind).encode(), str(name).encode(),
                                                _ptr(holder), f, line, fn))
    try:
        fin = weakref.finalize(obj, _forget, id(obj))
        fin.atexit = False
    except TypeError:  # not weak-referenceable: untrack() it yourself
        fin = None
    _tracked[id(obj)] = (fin, kind, name, _ended[0])
    return obj


def _forget(oid):
    _tracked.pop(oid, None)
    _c.leakgate_untrack(oid, b"<collected>", 0, b"<gc>")


def retain(obj, holder):
    """``holder`` takes a reference to the tracked ``obj`` (the site is the caller's line)."""
    f, line, fn = _site(1)
    _check("leakgate_retain", _c.leakgate_retain(_ptr(obj), _ptr(holder), f, line, fn))


def release(obj, holder):
    """``holder`` drops the reference it took with ``retain`` (or was born with)."""
    f, line, fn = _site(1)
    _check("leakgate_release", _c.leakgate_release(_ptr(obj), _ptr(holder), f, line, fn))


def untrack(obj):
    """``obj`` was destroyed (automatic for weak-referenceable objects)."""
    entry = _tracked.pop(id(obj), None)
    if entry and entry[0]:
        entry[0].detach()
    f, line, fn = _site(1)
    _check("leakgate_untrack", _c.leakgate_untrack(_ptr(obj), f, line, fn))


def note(text):
    """Attaches a line of text to the session the next session end reports (its results line
    and the verdict's print). Needs a libleakgate with leakgate_session_note."""
    fn = getattr(_c, "leakgate_session_note", None)
    if fn is not None:
        _check("leakgate_session_note", fn(str(text).encode("utf-8", "replace")))
