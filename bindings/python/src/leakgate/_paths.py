"""The retention path's walk and words, for ``_keep.py``: breadth-first up the garbage
collector's referrers from a kept object to a root, and down from it to what it holds, each edge
named in the program's words (``[5]``, ``.strategy``, ``['run-3']``) and PyTorch's (a module's
child ``.0``, its ``._forward_hooks[7]``, a hook's closure `acts`, an optimizer's
``.state[Parameter float32 [64, 32]]``, a DataLoader iterator's prefetched batches and
workers). Only objects present when the look began are followed, so the look's own lists and
dicts are never taken for holders; the roots include other threads' locals, from their frames
as the walk's copy was forked."""

import ast
import gc
import sys
import threading
import time
import types

from . import _attrib

WIDTH = 512  # referrers kept at each depth
DEPTH = 24
_OWN_DIR = _attrib._OWN_DIR
_CONTAINERS = (dict, list, tuple, set, frozenset)


class Root:
    """Where a path starts: a module global, a class attribute, a frame's local (of the thread
    that ended the session, or another: `thread` is then its name), a thread."""

    def __init__(self, kind, owner, name, first, thread=None):
        self.kind, self.owner, self.name, self.first = kind, owner, name, first
        self.thread = thread
        self.words = self.describe()

    def describe(self):
        first = type(self.first).__name__
        if self.kind == "frame":
            f = self.owner
            return "local %s of %s (%s, %s:%d)%s" % (
                self.name, f.f_code.co_name, first, _attrib._short(f.f_code.co_filename),
                f.f_lineno, " in thread %r" % self.thread if self.thread is not None else "")
        if self.kind == "thread":
            return "thread %r (%s)" % (self.owner.name, type(self.owner).__name__)
        if self.kind == "class":
            c = self.owner
            return "class attribute %s.%s.%s (%s%s)" % (c.__module__, c.__qualname__, self.name,
                                                      first, _defined(sys.modules.get(
                                                          c.__module__), self.name, c.__name__))
        m = self.owner
        return "module %s.%s (%s%s)" % (m.__name__, self.name, first, _defined(m, self.name))

    def stores(self):
        """'g is stored into at file:line in f' for a module global."""
        if self.kind != "module":
            return ""
        lines = _attrib._store_lines(self.owner, self.name)
        return "%s is stored into at %s" % (self.name, ", ".join(lines)) if lines else ""


def _defined(module, name, cls=None):
    """', file:line' where module's source assigns name (at its top level, or in class cls)."""
    filename = getattr(module, "__file__", None)
    tree = _attrib._FunctionNames().tree(filename) if filename else None
    if tree is None:
        return ""
    body = tree.body
    if cls is not None:
        body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == cls), [])
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ", %s:%d" % (_attrib._short(filename), node.lineno)
    return ""


