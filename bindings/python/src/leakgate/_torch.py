"""PyTorch's shapes of leak, named in PyTorch's terms (the Python attribution's, ``_attrib.py``).

Imported only in the attribution's forked copy, and only when the program has imported torch
already; it reads the heap through the garbage collector and never changes it. At the session
ends that leakgate's arming opens (the sessions tracemalloc traces), it looks for:

- **tensors kept with their autograd graphs**: a list, dict, deque or set holding two or more
  tensors that have a ``grad_fn`` (``history.append(loss)`` where ``loss.item()`` was meant), or
  one tensor whose graph has grown past 500 nodes (``total = total + loss``). Named by the tensor
  (the expression the program stores, ``loss``), its dtype and shape, its ``grad_fn``, the size of
  its graph (the nodes reachable through ``next_functions``) and what the graph's saved tensors
  hold, by the container's holder (``__main__.history``) and the line that stores into it:
  ``python: torch: 40 tensors kept with their autograd graphs in __main__.history (+20/session):
  `loss`, float32 [], grad_fn MseLossBackward0, 6 nodes through next_functions (its saved
  tensors freed by backward); history is stored into at prog.py:31 in train_session
  (history.append(loss))``;
- **a hook registered again and again**: a module with two or more forward (pre-)hooks or
  backward hooks of the same function, never removed. Named by the module (its path from the
  model's global, ``model.0``, and its type), the hook (qualified name and line), what the hooks'
  closures (and default arguments) keep, and the line that registers it.

A count per session comes from the previous look of the same run (a file in the attribution's
folder: the measured process keeps nothing); at the first, from the sessions so far.
"""

import ast
import collections
import gc
import os
import pickle
import sys
import types

from . import _attrib

GRAPH_MIN = 500  # nodes: a lone tensor's graph this large has been accumulating
HOOK_KINDS = (("_forward_hooks", "forward hook", "register_forward_hook"),
              ("_forward_pre_hooks", "forward pre-hook", "register_forward_pre_hook"),
              ("_backward_hooks", "backward hook", ("register_full_backward_hook",
                                                   "register_backward_hook")))


def describe(attr, index):
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "Tensor"):
        return []
    state_path = os.path.join(attr.dir, "torch.pickle")
    try:
        with open(state_path, "rb") as f:
            before = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        before = {}
    now = {}
    here = sys._getframe()
    objs = gc.get_objects()
    names = _attrib._FunctionNames()
    out = []
    try:
        out += _graphs(attr, index, torch, objs, here, names, before, now)
    except Exception as e:  # a torch that differs: say so, do not fail the rest
        out.append("python: torch: autograd graphs not read (%s: %s)" % (type(e).__name__, e))
    try:
        out += _hooks(attr, index, torch, objs, here, names, before, now)
    except Exception as e:
        out.append("python: torch: module hooks not read (%s: %s)" % (type(e).__name__, e))
    del objs
    with open(state_path, "wb") as f:
        pickle.dump(now, f)
    return out


def _rate(key, count, index, before, now):
    """'+N/session' from the previous look, or the count over the sessions so far."""
    now[key] = (index, count)
    prev = before.get(key)
    if prev and index > prev[0]:
        per = (count - prev[1]) / (index - prev[0])
        since = "since session %d" % prev[0]
    else:
        per = count / (index + 1)
        since = "over %d sessions" % (index + 1)
    return "%+.1f/session %s" % (per, since)


# ---- tensors kept with their graphs ----------------------------------------------------------

