"""Finding and loading libleakgate.so (the C API of include/leakgate.h) with ctypes.

The rule, first match wins:

1. ``LEAKGATE_LIB``: the library's path, or a directory holding ``libleakgate.so``.
2. Under ``leakgate exec``: beside the preloaded agent (``LD_PRELOAD`` names
   ``libleakgate-agent.so``): the same directory (a build tree, ``build/agent/``) or its parent
   (an install, ``PREFIX/lib/leakgate/`` -> ``PREFIX/lib/``).
3. The one this package carries (``leakgate/_native/lib/``, built by ``pip install``).
4. Beside a ``leakgate`` on ``PATH``: ``PREFIX/bin/leakgate`` -> ``PREFIX/lib``, or a build
   tree's ``build/harness/leakgate`` -> ``build/agent``.
5. The dynamic linker's own search (``libleakgate.so.1``, ``ldconfig``'s cache).

When none is found the binding runs on a stand-in whose every call returns 0, which is what
libleakgate itself does outside exec; under exec that is an error (the sessions would be lost),
reported when the binding is imported.
"""

import ctypes
import ctypes.util
import os
import shutil

from . import _bundle

LIB_NAMES = ("libleakgate.so", "libleakgate.so.1")
AGENT_NAME = "libleakgate-agent.so"

HOOK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int)


def _in_dir(d):
    for n in LIB_NAMES:
        p = os.path.join(d, n)
        if os.path.isfile(p):
            return p
    return None


def _candidates():
    env = os.environ.get("LEAKGATE_LIB")
    if env:
        yield "LEAKGATE_LIB", (_in_dir(env) if os.path.isdir(env) else env)
        return
    for entry in os.environ.get("LD_PRELOAD", "").replace(" ", ":").split(":"):
        if os.path.basename(entry) == AGENT_NAME:
            d = os.path.dirname(os.path.abspath(entry))
            yield "beside the preloaded agent", _in_dir(d) or _in_dir(os.path.dirname(d))
    yield "carried by the package", _bundle.library()
    exe = shutil.which("leakgate")
    if exe:
        b = os.path.dirname(os.path.realpath(exe))
        prefix = os.path.dirname(b)
        yield "beside leakgate on PATH", (
            _in_dir(os.path.join(prefix, "lib"))
            or _in_dir(os.path.join(prefix, "agent"))
            or _in_dir(os.path.join(prefix, "lib64"))
        )
    found = ctypes.util.find_library("leakgate")
    yield "the dynamic linker's search", found or "libleakgate.so.1"


def _declare(lib):
    c_int, c_char_p, c_void_p = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
    sig = {
        "leakgate_api_version": [],
        "leakgate_active": [],
        "leakgate_session_begin": [],
        "leakgate_session_end": [],
        "leakgate_tag_push": [c_char_p],
        "leakgate_tag_pop": [],
        "leakgate_track": [c_void_p, c_char_p, c_char_p, c_void_p, c_char_p, c_int, c_char_p],
        "leakgate_retain": [c_void_p, c_void_p, c_char_p, c_int, c_char_p],
        "leakgate_release": [c_void_p, c_void_p, c_char_p, c_int, c_char_p],
        "leakgate_untrack": [c_void_p, c_char_p, c_int, c_char_p],
    }
    for name, args in sig.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, c_int
    # added to the API later: an older library may lack them
    for name, args in (("leakgate_session_note", [c_char_p]),
                       ("leakgate_set_session_hook", [HOOK, c_void_p]),
                       ("leakgate_set_settle_hook", [HOOK, c_void_p]),
                       ("leakgate_profiling_armed", []),
                       ("leakgate_session_overhead", [ctypes.c_longlong])):
        f = getattr(lib, name, None)
        if f is not None:
            f.argtypes, f.restype = args, c_int
    f = getattr(lib, "leakgate_strerror", None)  # the words of a status (LEAKGATE_STATUS_MAP)
    if f is not None:
        f.argtypes, f.restype = [c_int], c_char_p
    return lib


class _Stand:
    """libleakgate's behaviour outside exec, without the library: every call returns 0."""

    def __getattr__(self, name):
        if name.startswith("leakgate_"):
            return lambda *a: 1 if name == "leakgate_api_version" else 0
        raise AttributeError(name)


def load():
    """(library or stand-in, path or None, how it was found or why not)."""
    tried = []
    for how, path in _candidates():
        if not path:
            continue
        try:
            return _declare(ctypes.CDLL(path)), path, how
        except (OSError, AttributeError) as e:
            tried.append("%s (%s): %s" % (path, how, e))
    return _Stand(), None, "; ".join(tried) or "not found (set LEAKGATE_LIB)"
