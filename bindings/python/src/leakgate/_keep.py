"""Who keeps it (issue 41): the retention path from what a leaking program kept to its root, by
the interpreter's own referrers. Run by the attribution (``_attrib.py``) in its forked copies, so
nothing here allocates in the measured process, once leakgate arms heap profiling (a channel is
proven to leak, or the census kept blocks), in four looks:

1. at the arming session's end (A), every object the garbage collector tracks (its id and a
   mark: its type, a container's length; ids are addresses, and a freed one is reused);
2. and 3. at the ends of A+1 and A+2, the objects new since: born in those two sessions;
4. at A+3's end, those still alive. The kept objects referred to by an older object are the
   entries; those one older object refers to are taken together (a registry's items), with
   what they reach through kept objects: their weight is their sizes, what they hold that the
   collector does not track, and their tensors' storages, each once; each group weighed by
   what no heavier one reached. A group kept in both sessions (a one-time cost, a lazy import,
   is kept in one) and at LEAKGATE_PY_KEEP_FLOOR bytes a session (8 KiB, exec's je_allocated
   budget) or more is walked up to a root, breadth-first through ``gc.get_referrers``: a
   module global, a class attribute, a live frame's local (in any thread: the others' frames
   are taken as the copy is forked), a Thread; or, when nothing the collector sees refers to
   the top objects and their reference counts say something does, a reference held from C
   (an extension's own); or, when nothing does, a garbage cycle not yet collected. The path is shown down to where the kept objects begin, then the largest PyTorch
   module (or a function's closure) that one holds:

    python: kept alive by: module __main__._TRIALS (list, tft_registry.py:35) -> [7] Trainer
    (lightning) and 1 more like it -> ._data_connector._datahook_selector.model
    (TemporalFusionTransformer, 4,095 parameters); born in sessions 6-7 and kept: 5,379
    objects, 440.1 KiB/session (tensors 46.1 KiB/session); _TRIALS is stored into at
    tft_registry.py:68 in <module>

(docs/realworld.md, finding 6). Each look runs in the attribution's forked copy after its
session was measured: its memory is never in what exec judges.

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


def born(folder, window):
    """Looks 2 and 3: the tracked objects not there at the looks before (a new id, or a new mark
    at an old one), to a file: those born in the session this look ends."""
    before = _load(os.path.join(folder, "keep.base"))
    if window == 2:
        before.update(_load(os.path.join(folder, "keep.born1")))
    new = [o for o in gc.get_objects()
           if before.get(id(o)) != _mark(o) & 0xFFFFFFFFFFFFFFFF]
    del before
    return _save(os.path.join(folder, "keep.born%d" % window), new)


def walk(attr, index):
    """Look 4: the lines naming who keeps what sessions index-2 and index-1 kept."""
    start = time.monotonic()
    deadline = start + max(1, _int_env("LEAKGATE_PY_KEEP_SECONDS", 30))
    objs = gc.get_objects()  # first: nothing this look makes afterwards is in it
    window = {}
    for w in (1, 2):
        marks = _load(os.path.join(attr.dir, "keep.born%d" % w))
        window.update((id(o), w) for o in objs
                      if marks.get(id(o)) == _mark(o) & 0xFFFFFFFFFFFFFFFF and not _own(o))
        del marks
    kept = [o for o in objs if id(o) in window]
    look = _Look(attr, objs, kept, deadline)
    look.window = window
    out = look.lines(index - 2)
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
        # what nothing refers to, a running function's local aside: held from C, or a cycle
        # not yet collected (Paths.up tells them apart by the reference counts)
        from . import _paths
        inside = set(found)
        for o in self.kept:
            inside.update(id(r) for r in gc.get_referents(o) if id(r) in ids)
        held = _paths.running_locals(self.attr.others)
        for o in self.kept:
            # the references to o here: self.objs, self.kept, this loop's o, getrefcount's
            # argument; any more are held where the collector cannot see
            if (id(o) not in inside and id(o) not in held and _builtin(o) == 0
                    and sys.getrefcount(o) > 4):
                found[id(o)] = [o, []]
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
            key = id(olds[0]) if olds else None  # the unreferenced: one group
            g = by_holder.get(key)
            if g is None:
                by_holder[key] = [k, r, olds, 1]
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

    def lines(self, first):
        out = []
        top = max(1, _int_env("LEAKGATE_PY_KEEP_TOP", 3))
        for size, tensors, k, r, olds, n, entries in self.groups():
            if size / 2 < self.floor or len(out) >= top:
                break
            if {self.window[i] for i in r} != {1, 2}:
                continue  # kept in one session only: a one-time cost (a lazy import), no leak
            if time.monotonic() > self.deadline:
                out.append("python: who keeps it: stopped at its time budget "
                           "(LEAKGATE_PY_KEEP_SECONDS) after %d objects" % self.visited)
                break
            line = self.line(first, size, tensors, k, olds, n)
            if line:
                out.append(line)
        return out

    def imported(self, root, chain):
        """Whether the path is an import's definitions: a module or class the sessions created
        (transformers imports its model modules lazily, one more as a later session asks), or a
        class, function or module that is itself a global or class attribute (its caches grow),
        or a module's own dunder (`__annotations__`, made on first access)."""
        owner = getattr(root, "owner", None)
        definition = isinstance(chain[0], (type, types.FunctionType, types.ModuleType))
        return (root.kind in ("module", "class") and id(owner) in self.ids
                or root.kind in ("module", "class") and len(chain) == 1
                and (definition or root.name.startswith("__")))

    def line(self, first, size, tensors, k, olds, n):
        from . import _paths
        if not olds:  # nothing the collector sees refers to it: see entries()
            Tensor = getattr(self.torch, "Tensor", None)
            torch_held = Tensor is not None and issubclass(type(k), Tensor)
            who = ("PyTorch's C++ side (an autograd graph's saved tensor, or state a C++ object "
                   "keeps: its Python object lives while C++ holds the tensor)"
                   if torch_held else "a C extension's own")
            return ("python: %s is held by a reference the garbage collector cannot see (%s: no "
                    "object refers to it, and its reference count says something does); born in "
                    "sessions %d-%d and kept: %s objects, %s/session"
                    % (_paths.words(k), who, first, first + 1, format(n, ","),
                       _attrib._fmt(size / 2)))
        paths = _paths.Paths(self.attr, self.limit, self.deadline)
        root, chain, why = paths.up(k, olds)
        self.visited += paths.visited
        what = "born in sessions %d-%d and kept: %s objects, %s/session" % (
            first, first + 1, format(n, ","), _attrib._fmt(size / 2))
        if tensors:
            what += " (tensors %s/session)" % _attrib._fmt(tensors / 2)
        if root is None:
            return "python: %s %s; %s" % (_paths.words(k), why, what)
        if self.imported(root, chain):
            return ""
        # the path down to where the kept objects begin, then what that one holds
        i = next((i for i, o in enumerate(chain) if id(o) in self.ids), len(chain) - 1)
        entry, chain = chain[i], chain[:i + 1]
        more = sum(1 for o in gc.get_referents(chain[i - 1]) if id(o) in self.ids) - 1 \
            if i > 0 else 0
        down = _paths.down(entry, self.reach(entry), self.torch)
        text = "python: kept alive by: %s%s%s%s; %s" % (
            root.words, _paths.join(chain), " and %d more like it" % more if more > 0 else "",
            down, what)
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