def _graph(fn, limit=200000):
    """(nodes reachable from fn through next_functions, saved tensors' bytes, freed?)."""
    seen = {id(fn): fn}
    stack = [fn]
    saved, ptrs, freed = 0, set(), False
    fields = {}
    while stack and len(seen) < limit:
        f = stack.pop()
        t = type(f)
        names = fields.get(t)
        if names is None:
            names = fields[t] = [n for n in dir(t) if n.startswith("_saved_")]
        for n in names:
            try:
                v = getattr(f, n)
            except RuntimeError:  # freed by backward (no retain_graph)
                freed = True
                continue
            except Exception:
                continue
            for x in (v if isinstance(v, (tuple, list)) else (v,)):
                ptr = getattr(x, "data_ptr", None)
                if ptr is not None and hasattr(x, "element_size"):
                    try:
                        p = ptr()
                        if p and p not in ptrs:
                            ptrs.add(p)
                            saved += x.element_size() * x.nelement()
                    except Exception:
                        pass
        for nxt in getattr(f, "next_functions", ()) or ():
            node = nxt[0] if isinstance(nxt, tuple) else nxt
            if node is not None and id(node) not in seen:
                seen[id(node)] = node
                stack.append(node)
    return len(seen), saved, freed


def _tensor_words(t):
    try:
        shape = "[%s]" % ", ".join(str(d) for d in t.shape)
        return "%s %s" % (str(t.dtype).replace("torch.", ""), shape)
    except Exception:
        return type(t).__name__


def _graph_words(t):
    fn = t.grad_fn
    nodes, saved, freed = _graph(fn)
    what = "grad_fn %s, %d node%s through next_functions" % (type(fn).__name__, nodes,
                                                             "s"[nodes == 1:])
    if saved:
        what += ", its saved tensors holding %s" % _attrib._fmt(saved)
    elif freed:
        what += " (its saved tensors freed by backward)"
    return what, nodes


def _graphs(attr, index, torch, objs, here, names, before, now):
    Tensor = torch.Tensor
    kinds = (list, dict, collections.deque, set)
    found = []
    lone = []
    for o in objs:
        # by type, never isinstance: an object's __class__ can be a lazy module's __getattr__
        # (transformers' imports a model when asked for what it lacks)
        t = type(o)
        if issubclass(t, kinds) and not issubclass(t, Tensor):
            n, ex = 0, None
            try:
                for x in (o.values() if issubclass(t, dict) else o):
                    if issubclass(type(x), Tensor) and x.grad_fn is not None:
                        n += 1
                        ex = x
            except Exception:  # a container that changes as it is read, or a strange one
                continue
            if n >= 2:
                found.append((n, o, ex))
        elif issubclass(t, Tensor) and o.grad_fn is not None:
            lone.append(o)
    out = []
    found.sort(key=lambda e: -e[0])
    spaces = {id(m.__dict__) for m in list(sys.modules.values())
              if isinstance(m, types.ModuleType) and hasattr(m, "__dict__")}
    for n, cont, ex in found[:6]:
        if isinstance(cont, dict) and (id(cont) in spaces or _is_namespace(cont)):
            continue  # a module's globals or an object's attributes: not a container
        h = _attrib._holder(cont, here)
        if h is None:
            continue
        where, stores = _where(attr, h, names)
        key = "graphs:" + where
        if before.get(key) and before[key][1] >= n:
            now[key] = (index, n)
            continue  # no more than at the previous look: not growing
        arg = _stored_arg(stores)
        words, _ = _graph_words(ex)
        line = ("python: torch: %d tensors kept with their autograd graphs in %s (%s): %s%s, %s"
                % (n, where, _rate(key, n, index, before, now),
                   "`%s`, " % arg if arg else "", _tensor_words(ex), words))
        if stores:
            line += "; %s" % _stores_words(h, stores)
        out.append(line)
        if len(out) >= 3:
            break
    in_containers = {id(e[2]) for e in found}
    for t in lone[:64]:
        if id(t) in in_containers:
            continue
        words, nodes = _graph_words(t)
        if nodes < GRAPH_MIN:
            continue
        h = _attrib._holder(t, here)
        where = _attrib._holder_text(h) if h else "an unknown holder"
        out.append("python: torch: a tensor whose autograd graph keeps growing (%s), %s, %s, "
                   "held by %s" % (_rate("graph:" + where, nodes, index, before, now),
                                   _tensor_words(t), words, where))
        if len(out) >= 5:
            break
    return out


def _is_namespace(d):
    """Whether d is some object's __dict__ (its attributes)."""
    for r in gc.get_referrers(d):
        if getattr(r, "__dict__", None) is d:
            return True
    return False