class Paths:
    def __init__(self, attr, limit, deadline):
        self.attr = attr
        self.limit = limit
        self.deadline = deadline
        self.visited = 0
        self.present = {id(o) for o in gc.get_objects()}
        self.modules = {id(m.__dict__): m for m in list(sys.modules.values())
                        if isinstance(m, types.ModuleType) and hasattr(m, "__dict__")}
        self.threads = {id(t): t for t in threading.enumerate()}
        self.locals = running_locals(attr.others)

    def up(self, k, olds):
        """(Root, [objects from root.first down to k], why) — Root None when none was found."""
        parent = {id(k): None}
        keep = {id(k): k}
        frontier = [k]
        for _ in range(DEPTH):
            nxt = []
            ids = {id(c): c for c in frontier}
            held = next((c for c in frontier if id(c) in self.locals), None)
            if held is not None:  # a running function's local (3.11+: the collector's
                f, name, thread = self.locals[id(held)]  # referrers never show those)
                return Root("frame", f, name, held, thread), _chain(held, parent, keep), ""
            for r in gc.get_referrers(*frontier):
                if id(r) not in self.present or id(r) in parent or _own_frame(r):
                    continue
                c = next((x for x in gc.get_referents(r) if id(x) in ids), None)
                if c is None:
                    continue
                self.visited += 1
                root = self.root(r, c, parent, keep)
                if root is not None:
                    return root, _chain(root.first, parent, keep), ""
                parent[id(r)] = c
                keep[id(r)] = r
                if not isinstance(r, types.ModuleType) and len(nxt) < WIDTH:
                    nxt.append(r)
            if not nxt:
                return None, [], self.unseen(keep)
            if self.visited > self.limit or time.monotonic() > self.deadline:
                break
            frontier = nxt
        return None, [], "path not found within %d objects (LEAKGATE_PY_KEEP_OBJECTS, " \
                         "LEAKGATE_PY_KEEP_SECONDS)" % self.visited

    def root(self, r, c, parent, keep):
        if id(r) in self.modules:
            m = self.modules[id(r)]
            name = next((n for n, v in r.items() if v is c), None)
            return Root("module", m, name, c) if name is not None else None
        if isinstance(r, types.FrameType):
            name = next((n for n, v in r.f_locals.items() if v is c), "?")
            return Root("frame", r, name, c)
        if isinstance(r, type) and isinstance(c, dict) and parent.get(id(c)) is not None:
            below = parent[id(c)]
            name = next((n for n, v in c.items() if v is below), None)
            if name is not None and r.__dict__.get(name) is below:
                return Root("class", r, name, below)
        if id(r) in self.threads:
            keep[id(r)] = r
            parent[id(r)] = c
            return Root("thread", r, r.name, r)
        return None

    def unseen(self, keep):
        """Why no root: something the collector cannot see holds the top objects (their
        reference counts are higher than the references it reports), or nothing does."""
        held = []
        for o in list(keep.values()):
            if _hidden_refs(o) > 0:
                held.append(o)
        if held:
            return ("is held by an object the garbage collector cannot see (a C extension's "
                    "reference to %s)" % ", ".join(sorted({words(o) for o in held})[:3]))
        return "has no referrer that is alive: a garbage cycle not yet collected"


def running_locals(others=None):
    """{id(object): (frame, name, thread name)} of the locals of the functions running in this
    thread (thread name None), then in the `others` (_attrib._other_threads(), read before the
    fork), less the attribution's own frames and module-level code's (its locals are its
    module's globals)."""
    out = {}
    stacks = [(None, sys._getframe())] + list((others or {}).values())
    for thread, f in stacks:
        while f is not None:
            if not f.f_code.co_filename.startswith(_OWN_DIR) and f.f_locals is not f.f_globals:
                for name, v in f.f_locals.items():
                    out.setdefault(id(v), (f, name, thread))
            f = f.f_back
    return out


def _own_frame(r):
    return isinstance(r, types.FrameType) and r.f_code.co_filename.startswith(_OWN_DIR)


def _hidden_refs(o):
    """References to o that no object the collector tracks reports (a C extension's own)."""
    seen = 0
    for r in gc.get_referrers(o):
        seen += sum(1 for x in gc.get_referents(r) if x is o)
    # getrefcount's argument and this frame's `o` (a local the collector does not see in 3.11+;
    # before 3.11 the frame is a referrer and its count is in `seen`)
    return sys.getrefcount(o) - seen - (2 if sys.version_info >= (3, 11) else 1)


def _chain(first, parent, keep):
    out, node = [first], first
    while parent.get(id(node)) is not None:
        node = parent[id(node)]
        out.append(node)
    return out


# ---- the words of a path ---------------------------------------------------------------------

def words(o):
    """A kept object as the program knows it: 'Trainer (lightning)', 'list', 'Linear',
    'DataLoader iterator (torch, 2 workers, prefetch_factor 2)'."""
    t = type(o)
    code = getattr(o, "__code__", None) if isinstance(o, types.FunctionType) else None
    if code is not None:
        return "function %s (%s:%d)" % (o.__qualname__, _attrib._short(code.co_filename),
                                         code.co_firstlineno)
    if _is_loader_iter(o):
        workers = getattr(o, "_num_workers", 0)
        return "DataLoader iterator (torch, %s)" % (
            "%d workers, prefetch_factor %d" % (workers, o._prefetch_factor) if workers
            else "no workers")
    top = t.__module__.split(".")[0]
    if top in ("builtins", "__main__"):
        return t.__qualname__
    return "%s (%s)" % (t.__qualname__, top)


