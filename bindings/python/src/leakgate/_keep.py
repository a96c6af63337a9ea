"""Who keeps it (issue 41): the retention path from what a leaking program kept to its root, by
the interpreter's own referrers. Run by the attribution (``_attrib.py``) in its forked copies, so
nothing here allocates in the measured process, once leakgate arms heap profiling (a channel is
proven to leak, or the census kept blocks):

1. at the arming session's end (A), the ids of every object the garbage collector tracks;
2. at A+1's end, the objects that were not there at A: born in session A+1 (id and type);
3. at A+2's end, those still alive: born in A+1 and kept a whole session after it, so the
   current iteration's objects (a loop variable's trainer) are not taken for a leak. The kept
   objects referred to by an older object are the entries; from each, the kept objects it
   reaches are its weight (their sizes, what they hold that the collector does not track, and
   the bytes of their tensors' storages, each storage once). Entries are taken largest first,
   each weighed by what no heavier entry reached; those at LEAKGATE_PY_KEEP_FLOOR bytes
   (8 KiB, exec's je_allocated budget a session) or more are walked up to a root,
   breadth-first through ``gc.get_referrers``: a module global, a class attribute, a live
   frame's local (of a thread when not the main one), a Thread; or, when nothing the collector
   sees refers to the top object and its reference count says something does, a reference held
   from C (an extension's own); or, when nothing does, a garbage cycle not yet collected (not a
   leak: never printed as one).

    python: kept alive by: module __main__._TRIALS (list, tft_registry.py:36) -> [5] Trainer
    (lightning) -> .strategy -> ._lightning_module (TemporalFusionTransformer, 2.45 M
    parameters); born in session 5 and kept: 31,022 objects, 1.04 MiB (tensors 0.93 MiB);
    _TRIALS is stored into at tft_registry.py:71 in <module>

Bounded: LEAKGATE_PY_KEEP_SECONDS (30) for the whole look, LEAKGATE_PY_KEEP_OBJECTS (200,000)
referrers visited for one path; past either the line says "path not found within N objects".
The paths are exact: every edge is a reference the interpreter reports, unlike the native scan's
(docs/exec.md, "Who keeps it"). LEAKGATE_PY_KEEP=0 turns this off.
"""

import array
import collections
import gc
import os
import sys
import time
import types

from . import _attrib

FLOOR = 8192
_OWN_DIR = _attrib._OWN_DIR


def _int_env(name, default):
    return _attrib._int_env(name, default)


# ---- the three looks ------------------------------------------------------------------------

_SIZED = (list, dict, tuple, set, frozenset, collections.deque)


def _mark(o):
    """An object's type and, for a container, its length: a new object at a freed one's address
    (ids are addresses) differs from it in one or the other far more often than by id alone."""
    t = type(o)
    return id(t) ^ (len(o) << 48 if issubclass(t, _SIZED) else 0)


def _save(path, objects):
    pairs = array.array("Q")
    for o in objects:
        pairs.append(id(o))
        pairs.append(_mark(o) & 0xFFFFFFFFFFFFFFFF)
    with open(path, "wb") as f:
        pairs.tofile(f)
    return len(pairs) // 2


def _load(path):
    """{id: mark} from _save's file."""
    pairs = array.array("Q")
    with open(path, "rb") as f:
        pairs.frombytes(f.read())
    return dict(zip(pairs[0::2], pairs[1::2]))


def base(folder):
    """Look 1: every tracked object (id, mark), to a file."""
    return _save(os.path.join(folder, "keep.base"), gc.get_objects())


def born(folder):
    """Look 2: the tracked objects not there at look 1 (a new id, or a new mark at an old one),
    to a file."""
    before = _load(os.path.join(folder, "keep.base"))
    new = [o for o in gc.get_objects()
           if before.get(id(o)) != _mark(o) & 0xFFFFFFFFFFFFFFFF]
    del before
    return _save(os.path.join(folder, "keep.born"), new)


def walk(attr, index):
    """Look 3: the lines naming who keeps what session index-1 kept."""
    start = time.monotonic()
    deadline = start + max(1, _int_env("LEAKGATE_PY_KEEP_SECONDS", 30))
    objs = gc.get_objects()  # first: nothing this look makes afterwards is in it
    marks = _load(os.path.join(attr.dir, "keep.born"))
    kept = [o for o in objs if marks.get(id(o)) == _mark(o) & 0xFFFFFFFFFFFFFFFF
            and not _own(o)]
    del marks
    look = _Look(attr, objs, kept, deadline)
    out = look.lines(index - 1)
    visited = look.visited
    del look, kept, objs
    out.append("python: who keeps it: %d objects visited in %.2f s (the garbage collector's "
               "referrers, exact)" % (visited, time.monotonic() - start))
    return out


def _own(o):
    """The attribution's own frames and functions (the hook's, and this copy's)."""
    code = getattr(o, "f_code", None) if isinstance(o, types.FrameType) else getattr(
        o, "__code__", None) if isinstance(o, types.FunctionType) else None
    return code is not None and code.co_filename.startswith(_OWN_DIR)


# ---- weighing what was kept -----------------------------------------------------------------