def _where(attr, h, names):
    """The holder's words, and the lines that store into the container it names."""
    root, gname, below = h
    where = _attrib._holder_text(h, stores=False)
    if isinstance(root, types.FrameType):
        return where, []
    files = [getattr(root, "__file__", None)]
    if below and not below[-1].startswith("["):  # a container held by an attribute
        name, attr_ = below[-1].split(".", 1)[-1], True
        files += [getattr(m, "__file__", None) for m in list(sys.modules.values())
                  if isinstance(m, types.ModuleType) and getattr(m, "__file__", None)
                  and attr.is_user(m.__file__)][:64]
    elif below:
        return where, []
    else:
        name, attr_ = gname, False
    stores, done = [], set()
    for f in files:
        if f and f not in done and f.endswith(".py"):
            done.add(f)
            stores += [(f,) + s for s in _attrib._stores(f, name, attr_, names)]
    return where, stores


_NUMBERS = {"item", "tolist", "float", "int", "numpy", "detach", "cpu"}


def _stored(node):
    """The expressions a store puts in (both branches of an `a if c else b`), less the ones that
    make a number or a graph-free tensor of a tensor (`loss.item()`, `float(loss)`,
    `loss.detach()`)."""
    v = node.args[0] if isinstance(node, ast.Call) and node.args else getattr(node, "value", None)
    out = []
    for e in (v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,):
        if e is None:
            continue
        call = e.func if isinstance(e, ast.Call) else None
        if (getattr(call, "attr", None) or getattr(call, "id", None)) not in _NUMBERS:
            out.append(_attrib._source(e))
    return out


def _stored_arg(stores):
    """`loss` of `history.append(loss)`: the expression stored, when the stores that can keep a
    graph agree."""
    args = {a for _, _, _, node in stores for a in _stored(node)}
    return args.pop() if len(args) == 1 else ""


def _stores_words(h, stores):
    """'history is stored into at file:line in f (history.append(loss))': the stores that can
    keep a graph (all of them when none is told apart)."""
    root, gname, below = h
    name = gname if not below else below[-1].split(".", 1)[-1]
    keeping = [st for st in stores if _stored(st[3])] or stores
    return "%s is stored into at %s" % (name, ", ".join(
        "%s (%s)" % (where, _attrib._source(node)) for _, _, where, node in keeping[:3]))


# ---- hooks registered again and again --------------------------------------------------------

def _code(fn):
    for f in (fn, getattr(fn, "func", None), getattr(fn, "__func__", None)):
        code = getattr(f, "__code__", None)
        if code is not None:
            return f, code
    return fn, None


def _module_paths(torch, mods, here):
    """id(module) -> its path from a root module's holder: 'model.encoder.0'."""
    parent = {}
    for p in mods:
        for name, c in getattr(p, "_modules", {}).items():
            if c is not None:
                parent[id(c)] = (p, name)
    roots = {}

    def root_name(m):
        n = roots.get(id(m))
        if n is None:
            h = _attrib._holder(m, here, depth=4)
            if h is None:
                n = type(m).__name__
            elif isinstance(h[0], types.FrameType):
                n = h[1] + _attrib._join(h[2])
            else:
                n = ("" if h[0].__name__ == "__main__" else h[0].__name__ + ".") + h[1] + \
                    _attrib._join(h[2])
            roots[id(m)] = n
        return n

    def path(m):
        parts = []
        seen = set()
        while id(m) in parent and id(m) not in seen:
            seen.add(id(m))
            m, name = parent[id(m)]
            parts.append(name)
        return ".".join([root_name(m)] + parts[::-1])
    return path


def _kept(values):
    """(tensors, bytes) in values (containers one level deep)."""
    n, size, ptrs = 0, 0, set()
    torch = sys.modules["torch"]
    for v in values:
        items = v.values() if isinstance(v, dict) else v if isinstance(
            v, (list, tuple, set, collections.deque)) else (v,)
        for x in items:
            if issubclass(type(x), torch.Tensor):
                n += 1
                try:
                    p = x.data_ptr()
                    if p not in ptrs:
                        ptrs.add(p)
                        size += x.element_size() * x.nelement()
                except Exception:
                    pass
    return n, size