def _key(k):
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(type(k), torch.Tensor):
        return "%s %s [%s]" % (type(k).__name__, str(k.dtype).replace("torch.", ""),
                               ", ".join(str(d) for d in k.shape))
    text = repr(k)
    return text if len(text) <= 40 else text[:37] + "..."


MODULE_DICTS = ("_modules", "_parameters", "_buffers")


def _is_module(o):
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(type(o), torch.nn.Module)


def _is_loader_iter(o):
    """Whether o is what iter(DataLoader) returns (1.x and 2.x: a _BaseDataLoaderIter)."""
    loader = sys.modules.get("torch.utils.data.dataloader")
    base = getattr(loader, "_BaseDataLoaderIter", None)
    return base is not None and isinstance(o, base)


def _key_of(d, child):
    return next((k for k, v in d.items() if v is child), None)


def edge(parent, child):
    """How parent refers to child: '[3]', "['k']", '.attr', ' f closure `acts`'; '' for a cell
    (named by the function above it)."""
    if isinstance(parent, dict):
        key = _key_of(parent, child)
        if key is None and any(k is child for k in parent):
            return " key %s" % _key(child)  # optimizer.state's parameters
        return "[?]" if key is None else "[%s]" % _key(key)
    if isinstance(parent, (list, tuple)):
        i = next((i for i, v in enumerate(parent) if v is child), None)
        return "[%d]" % i if i is not None else "[?]"
    if isinstance(parent, (set, frozenset)):
        return "{%s}" % words(child)
    if isinstance(parent, types.CellType):
        return ""
    if isinstance(parent, types.FunctionType):
        cells = parent.__closure__ or ()
        name = next((n for n, c in zip(parent.__code__.co_freevars, cells) if c is child), None)
        if name is not None:
            return " %s closure `%s`" % (parent.__qualname__, name)
        return " %s" % parent.__qualname__
    if isinstance(parent, types.MethodType):
        return ".__self__" if parent.__self__ is child else ".__func__"
    d = getattr(parent, "__dict__", None)
    if isinstance(d, dict):
        name = _key_of(d, child)
        if name is not None:
            return ".%s" % name
    for name in getattr(type(parent), "__slots__", ()):
        if getattr(parent, name, None) is child:
            return ".%s" % name
    return " (%s)" % type(parent).__name__


def render(chain):
    """The edges of chain (objects, each referring to the next) as text: an instance's __dict__
    named by the attribute, an nn.Module's children, parameters and buffers as `.name`."""
    out, via, fn = [], None, None
    for parent, child in zip(chain, chain[1:]):
        if isinstance(parent, types.FunctionType) and child is parent.__closure__:
            fn = parent  # named with the cell below: its closure's variable
            continue
        if fn is not None:
            name = next((n for n, c in zip(fn.__code__.co_freevars, parent) if c is child), "?")
            out.append(" %s closure `%s`" % (words(fn), name))
            fn = None
            continue
        if isinstance(child, dict) and getattr(parent, "__dict__", None) is child:
            via = "module" if _is_module(parent) else "__dict__"
            continue
        if isinstance(parent, dict) and via is not None:
            name = _key_of(parent, child)
            if via == "module" and name in MODULE_DICTS:
                via = "child"
                continue
            out.append(".%s" % (name,) if isinstance(name, str) else edge(parent, child))
            via = None
            continue
        if _is_module(parent) and isinstance(child, dict) and _key_of(
                getattr(parent, "__dict__", {}), child) in MODULE_DICTS:
            via = "child"
            continue
        out.append(edge(parent, child))
        via = None
    return "".join(out)


