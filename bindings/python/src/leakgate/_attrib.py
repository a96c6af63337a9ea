"""Python-level attribution at session ends: where Python's heap grew, by the line of the user's
code (tracemalloc, armed when leakgate arms heap profiling), who holds a tracked object that
outlived its session, and PyTorch's shapes of leak in its own terms (``_torch.py``).

Under ``leakgate exec`` the binding installs a session hook (leakgate_set_session_hook). The
agent calls it at each session end, in the thread ending it, *after* the session was measured.
Work that reads the heap runs in a forked copy of the process, which sees the same objects and
heap and sends its lines back through a pipe; the measured process pays only the fork. (Done in
the process itself, the snapshots and the diff left a saturating 150 KiB of je_allocated and
2 MiB of RSS over the first sessions of a clean program.) Before anything is armed the hook
forks only when a tracked object of the session is still alive: a program that leaks nothing
pays one call into libleakgate per session.

- **Python lines, by default.** When leakgate exec arms heap profiling (a channel proven to
  leak, the census's kept blocks, ``--stacks``: leakgate_profiling_armed), the hook starts
  tracemalloc for the next session with 1 frame (its cost is per captured frame per allocation);
  if most of that session's growth was allocated outside the program's own code, it traces one
  more session with 4 frames, then if need be with LEAKGATE_PY_FRAMES (16); then it stops
  (LEAKGATE_PY_SESSIONS, 1, is the sessions at each depth; 0 traces to the end at 16). At each traced session's end the copy groups
  what was traced since and is still alive by traceback and names each group by the innermost
  frame of the program's own code (not the standard library, site-packages or this package),
  with the allocating frame when that is a library's: ``python: +212.8 KiB/session (6981
  blocks) at memo.py:21 in features (allocated at json/decoder.py:353 in
  JSONDecoder.raw_decode)``. Not in a program that opened a tag scope: tracemalloc's entries
  made inside it would be tagged.
- **tracemalloc's own memory is taken out of what is judged.** Its tables live in the heap
  leakgate measures. The hook reads ``tracemalloc.get_tracemalloc_memory()`` first (before its
  own allocations add traces), the copy adds 16 bytes for each of the program's traces (the
  ``trace_t`` each holds, which CPython's count leaves out: alone it is 74-80 % of what jemalloc
  holds), and the hook hands the sum to the agent (leakgate_session_overhead), which takes it out
  of that session's je_allocated, je_active, je_resident and rss; a note says how much.
- LEAKGATE_PY_TRACEMALLOC=N traces with N frames from the last warm-up's end to the end instead;
  a tracemalloc the program started itself (PYTHONTRACEMALLOC, -X tracemalloc) is diffed against
  a baseline pickled at the last warm-up; LEAKGATE_PY_TRACEMALLOC=0 never starts it.
- **Who holds a tracked object** (``leakgate.track``) that is alive at its session's end: the
  garbage collector's referrers up to a module global (or a frame), with the lines of that
  module that store into the global: ``python: 'tft.varmap' (varmap) outlived session 5, kept
  alive by __main__._TRAINERS['run-5'] -> TFTTrainer.varmap; _TRAINERS is stored into at
  train.py:85 in TFTTrainer.__init__``.
- **PyTorch** (only when torch is already imported, at the arming session and the traced ones):
  a loss kept with its autograd graph, a forward hook registered every session (``_torch.py``).

- **Settling before the measurement** (leakgate_set_settle_hook, ``_settle``): the cyclic
  collector runs and PyTorch's cache of dead shared storages is pruned at every session end,
  API or marker, before the agent measures; LEAKGATE_PY_SETTLE=0 turns it off.

The lines are attached to the session (leakgate_session_note): they land in its results line
(``notes``), report.html and exec's printout, beside the native stacks. One-time costs of the
fork path are paid once when the hook is installed, before the first session (a rehearsal).
LEAKGATE_PY_ATTRIBUTION=0 turns the hook off; LEAKGATE_PY_TOP (default 6) is the number of
lines per session.
"""