class _Look:
    def __init__(self, attr, objs, kept, deadline):
        self.attr = attr
        self.objs = objs
        self.kept = kept
        self.ids = {id(o) for o in kept}
        self.deadline = deadline
        self.visited = 0
        self.torch = sys.modules.get("torch")
        self.floor = max(0, _int_env("LEAKGATE_PY_KEEP_FLOOR", FLOOR))
        self.limit = max(1000, _int_env("LEAKGATE_PY_KEEP_OBJECTS", 200000))

    def entries(self):
        """{id(kept object): [it, [older objects referring to it]]}: where the kept begin."""
        ids, found = self.ids, {}
        for n, o in enumerate(self.objs):
            if id(o) in ids or _own(o):
                continue
            if n % 8192 == 0 and time.monotonic() > self.deadline:
                break
            for r in gc.get_referents(o):
                if id(r) in ids:
                    e = found.get(id(r))
                    if e is None:
                        found[id(r)] = [r, [o]]
                    elif len(e[1]) < 4:
                        e[1].append(o)
        self.visited += len(self.objs)
        return found

    def reach(self, k):
        """The kept objects k reaches through kept objects: {id: (object, parent id)}."""
        ids, seen = self.ids, {id(k): (k, None)}
        queue = collections.deque([k])
        while queue:
            o = queue.popleft()
            for r in gc.get_referents(o):
                if id(r) in ids and id(r) not in seen:
                    seen[id(r)] = (r, id(o))
                    queue.append(r)
        self.visited += len(seen)
        return seen

    def weigh(self, objects, storages):
        """(bytes, tensor bytes) of objects: their sizes, the untracked objects they hold, and
        their tensors' storages not already in `storages`."""
        size = tensors = 0
        untracked = set()
        Tensor = getattr(self.torch, "Tensor", None)
        for o in objects:
            size += _sizeof(o)
            for r in gc.get_referents(o):
                if not gc.is_tracked(r) and id(r) not in untracked and not isinstance(r, type):
                    untracked.add(id(r))
                    size += _sizeof(r)
            if Tensor is not None and issubclass(type(o), Tensor):
                key, n = _storage(o)
                if key and key not in storages:
                    storages.add(key)
                    tensors += n
        return size + tensors, tensors

    def groups(self):
        """[(bytes, tensor bytes, entry, its reach, older referrers, objects, entries)], the
        heaviest first: the entries an older object refers to (a list's items) taken together,
        each group weighed by what no heavier one reached."""
        found = self.entries()
        order = sorted(found.values(), key=lambda e: _builtin(e[0]))
        covered, by_holder = set(), {}
        for k, olds in order:
            if id(k) in covered:
                continue  # reached from an entry already taken: adds nothing of its own
            if time.monotonic() > self.deadline:
                break
            r = self.reach(k)
            covered.update(r)
            g = by_holder.get(id(olds[0]))
            if g is None:
                by_holder[id(olds[0])] = [k, r, olds, 1]
            else:
                g[1].update(r)
                g[3] += 1
                if _builtin(k) < _builtin(g[0]):
                    g[0] = k
        reaches = sorted(by_holder.values(), key=lambda g: -len(g[1]))
        taken, storages, out = set(), set(), []
        for k, r, olds, entries in reaches:
            mine = [o for i, (o, _) in r.items() if i not in taken]
            taken.update(r)
            size, tensors = self.weigh(mine, storages)
            out.append((size, tensors, k, r, olds, len(mine), entries))
        out.sort(key=lambda e: -e[0])
        return out

    def lines(self, session):
        out = []
        top = max(1, _int_env("LEAKGATE_PY_KEEP_TOP", 3))
        for size, tensors, k, r, olds, n, entries in self.groups():
            if size < self.floor or len(out) >= top:
                break
            if time.monotonic() > self.deadline:
                out.append("python: who keeps it: stopped at its time budget "
                           "(LEAKGATE_PY_KEEP_SECONDS) after %d objects" % self.visited)
                break
            out.append(self.line(session, size, tensors, k, r, olds, n, entries))
        return out

    def line(self, session, size, tensors, k, r, olds, n, entries):
        from . import _paths
        paths = _paths.Paths(self.attr, self.limit, self.deadline)
        root, edges, why = paths.up(k, olds)
        self.visited += paths.visited
        down = _paths.down(k, r, self.torch)
        what = "born in session %d and kept: %s objects, %s" % (
            session, format(n, ","), _attrib._fmt(size))
        if entries > 1:
            down += " and %d more like it" % (entries - 1)
        if tensors:
            what += " (tensors %s)" % _attrib._fmt(tensors)
        if root is None:
            return "python: %s %s; %s" % (_paths.words(k), why, what)
        text = "python: kept alive by: %s%s%s; %s" % (root.words, _paths.join(edges), down,
                                                     what)
        stores = root.stores()
        return text + ("; %s" % stores if stores else "")


def _builtin(o):
    """0 for an instance of a class a program or library defined, 1 for the interpreter's."""
    return 1 if type(o).__module__ == "builtins" else 0


def _sizeof(o):
    try:
        return sys.getsizeof(o)
    except Exception:
        return 0


def _storage(t):
    """(a key of t's storage, its bytes), or (None, 0)."""
    try:
        s = t.untyped_storage()
        return (s.data_ptr(), s.device.type), s.nbytes()
    except Exception:
        try:
            return (t.data_ptr(), "?"), t.element_size() * t.nelement()
        except Exception:
            return None, 0
