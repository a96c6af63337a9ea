"""What the attribution's lines name a holder and a line with (``_attrib.py``, ``_torch.py``,
``_keep.py``): a file's path as the user knows it, the function around a line, the lines that
store into a global, and the shortest chain of referrers from a module global or a frame down to
one object (a tracked object's holder, a kept tensor's container)."""

import ast
import gc
import os
import sys
import types


def _short(filename):
    parts = filename.split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[parts.index(marker) + 1:])
    try:
        rel = os.path.relpath(filename)
        if not rel.startswith(".."):
            return rel
    except ValueError:
        pass
    return filename


class _FunctionNames:
    """file:line -> the qualified name of the innermost def or class around it (tracemalloc's
    frames have no function names); each file parsed at most once per use, nothing kept."""

    def __init__(self):
        self.trees = {}

    def tree(self, filename):
        tree = self.trees.get(filename, 0)
        if tree == 0:
            try:
                with open(filename, "rb") as f:
                    tree = ast.parse(f.read(), filename)
            except (OSError, SyntaxError, ValueError):
                tree = None
            self.trees[filename] = tree
        return tree

    def at(self, filename, line):
        tree = self.tree(filename)
        if tree is None:
            return "?"
        name = []
        body = tree.body
        while True:
            for node in body:
                if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        and node.lineno <= line <= getattr(node, "end_lineno", node.lineno)):
                    name.append(node.name)
                    body = node.body
                    break
            else:
                break
        return ".".join(name) or "<module>"


_STORE_METHODS = {"append", "add", "extend", "insert", "setdefault", "update", "appendleft",
                  "__setitem__"}


def _source(node):
    try:
        return ast.unparse(node)
    except (AttributeError, ValueError, TypeError):  # Python < 3.9
        return "?"


def _stores(filename, name, attr=False, names=None):
    """Where filename stores into `name` (a global; with attr, any `X.name`): a list of
    (line, 'file:line in func', the storing node: an assignment or a call) in line order."""
    names = names or _FunctionNames()
    tree = names.tree(filename)
    if tree is None:
        return []

    def is_it(n):
        if attr:
            return isinstance(n, ast.Attribute) and n.attr == name
        return isinstance(n, ast.Name) and n.id == name

    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) and is_it(t.value) for t in targets):
                found.setdefault(node.lineno, node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _STORE_METHODS and is_it(node.func.value):
                found.setdefault(node.lineno, node)
    return [(ln, "%s:%d in %s" % (_short(filename), ln, names.at(filename, ln)), found[ln])
            for ln in sorted(found)]


def _store_lines(module, gname):
    """Where module's source stores into its global gname: 'file:line in func'."""
    filename = getattr(module, "__file__", None)
    if not filename:
        return []
    return [where for _, where, _ in _stores(filename, gname)[:4]]


def _edge(parent, child):
    """How parent refers to child, as text."""
    if isinstance(parent, dict):
        for k, v in parent.items():
            if v is child:
                return "[%r]" % (k,)
        return "[?]"
    if isinstance(parent, (list, tuple)):
        for i, v in enumerate(parent):
            if v is child:
                return "[%d]" % i
        return "[?]"
    d = getattr(parent, "__dict__", None)
    if isinstance(d, dict):
        for k, v in d.items():
            if v is child:
                return "%s.%s" % (type(parent).__name__, k)
    for k in getattr(type(parent), "__slots__", ()):
        if getattr(parent, k, None) is child:
            return "%s.%s" % (type(parent).__name__, k)
    return "(%s)" % type(parent).__name__


_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _holder(obj, here, depth=10, width=256):
    """The shortest chain of referrers from a module global (or a frame) down to obj:
    (module, global name, edges below it) or (frame, local name, edges); None when none."""
    skip = set()
    f = here
    while f is not None:  # the hook's own frames hold obj too
        skip.add(id(f))
        f = f.f_back
    modules = {id(m.__dict__): m for m in list(sys.modules.values())
               if isinstance(m, types.ModuleType) and hasattr(m, "__dict__")}
    parent = {id(obj): None}
    keep = {id(obj): obj}
    frontier = [obj]
    skip.add(id(frontier))
    skip.add(id(keep))
    for _ in range(depth):
        nxt = []
        fids = {id(c): c for c in frontier}
        refs = gc.get_referrers(*frontier)
        for r in refs:
            if id(r) in skip or id(r) in parent or r is frontier or r is nxt or r is refs:
                continue
            kid = next((x for x in gc.get_referents(r) if id(x) in fids), None)
            if kid is None:
                continue
            parent[id(r)] = kid
            keep[id(r)] = r
            if id(r) in modules:
                m = modules[id(r)]
                gname = next((k for k, v in m.__dict__.items() if v is kid), "?")
                return m, gname, _chain_below(kid, parent, keep)
            if isinstance(r, types.FrameType):
                if r.f_code.co_filename.startswith(_OWN_DIR):
                    continue  # the attribution's own frames (a list of gc.get_objects() there)
                local = next((k for k, v in r.f_locals.items() if v is kid), "?")
                return r, local, _chain_below(kid, parent, keep)
            if isinstance(r, types.ModuleType) or type(r).__name__ == "cell":
                continue
            if len(nxt) < width:
                nxt.append(r)
        del refs
        skip.add(id(nxt))
        if not nxt:
            return None
        frontier = nxt
    return None


def _join(below):
    return "".join(p if p.startswith("[") else " -> " + p for p in below)


def _holder_text(h, stores=True):
    """A holder as text: 'mod.g[k] -> T.attr; g is stored into at file:line in f'."""
    root, name, below = h
    if isinstance(root, types.FrameType):
        return "local %r of %s (%s:%d)%s" % (name, root.f_code.co_name, _short(
            root.f_code.co_filename), root.f_lineno, _join(below))
    path = "%s.%s%s" % (root.__name__, name, _join(below))
    lines = _store_lines(root, name) if stores else []
    if lines:
        path += "; %s is stored into at %s" % (name, ", ".join(lines))
    return path


def _holder_path(obj, here, depth=10, width=256):
    """The holder of obj as text, with the lines that store into its global; "" when none."""
    h = _holder(obj, here, depth, width)
    return _holder_text(h) if h else ""


def _chain_below(top_child, parent, keep):
    """The edges from top_child down to the object searched for ("['k']", "Type.attr")."""
    parts, node = [], top_child
    while True:
        down = parent[id(node)]
        if down is None:
            break
        if getattr(node, "__dict__", None) is down and parent.get(id(down)) is not None:
            inner = parent[id(down)]  # an instance's own dict: name the attribute
            key = next((k for k, v in down.items() if v is inner), "?")
            parts.append("%s.%s" % (type(node).__name__, key))
            node = inner
            continue
        parts.append(_edge(node, down))
        node = down
    return parts