import _thread
import atexit
import gc
import os
import pickle
import shutil
import sys
import sysconfig
import tempfile
import time
import tracemalloc

import leakgate
from . import _child, _lib

try:
    import _tracemalloc
except ImportError:  # not CPython
    _tracemalloc = None

_state = None

# sizeof(trace_t) in CPython's _tracemalloc.c, 3.8 to 3.13 ({size_t size; traceback_t *}): one a
# live trace, allocated beside the table entry that get_tracemalloc_memory() counts
TRACE_T = 16
OVERHEAD = "\0overhead "  # the copy's first line: the bytes tracemalloc holds, then its parts
ESCALATE = "\0escalate"  # the copy's: the growth was allocated outside the program's code
# the next look's frames: each frame costs every traced allocation a line-number lookup, so 4
# (a library call or two below the program's line) before all of LEAKGATE_PY_FRAMES
DEPTHS = {1: 4}
_NAMING = ("python: +", "python: heap", "python: torch:", "python: '")
_KEEP_COST = "\0keepcost "  # the copy's: the seconds of its look
_KEPT = "\0kept"  # the copy's: a line of who keeps it, noted again at each later session end


def _drop_dead_shared_storages():
    """PyTorch's cache of the storages a DataLoader worker sent
    (torch.multiprocessing.reductions.shared_cache) keeps an entry for each, dead or alive, and
    drops the dead only once it holds 128: a loader's clean epochs each left entries behind,
    and the census counted them as kept. Only where PyTorch imported it, under its own lock
    (never waited for: a thread that holds it is in the middle of using it)."""
    cache = getattr(sys.modules.get("torch.multiprocessing.reductions"), "shared_cache", None)
    lock = getattr(cache, "lock", None)
    if lock is None or not hasattr(cache, "free_dead_references") or not lock.acquire(False):
        return
    try:
        cache.free_dead_references()
    finally:
        lock.release()


def _settle(arg, index):
    """Before each session's measurement (leakgate_set_settle_hook): Python's cyclic garbage
    is collected (a Lightning Trainer and its module point at each other, and wait for a
    generation-2 collection that a process with torch loaded may not run for dozens of
    sessions) and PyTorch's dead cache entries dropped: what is only waiting for the runtime's
    next collection is not kept. In marker mode too, where the program cannot do it before
    its marker line. LEAKGATE_PY_SETTLE=0 turns it off."""
    try:
        gc.collect()
        _drop_dead_shared_storages()
    except BaseException:  # never into the agent
        pass


_settle_cb = None


def settles():
    """Installs the settle hook once under exec; whether the agent calls it."""
    global _settle_cb
    if _settle_cb is None and leakgate.active():
        install = getattr(leakgate._c, "leakgate_set_settle_hook", None)
        _settle_cb = False
        if install is not None and os.environ.get("LEAKGATE_PY_SETTLE", "1") != "0":
            _settle_cb = _lib.HOOK(_settle)
            install(_settle_cb, None)
    return bool(_settle_cb)


def ensure():
    """Installs the hooks once, when under exec and not turned off."""
    global _state
    settles()
    if _state is None and leakgate.active():
        if (os.environ.get("LEAKGATE_PY_ATTRIBUTION", "1") == "0"
                or getattr(leakgate._c, "leakgate_set_session_hook", None) is None):
            _state = False
        else:
            _state = _Attribution()
    return bool(_state)


def _not_cmds():
    """In a forked copy: tells exec this process is leakgate's, not one of the program's
    children that began and ended within a session ("-PID" in LEAKGATE_AGENT_TREE, after the
    agent's "PID PPID": harness/exec/exec_births.c)."""
    tree = os.environ.get("LEAKGATE_AGENT_TREE")
    if tree:
        try:
            fd = os.open(tree, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, b"-%d\n" % os.getpid())
            finally:
                os.close(fd)
        except OSError:
            pass  # then it is counted, as before


