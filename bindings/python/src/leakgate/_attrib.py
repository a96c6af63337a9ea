"""Python-level attribution at session ends: who holds a tracked object that outlived its
session, and (with tracemalloc on) where Python's heap grew.

Under ``leakgate exec`` the binding installs a session hook (leakgate_set_session_hook). The
agent calls it at each session end, in the thread ending it, *after* the session was measured.
The hook forks: the work runs in a copy of the process, which sees the same objects and heap,
and sends its lines back through a pipe; the measured process pays only the fork. (Done in the
process itself, the snapshots and the diff left a saturating 150 KiB of je_allocated and 2 MiB
of RSS over the first sessions of a clean program: inconclusive where it should pass.) The copy

- for each object entered with ``leakgate.track`` in this session and still alive, walks the
  garbage collector's referrers up to a module global (or a frame), and names the chain and the
  lines of that module that store into the global: ``python: 'tft.varmap' (varmap) outlived
  session 5, kept alive by __main__._TRAINERS['run-5'] -> TFTTrainer.varmap; _TRAINERS is
  stored into at train.py:85 in TFTTrainer.__init__``;
- when tracemalloc is tracing (``LEAKGATE_PY_TRACEMALLOC=FRAMES`` starts it, as do
  ``PYTHONTRACEMALLOC`` and ``-X tracemalloc``): at the last warm-up (LEAKGATE_WARMUP, which
  exec sets) saves a snapshot to a file as the baseline; later, diffs the snapshot against it
  by traceback and groups the growth by the innermost frame in the program's own code (not the
  standard library, not site-packages): ``python: +2.4 MiB/session (1,200 blocks) at
  train.py:88 in Trainer.fit (allocated at torch/optim/adamw.py:110 in AdamW.step)``.

The lines are attached to the session (leakgate_session_note): they land in its results line
(``notes``), report.html and exec's printout, beside the native stacks.

tracemalloc is off by default because its own tables live in the heap leakgate measures: on
the PyTorch example's fixed trainer it moves je_allocated by 6-9 KiB per session (the budget is
8 KiB), and inside a tag scope its table growth is tagged (bindings/python/README.md).
One-time costs (imports, the code paths of the fork) are paid once when the hook is installed,
before the first session (a rehearsal). LEAKGATE_PY_ATTRIBUTION=0 turns the hook off;
LEAKGATE_PY_TOP (default 6) is the number of lines per session.
"""

import ast
import atexit
import gc
import os
import shutil
import sys
import sysconfig
import tempfile
import tracemalloc
import types

import leakgate
from . import _lib

_state = None


def ensure():
    """Installs the hook once, when under exec and not turned off."""
    global _state
    if _state is None and leakgate.active():
        if (os.environ.get("LEAKGATE_PY_ATTRIBUTION", "1") == "0"
                or getattr(leakgate._c, "leakgate_set_session_hook", None) is None):
            _state = False
        else:
            _state = _Attribution()
    return bool(_state)


def _fmt(n):
    a = abs(n)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if a >= div:
            return "%.1f %s" % (n / div, unit)
    return "%d B" % n