def _closure_words(fns):
    """What the hooks' closures and default arguments keep, the largest first."""
    by_name = {}
    for fn in fns:
        f, code = _code(fn)
        cells = zip(code.co_freevars, getattr(f, "__closure__", None) or ()) if code else ()
        pairs = [(name, cell.cell_contents) for name, cell in cells
                 if _has_contents(cell)]
        defaults = getattr(f, "__defaults__", None) or ()
        if code is not None and defaults:
            argnames = code.co_varnames[:code.co_argcount]
            pairs += list(zip(argnames[-len(defaults):], defaults))
        for name, v in pairs:
            by_name.setdefault(name, []).append(v)
    best = []
    for name, values in by_name.items():
        n, size = _kept(values)
        if n:
            best.append((size, n, name))
    best.sort(reverse=True)
    return ["`%s`: %d tensor%s, %s" % (name, n, "s"[n == 1:], _attrib._fmt(size))
            for size, n, name in best[:2]]


def _has_contents(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _register_sites(fn, calls, names):
    """Where fn's file registers it: calls to `calls` whose first argument is fn (by name, or a
    lambda on fn's line)."""
    f, code = _code(fn)
    if code is None:
        return []
    filename = code.co_filename
    tree = names.tree(filename)
    if tree is None:
        return []
    calls = (calls,) if isinstance(calls, str) else calls
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in calls and node.args):
            continue
        a = node.args[0]
        if (isinstance(a, ast.Name) and a.id == f.__name__) or (
                isinstance(a, ast.Lambda) and a.lineno == code.co_firstlineno):
            out.append("%s:%d in %s" % (_attrib._short(filename), node.lineno,
                                        names.at(filename, node.lineno)))
    return sorted(set(out))[:3]


def _hooks(attr, index, torch, objs, here, names, before, now):
    Module = torch.nn.Module
    mods = [o for o in objs if issubclass(type(o), Module)]
    path = _module_paths(torch, mods, here)
    found = []
    for m in mods:
        for field, kind, calls in HOOK_KINDS:
            hooks = getattr(m, field, None)
            if not hooks:
                continue
            by_code = {}
            for fn in list(hooks.values()):
                f, code = _code(fn)
                by_code.setdefault(code if code is not None else id(fn), []).append(fn)
            for code, fns in by_code.items():
                if len(fns) >= 2:
                    found.append((len(fns), m, kind, calls, fns, code))
    g = getattr(getattr(torch.nn.modules, "module", None), "_global_forward_hooks", None)
    if g and len(g) >= 2:
        by_code = {}
        for fn in list(g.values()):
            by_code.setdefault(_code(fn)[1] or id(fn), []).append(fn)
        for code, fns in by_code.items():
            if len(fns) >= 2:
                found.append((len(fns), None, "global forward hook",
                              "register_module_forward_hook", fns, code))
    found.sort(key=lambda e: -e[0])
    out = []
    for n, m, kind, calls, fns, code in found[:3]:
        fn = fns[-1]
        f, _ = _code(fn)
        name = getattr(f, "__qualname__", repr(f))
        if isinstance(code, types.CodeType):
            name += " (%s:%d)" % (_attrib._short(code.co_filename), code.co_firstlineno)
        on = "every module" if m is None else "%s (%s(%s))" % (path(m), type(m).__name__,
                                                               _extra(m))
        key = "hook:%s:%s" % ("*" if m is None else path(m), name)
        line = ("python: torch: %s %s is on %s %d times (%s), never removed"
                % (kind, name, on, n, _rate(key, n, index, before, now)))
        sites = _register_sites(fn, calls, names)
        if sites:
            line += "; registered at %s" % ", ".join(sites)
        kept = _closure_words(fns)
        if kept:
            line += "; their closures keep %s" % " and ".join(kept)
        out.append(line)
    return out


def _extra(m):
    try:
        return m.extra_repr()
    except Exception:
        return ""