def _other_threads():
    """{thread id: (its name, its innermost frame)} of the threads but this one, read in the
    measured process just before it forks the copy that walks (_paths.running_locals): the
    copy has only the thread that forked, but the others' frames are in the memory it copied,
    and stay readable there (their thread states are gone, not their frames). Here, not in
    _paths, which only the copies import (its import here was a 67 KiB step in a session).
    Its cost: the frame object of each other thread's innermost function, made once (Python
    3.11+ makes them on demand), and this dict, freed after the fork."""
    threading = sys.modules.get("threading")  # not imported: no Thread has a name
    names = {t.ident: t.name for t in threading.enumerate()} if threading else {}
    me = _thread.get_ident()
    return {i: (names.get(i, str(i)), f) for i, f in sys._current_frames().items() if i != me}


def _fmt(n):
    a = abs(n)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if a >= div:
            return "%.1f %s" % (n / div, unit)
    return "%d B" % n


def _span(first, last):
    if last is None:
        return "from session %d on" % first
    return "session %d" % first if first == last else "sessions %d-%d" % (first, last)


def _int_env(name, default):
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


class _Attribution:
    def __init__(self):
        mode = os.environ.get("LEAKGATE_PY_TRACEMALLOC", "").strip().lower()
        forced = _int_env("LEAKGATE_PY_TRACEMALLOC", 0) if mode not in ("", "auto") else 0
        self.never = mode == "0" or _tracemalloc is None
        self.explicit = forced > 0 and not self.never  # N frames, from the last warm-up on
        self.frames = forced or max(1, _int_env("LEAKGATE_PY_FRAMES", 16))
        self.top = _int_env("LEAKGATE_PY_TOP", 6)
        self.warmup = _int_env("LEAKGATE_WARMUP", 1)
        paths = sysconfig.get_paths()
        self.lib_dirs = tuple(sorted({os.path.realpath(paths[k]) + os.sep
                                      for k in ("stdlib", "platstdlib", "purelib", "platlib")
                                      if paths.get(k)}))
        self.own_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
        self.own_files = (os.path.abspath(__file__), os.path.join(self.own_dir, "_torch.py"),
                          os.path.join(self.own_dir, "_keep.py"),
                          os.path.join(self.own_dir, "_paths.py"), tracemalloc.__file__)
        self.user_cache = {}
        self.dir = tempfile.mkdtemp(prefix="leakgate-py-")
        atexit.register(shutil.rmtree, self.dir, True)
        self.base_path = os.path.join(self.dir, "base.pickle")
        armed = getattr(leakgate._c, "leakgate_profiling_armed", None)
        self.armed_fn = armed
        self.set_overhead = getattr(leakgate._c, "leakgate_session_overhead", None)
        # the sessions traced: after `base` (a session index; -1 the process before session 0)
        # up to `until` (None: to the end); `ours`: this hook started tracemalloc and stops it
        self.base = None
        self.until = None
        self.ours = False
        self.armed_at = None
        self.window = max(0, _int_env("LEAKGATE_PY_SESSIONS", 1))
        self.depth = self.frames
        # a tracemalloc the program started itself: its growth since the last warm-up, diffed
        # against a baseline the copy pickles then
        self.user_traced = not self.never and tracemalloc.is_tracing()
        self.memory = 0
        # who keeps it (_keep.py): the session whose end took the first look, and the lines
        self.keep_off = os.environ.get("LEAKGATE_PY_KEEP", "1") == "0"
        self.keep_at = None
        self.keep_lines = []
        self.keep_cost = 0.0
        self.others = None  # in the walk's copy: other threads' frames (_other_threads)
        self.started = time.monotonic()
        self.carry = []  # the latest lines naming a line of the program or a PyTorch shape
        self.cb = _lib.HOOK(self._hook)
        # a rehearsal of a session end's work, so its one-time costs come before any session
        self.in_child(-2, {"rehearsal"})
        if self.user_traced:
            self.armed_at = -1
            if self.warmup == 0:  # the baseline is the process before its first session
                self.in_child(-1, {"base"})
                self.base = -1
        elif self.warmup == 0 and (self.explicit or not self.never and self.armed()):
            self.start(-1, self.first())  # armed before the first session, with no warm-up
        leakgate._c.leakgate_set_session_hook(self.cb, None)

    def armed(self):
        return bool(self.armed_fn is not None and self.armed_fn())

    def first(self):
        """The frames of the first look: 1 (the allocating line), or all of them to the end."""
        return 1 if self.window and not self.explicit else self.frames

    def start(self, index, frames):
        """Starts tracemalloc with `frames` frames at the end of session `index`: the blocks it
        traces are the growth since, over the next `window` sessions (0, or an explicit
        LEAKGATE_PY_TRACEMALLOC=N: to the end)."""
        tracemalloc.start(frames)
        self.ours = True
        self.depth = frames
        self.base = index
        if self.armed_at is None:
            self.armed_at = index
        self.until = index + self.window if self.window and not self.explicit else None

    # ---- the hook ---------------------------------------------------------------------------

    def _hook(self, arg, index):
        # tracemalloc's tables as the session was measured: read first, before the hook's own
        # allocations add traces (one can double the traces table's buckets, tens of KiB)
        self.memory = _tracemalloc.get_tracemalloc_memory() if _tracemalloc else 0
        try:
            self.session_end(index)
        except BaseException as e:  # never into the agent
            try:
                leakgate.note("python: attribution failed: %s: %s" % (type(e).__name__, e))
            except BaseException:
                pass
        finally:
            leakgate._ended[0] = index + 1

    def session_end(self, index):
        # armed: a channel leaks, the census kept blocks, --stacks (from the last warm-up on),
        # or LEAKGATE_PY_TRACEMALLOC=N (at the last warm-up's end)
        arming = (not self.never and self.armed_at is None and index >= self.warmup - 1
                  and (self.explicit or self.armed()))
        tracing = tracemalloc.is_tracing() and self.base is not None
        what = set()
        if tracing or self.user_traced:
            what.add("overhead")
        if self.user_traced and self.base is None and index >= self.warmup - 1:
            what.add("base")
        elif tracing and index > self.base:
            what.add("growth")
        if (arming or self.armed_at is not None and (self.until is None or index <= self.until)
                and index >= self.warmup) and "torch" in sys.modules:
            what.add("torch")
        if self.tracked_alive(index):
            what.add("holders")
        look = self.keep_look(index)
        if look:
            what.add(look)
        lines = self.in_child(index, what) if what else []
        if "base" in what:
            self.base = index
        out, escalate = [], False
        for line in lines:
            if line.startswith(OVERHEAD):
                total, memory, traces = (int(x) for x in line[len(OVERHEAD):].split())
                if self.set_overhead is not None and total > 0:
                    self.set_overhead(total)
                    out.append("python: tracemalloc's own memory, %s at this session's "
                               "measurement (get_tracemalloc_memory %s + %d traces x %d B), is "
                               "taken out of je_allocated, je_active, je_resident and rss"
                               % (_fmt(total), _fmt(memory), traces, TRACE_T))
            elif line == ESCALATE:
                escalate = True
            elif line.startswith(_KEEP_COST):  # the look's seconds in the copy, waited for
                self.keep_cost += float(line[len(_KEEP_COST):])
            elif line.startswith(_KEPT):
                self.keep_lines.append(line[len(_KEPT):])
                if line.startswith(_KEPT + "python: who keeps it: ") and " visited in " in line:
                    out.append("python: who keeps it: its 4 looks took %.2f s in the forked "
                               "copies, which the program waits for, of the %.2f s since its "
                               "hook was installed" % (self.keep_cost,
                                                       time.monotonic() - self.started))
            else:
                out.append(line)
        if arming and leakgate._tagged[0] and not self.explicit:
            self.armed_at = index
            self.until = index + self.window if self.window else None
            out.append("python: leakgate armed heap profiling; tracemalloc is not started: this "
                       "program opens tag scopes (leakgate.tag), which would tag its tables "
                       "(LEAKGATE_PY_TRACEMALLOC=N starts it anyway)")
        elif arming:  # after the copy's work: tracemalloc starts with the next session
            first = self.first()
            self.start(index, first)
            out.append("python: %s; tracemalloc traces %s with %d frame%s, its own memory "
                       "taken out of the channels"
                       % ("LEAKGATE_PY_TRACEMALLOC=%d" % first if self.explicit else
                          "leakgate armed heap profiling", _span(index + 1, self.until), first,
                          "s"[first == 1:]))
        elif self.ours and self.until is not None and index >= self.until:
            tracemalloc.stop()  # its tables are freed, nothing is traced
            self.ours = False
            if escalate:  # grown in library code: another look, deep enough for your line
                deeper = min(self.frames, DEPTHS.get(self.depth, self.frames))
                self.start(index, deeper)
                out.append("python: that growth was allocated outside your code; tracemalloc "
                           "traces %s again with %d frames to find your line"
                           % (_span(index + 1, self.until), deeper))
        named = [line for line in out if line.startswith(_NAMING)]
        if named:
            self.carry = named
        if self.keep_lines:  # once a path is found, it and the latest lines that name a line or
            # a shape again at each session end: the verdict's printout shows the latest notes
            out += [line for line in self.carry + self.keep_lines if line not in out]
        for line in out:
            leakgate.note(line)

    def keep_look(self, index):
        """Who keeps it (_keep.py): its three looks from the session end that found leakgate
        armed (its base, then the objects born in the next session, then the walk)."""
        if self.keep_off:
            return None
        if self.keep_at is None:
            if index >= self.warmup - 1 and self.armed():
                self.keep_at = index
                return "keep-base"
            return None
        return {1: "keep-born1", 2: "keep-born2", 3: "keep-walk"}.get(index - self.keep_at)

    def tracked_alive(self, index):
        for fin, kind, name, born in list(leakgate._tracked.values()):
            if born == index and fin is not None and fin.alive:
                return True
        return False

    def in_child(self, index, what):
        """Runs the session end's work in a forked copy of the process and returns its lines.
        The copy sees the same heap and objects; what the work allocates (every trace, their
        grouping, the referrer walk: tens of MB on a large program) never touches the measured
        process, whose only cost is the fork and the lines read back."""
        others = _other_threads() if "keep-walk" in what else None
        r, w = os.pipe()
        _child.copying[0] = True  # no tracer of a child in this copy (--stacks: _child.py)
        try:
            pid = os.fork()
        finally:
            _child.copying[0] = False
        if pid == 0:  # the copy: the agent is inert here (its fork handler); never returns
            code = 1
            try:
                self.others = others
                _child.no_dumps()
                _not_cmds()
                os.close(r)
                data = "\n".join(self.work(index, what)).encode("utf-8", "replace")
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
        return b"".join(chunks).decode("utf-8", "replace").splitlines() if index >= 0 else []

    def work(self, index, what):
        """The forked copy's work."""
        out = []
        if tracemalloc.is_tracing() and ("overhead" in what or "base" in what
                                         or "growth" in what or "rehearsal" in what):
            traces = _tracemalloc._get_traces()
            self.limit = tracemalloc.get_traceback_limit()
            tracemalloc.stop()  # the copy's own work untraced: tracing made it 20x slower
            groups = self.group(traces)
            del traces
            # the program's traces: not the hook's (after the measurement) nor the copy's
            n = sum(count for _, count in groups.values())
            out.append("%s%d %d %d" % (OVERHEAD, self.memory + TRACE_T * n, self.memory, n))
            if "base" in what or "rehearsal" in what:
                with open(self.base_path + (".rehearsal" if index == -2 else ""), "wb") as f:
                    pickle.dump(groups, f, pickle.HIGHEST_PROTOCOL)
            if "growth" in what:
                out += self.describe(groups, index)
            del groups
        if "torch" in what:
            from . import _torch
            out += _torch.describe(self, index)
        if "holders" in what:
            out += self.holders(index)
        look = next((w for w in what if w.startswith("keep-")), None)
        if look:
            from . import _keep
            began = time.monotonic()
            if look == "keep-base":
                _keep.base(self.dir)
            elif look.startswith("keep-born"):
                _keep.born(self.dir, int(look[-1]))
            else:
                walked = _keep.walk(self, index)
            out.append("%s%.3f" % (_KEEP_COST, time.monotonic() - began))
            if look == "keep-walk":  # after the cost: the walk's line says the looks' sum
                out += [_KEPT + line for line in walked]
        if "rehearsal" in what:
            self.holders(-1)
            out = []
        return out

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

    def group(self, traces):
        """{traceback (most recent frame first): [bytes, blocks]} of the traces, without the
        hook's own and the copy's (a frame in this file, _torch.py or tracemalloc)."""
        by_id = {}
        for _domain, size, tb, _total in traces:  # one tuple per distinct traceback
            e = by_id.get(id(tb))
            if e is None:
                by_id[id(tb)] = [size, 1, tb]
            else:
                e[0] += size
                e[1] += 1
        own = self.own_files
        out = {}
        for size, count, tb in by_id.values():
            if any(f[0] in own for f in tb):  # the hook's, and the copy's own after the fork
                continue
            e = out.get(tb)
            if e is None:
                out[tb] = [size, count]
            else:
                e[0] += size
                e[1] += count
        return out

    def describe(self, now, index):
        if self.user_traced and os.path.exists(self.base_path):
            with open(self.base_path, "rb") as f:
                base = pickle.load(f)  # the program's own tracemalloc: its last warm-up
            for tb, (size, count) in base.items():
                e = now.get(tb)
                if e is None:
                    now[tb] = [-size, -count]
                else:
                    e[0] -= size
                    e[1] -= count
        sessions = max(1, index - self.base)
        groups = {}
        total = 0
        for tb, (size, count) in now.items():
            total += size
            if size <= 0:
                continue
            inner = tb[0]
            user = next((f for f in tb if self.is_user(f[0])), inner)
            g = groups.get(user)
            if g is None:
                g = groups[user] = [0, 0, inner, 0]
            g[0] += size
            g[1] += count
            if size > g[3]:
                g[2], g[3] = inner, size
        grown = sum(g[0] for g in groups.values())
        mine = sum(g[0] for (f, _), g in groups.items() if self.is_user(f))
        top = [kv for kv in sorted(groups.items(), key=lambda kv: -kv[1][0])
               if kv[1][0] >= max(1024 * sessions, grown / 100)][: self.top]
        names = _FunctionNames()
        out = ["python: heap %s%s/session over %s (tracemalloc, %d frame%s)"
               % ("+" if total >= 0 else "", _fmt(total / sessions),
                  "session %d" % index if sessions == 1 else "sessions %d-%d" % (
                      self.base + 1, index), self.limit, "s"[self.limit == 1:])]
        for (fname, line), (size, count, inner, _) in top:
            where = "%s:%d in %s" % (_short(fname), line, names.at(fname, line))
            if (inner[0], inner[1]) != (fname, line):
                where += " (allocated at %s:%d in %s)" % (
                    _short(inner[0]), inner[1], names.at(inner[0], inner[1]))
            out.append("python: +%s/session (%.0f blocks) at %s"
                       % (_fmt(size / sessions), count / sessions, where))
        if self.ours and self.limit < self.frames and grown > 0 and mine < 0.9 * grown:
            out.append(ESCALATE)
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


from ._holders import (_OWN_DIR, _FunctionNames, _holder, _holder_path, _holder_text,  # noqa
                       _join, _short, _source, _store_lines, _stores)