class _Attribution:
    def __init__(self):
        frames = int(os.environ.get("LEAKGATE_PY_TRACEMALLOC", "0") or 0)
        if frames > 0 and not tracemalloc.is_tracing():
            tracemalloc.start(frames)
        self.tracing = tracemalloc.is_tracing()
        self.top = int(os.environ.get("LEAKGATE_PY_TOP", "6"))
        self.warmup = int(os.environ.get("LEAKGATE_WARMUP", "1"))
        paths = sysconfig.get_paths()
        self.lib_dirs = tuple(sorted({os.path.realpath(paths[k]) + os.sep
                                      for k in ("stdlib", "platstdlib", "purelib", "platlib")
                                      if paths.get(k)}))
        self.own_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
        self.dir = tempfile.mkdtemp(prefix="leakgate-py-")
        atexit.register(shutil.rmtree, self.dir, True)
        self.base_path = os.path.join(self.dir, "base.tracemalloc")
        self.base_index = None
        self.user_cache = {}
        self.filters = [tracemalloc.Filter(False, tracemalloc.__file__),
                        tracemalloc.Filter(False, __file__),
                        tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
                        tracemalloc.Filter(False, ast.__file__)]
        self.cb = _lib.HOOK(self._hook)
        # a rehearsal of a session end's work, so its one-time costs come before any session
        self.in_child(-2)
        if self.warmup == 0:  # the baseline is the process before its first session
            self.in_child(-1)
        leakgate._c.leakgate_set_session_hook(self.cb, None)

    def take(self):
        return tracemalloc.take_snapshot().filter_traces(self.filters)

    # ---- the hook ---------------------------------------------------------------------------

    def _hook(self, arg, index):
        try:
            if index >= self.warmup - 1:
                for line in self.in_child(index):
                    leakgate.note(line)
        except BaseException as e:  # never into the agent
            try:
                leakgate.note("python: attribution failed: %s: %s" % (type(e).__name__, e))
            except BaseException:
                pass
        finally:
            leakgate._ended[0] = index + 1

    def in_child(self, index):
        """Runs the session end's work in a forked copy of the process and returns its lines.
        The copy sees the same heap and objects; what the work allocates (snapshots of every
        trace, their diff, the referrer walk: tens of MB on a large program) never touches the
        measured process, whose only cost is the fork and the lines read back. Index -2 is
        the rehearsal; the session that becomes the baseline returns no lines."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the copy: the agent is inert here (its fork handler); never returns
            code = 1
            try:
                os.close(r)
                data = "\n".join(self.work(index)).encode("utf-8", "replace")
                while data:
                    data = data[os.write(w, data):]
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return ["python: attribution failed: its process ended with status %d" % status]
        if index != -2 and (index == self.warmup - 1 or self.base_index is None):
            self.base_index = index
            if self.tracing:
                return []
        return b"".join(chunks).decode("utf-8", "replace").splitlines() if index >= 0 else []

    def work(self, index):
        """The forked copy's work: the baseline's snapshot, or the diff and the holders."""
        if not self.tracing:
            return self.holders(index) if index >= 0 else []
        snap = self.take()
        if index == -2:  # rehearsal: every step once, on a scratch file
            snap.dump(self.base_path + ".rehearsal")
            self.describe(snap, tracemalloc.Snapshot.load(self.base_path + ".rehearsal"), -1, 1)
            self.holders(-1)
            return []
        if index == self.warmup - 1 or self.base_index is None:
            snap.dump(self.base_path)
            return []
        base = tracemalloc.Snapshot.load(self.base_path)
        return self.describe(snap, base, self.base_index, index - self.base_index) + \
            self.holders(index)

    # ---- tracemalloc growth -----------------------------------------------------------------

    def is_user(self, filename):
        v = self.user_cache.get(filename)
        if v is None:
            if filename.startswith("<"):
                v = False
            else:
                real = os.path.realpath(filename)
                v = not (real.startswith(self.lib_dirs) or real.startswith(self.own_dir)
                         or "/site-packages/" in real or "/dist-packages/" in real)
            if len(self.user_cache) < 4096:
                self.user_cache[filename] = v
        return v

    def describe(self, snap, base, base_index, sessions):
        groups = {}
        total = 0
        for d in snap.compare_to(base, "traceback"):
            total += d.size_diff
            if d.size_diff <= 0:
                continue
            frames = list(d.traceback)  # oldest first
            inner = frames[-1]
            user = next((f for f in reversed(frames) if self.is_user(f.filename)), inner)
            key = (user.filename, user.lineno)
            g = groups.get(key)
            if g is None:
                g = groups[key] = [0, 0, inner, 0]
            g[0] += d.size_diff
            g[1] += d.count_diff
            if d.size_diff > g[3]:
                g[2], g[3] = inner, d.size_diff
        top = sorted(groups.items(), key=lambda kv: -kv[1][0])[: self.top]
        names = _FunctionNames()
        out = ["python: heap %s%s/session since session %d (tracemalloc, %d frames)"
               % ("+" if total >= 0 else "", _fmt(total / sessions), base_index,
                  tracemalloc.get_traceback_limit())]
        for (fname, line), (size, count, inner, _) in top:
            where = "%s:%d in %s" % (_short(fname), line, names.at(fname, line))
            if (inner.filename, inner.lineno) != (fname, line):
                where += " (allocated at %s:%d in %s)" % (
                    _short(inner.filename), inner.lineno, names.at(inner.filename, inner.lineno))
            out.append("python: +%s/session (%.0f blocks) at %s"
                       % (_fmt(size / sessions), count / sessions, where))
        return out

    # ---- who holds a tracked object ---------------------------------------------------------

    def holders(self, index):
        out = []
        for oid, entry in list(leakgate._tracked.items()):
            fin, kind, name, born = entry
            if born != index or fin is None or not fin.alive:
                continue
            obj = fin.peek()[0]
            path = _holder_path(obj, sys._getframe())
            del obj
            if not path:
                out.append("python: %r (%s) outlived session %d; no holder found by the garbage "
                           "collector (held from native code?)" % (name, kind, index))
            else:
                out.append("python: %r (%s) outlived session %d, kept alive by %s"
                           % (name, kind, index, path))
            if len(out) >= 3:
                break
        return out


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

    def at(self, filename, line):
        tree = self.trees.get(filename, 0)
        if tree == 0:
            try:
                with open(filename, "rb") as f:
                    tree = ast.parse(f.read(), filename)
            except (OSError, SyntaxError, ValueError):
                tree = None
            self.trees[filename] = tree
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


def _store_lines(module, gname):
    """Where module's source stores into its global gname: 'file:line in func'."""
    filename = getattr(module, "__file__", None)
    if not filename:
        return []
    try:
        with open(filename, "rb") as f:
            tree = ast.parse(f.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return []
    names = _FunctionNames()
    names.trees[filename] = tree
    found = []
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            hit = any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                      and t.value.id == gname for t in targets)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            hit = (node.func.attr in _STORE_METHODS and isinstance(node.func.value, ast.Name)
                   and node.func.value.id == gname)
        if hit:
            found.append(node.lineno)
    return ["%s:%d in %s" % (_short(filename), ln, names.at(filename, ln))
            for ln in sorted(set(found))[:4]]


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