def join(chain):
    """root.first -> ... -> k, with k's type."""
    if len(chain) == 1:
        return ""
    text = render(chain).strip()
    last = chain[-1]
    if text.endswith(" key " + _key(last)) or isinstance(chain[-2], types.CellType):
        return " -> %s" % text  # the key, or the closure's variable, says what it is
    return " -> %s %s" % (text, words(last)) if text else " -> %s" % words(last)


def down(k, reach, torch):
    """' -> .strategy._lightning_module (TemporalFusionTransformer, 2.45 M parameters)': the
    largest PyTorch module k keeps, by its path from k; '' without one."""
    if isinstance(k, types.FunctionType):
        cells = zip(k.__code__.co_freevars, k.__closure__ or ())
        names = ["`%s`" % n for n, c in cells if _contents(c) is not None
                 and id(_contents(c)) in reach]
        return " (its closure keeps %s)" % ", ".join(names) if names else ""
    if torch is None:
        return ""
    if _is_loader_iter(k):
        return prefetched(k)
    Module = torch.nn.Module
    best, best_n = None, 0
    for o, _ in reach.values():
        if issubclass(type(o), Module):
            try:
                n = sum(p.numel() for p in o.parameters())
            except Exception:
                continue
            if n > best_n or best is None:
                best, best_n = o, n
    if best is None or best is k:
        return ", %s parameters" % _count(best_n) if best is k else ""
    chain, node = [], best
    while node is not None:
        chain.append(node)
        up = reach[id(node)][1]
        node = reach[up][0] if up is not None else None
    chain.reverse()
    return " -> %s (%s, %s parameters)" % (render(chain).strip() or "?", type(best).__name__,
                                           _count(best_n))


def prefetched(it):
    """' -> its prefetched batches 1 and 3 of 16, received from its workers and never taken
    (Tensor float32 [64, 128]); its 2 worker processes (pids 812, 813) live on with it': what a
    DataLoader iterator with workers keeps. Its `_task_info` maps each batch it asked a worker
    for (prefetch_factor x num_workers ahead) to (worker,), and to (worker, batch) once the
    batch came back before the one the loop waits for: those are in this process, the rest
    are still in the workers (their memory, and shared memory), which exit only when the
    iterator is deleted, or exhausted without persistent_workers."""
    info = getattr(it, "_task_info", None)
    if info is None:
        return ""  # no workers: nothing is fetched ahead
    got = sorted((i, v[1]) for i, v in info.items() if len(v) == 2)
    try:
        total = " of %d" % len(it)
    except TypeError:  # an IterableDataset's has no length
        total = ""
    said = []
    if got:
        said.append("its prefetched batch%s %s%s, received from its workers and never taken "
                    "(%s)" % ("es" if len(got) > 1 else "", _and([str(i) for i, _ in got]),
                              total, _batch(got[0][1])))
    elif info:
        said.append("no prefetched batch received: the %d it asked for are in its workers"
                    % len(info))
    alive = [w.pid for w, up in zip(it._workers, it._workers_status) if up]
    if alive:
        said.append("its %d worker process%s (pid%s %s) live on with it" % (
            len(alive), "es" if len(alive) > 1 else "", "s" if len(alive) > 1 else "",
            ", ".join(str(p) for p in alive)))
    return " -> %s" % "; ".join(said) if said else ""


def _batch(data):
    """A batch as collated: 'Tensor float32 [64, 128]', '[Tensor ..., Tensor int64 [64]]'."""
    if isinstance(data, (list, tuple)):
        return "[%s%s]" % (", ".join(_batch(d) for d in data[:4]), ", ..." * (len(data) > 4))
    if isinstance(data, dict):
        return "{%s%s}" % (", ".join("%s: %s" % (_key(k), _batch(v))
                                     for k, v in list(data.items())[:4]),
                           ", ..." * (len(data) > 4))
    torch = sys.modules.get("torch")
    return _key(data) if torch is not None and isinstance(data, torch.Tensor) else words(data)


def _and(items):
    return items[0] if len(items) == 1 else "%s and %s" % (", ".join(items[:-1]), items[-1])


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _count(n):
    return "%.2f M" % (n / 1e6) if n >= 1e5 else format(n, ",")