def _holder_path(obj, here, depth=10, width=256):
    """The shortest chain of referrers from a module global (or a frame) down to obj, as text
    with the lines that store into that global; "" when none is found."""
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
                return _format_chain(modules[id(r)], kid, parent, keep)
            if isinstance(r, types.FrameType):
                return _format_frame(r, kid, parent, keep)
            if isinstance(r, types.ModuleType) or type(r).__name__ == "cell":
                continue
            if len(nxt) < width:
                nxt.append(r)
        del refs
        skip.add(id(nxt))
        if not nxt:
            return ""
        frontier = nxt
    return ""


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


def _format_chain(module, child, parent, keep):
    gname = next((k for k, v in module.__dict__.items() if v is child), "?")
    below = _chain_below(child, parent, keep)
    path = "%s.%s%s" % (module.__name__, gname, "".join(
        p if p.startswith("[") else " -> " + p for p in below))
    lines = _store_lines(module, gname)
    if lines:
        path += "; %s is stored into at %s" % (gname, ", ".join(lines))
    return path


def _format_frame(frame, child, parent, keep):
    local = next((k for k, v in frame.f_locals.items() if v is child), "?")
    below = _chain_below(child, parent, keep)
    return "local %r of %s (%s:%d)%s" % (local, frame.f_code.co_name, _short(
        frame.f_code.co_filename), frame.f_lineno, "".join(
        p if p.startswith("[") else " -> " + p for p in below))

