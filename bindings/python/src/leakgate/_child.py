"""Python lines of a growing child process under ``leakgate exec --stacks`` (issue 34, item 4).

A child of CMD (a DataLoader worker, a ``multiprocessing`` worker, a Python program CMD starts)
is judged by its RSS (harness/exec/exec_tree.c); its agent is inert and nothing can ask it for
anything. Under --stacks (LEAKGATE_AGENT_CHILD_PROF names PREFIX, beside the heap profiles) every
Python child traces its own allocations, and exec names a leaking one by the line of its code:
``pid 1234 grew at its Python line (...): +1.00 MiB/session (8 blocks) at loader.py:14 in
Items.__getitem__``.

- **Where it starts.** A forked child: a hook registered with ``os.register_at_fork`` in every
  Python of the tree (sitecustomize, harness/exec/exec_py.c). An image a child exec'd (the
  ``spawn`` start method, ``subprocess.run([sys.executable, ...])``): its sitecustomize, which
  tells it from CMD by LEAKGATE_AGENT_PID. CMD itself never traces here (_attrib.py does).
  LEAKGATE_PY_CHILD=0 turns it all off.
- **Traced only once exec finds it leaking.** A daemon thread reads exec's PREFIX.sessions
  every 0.05 s: exec writes it whole at each session's end, the count of sessions ended and
  ``arm PID...``, the children whose RSS series leak so far (judged as the verdict judges them).
  A child among them starts tracemalloc with LEAKGATE_PY_CHILD_FRAMES (8) frames, so that the
  line of its own code is found below a library's allocation; that moment is its base. A child
  that does not leak is never traced: its memory and its speed are as without --stacks' Python
  lines, but for the thread's reading of a small file (the hard part: tracing's own tables would
  otherwise be growth in a clean child's RSS). tracemalloc costs a traced child 10-20x on
  allocation-heavy code, so it traces LEAKGATE_PY_CHILD_SESSIONS (3) sessions, looks a last
  time and stops.
- **When it looks.** While tracing, as it sees each session's end (within 0.05 s: a child of
  CMD is often idle while CMD waits for exec, and then holds no transient of its work), and
  whenever its resident memory reaches a new high by 256 KiB (a long session). Each look runs
  in a forked copy of the child, as _attrib.py's do: the copy reads the traces, stops tracing,
  groups them and writes the result; the child only forks and waits, its memory untouched.
  The copy turns jemalloc's dumps off (``no_dumps``), says it is leakgate's own ("-PID" in
  LEAKGATE_AGENT_TREE: not a child of CMD, exec_births.c) and removes any heap profile
  jemalloc dumped for it.
- **The file** PREFIX.PID.py, written whole (a temporary file renamed): complete or absent,
  even when the child is killed. ``leakgate-python-lines 1``, then ``span A B FRAMES`` (the
  sessions ended when tracing began and at the look), then up to 4 lines ``BYTES BLOCKS WHERE``:
  the traced blocks still alive grouped by the innermost frame of the child's own code (not the
  standard library, site-packages or leakgate), largest first.
"""
import os
import sys
import sysconfig
import threading
import time
import tracemalloc

try:
    import _tracemalloc
except ImportError:  # not CPython
    _tracemalloc = None

try:
    from . import _holders
except ImportError:  # loaded alone, by sitecustomize in a child image
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "_leakgate_holders", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "_holders.py"))
    _holders = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_holders)

HEADER = "leakgate-python-lines 1"
POLL = 0.05  # seconds between two readings of exec's PREFIX.sessions (and, tracing, of statm)
MARGIN = 256 * 1024  # a new high by this much makes the child look again
TOP = 4  # lines written
WHERE_MAX = 300  # bytes of one line's WHERE

copying = [False]  # set around a fork that makes leakgate's own copy: no tracer starts in it
_installed = [False]
_tracer = [None]
_mallctl = [None]  # jemalloc's (the agent's), found before any copy is forked


def _find_mallctl():
    try:
        import ctypes

        f = ctypes.CDLL(None).mallctl
        f.restype = ctypes.c_int
        _mallctl[0] = (f, ctypes.c_bool(False), ctypes.byref, ctypes.sizeof)
    except (ImportError, OSError, AttributeError):  # no jemalloc: no dumps to turn off
        pass


def no_dumps():
    """In a forked copy (this module's and _attrib.py's), first thing: jemalloc's sampling and
    heap profile dumps off (the agent turned them on at the fork, --stacks). A copy is no process
    of CMD, and a dump in a copy of a threaded process can deadlock in jemalloc (seen once in
    four runs of a DataLoader under --stacks, in a copy of CMD)."""
    m = _mallctl[0]
    if m is not None:
        f, off, ref, size = m
        for name in (b"prof.gdump", b"prof.active"):
            f(name, None, None, ref(off), size(off))


def wanted():
    """Under --stacks, in CPython, unless LEAKGATE_PY or LEAKGATE_PY_CHILD is 0."""
    return (bool(os.environ.get("LEAKGATE_AGENT_CHILD_PROF"))
            and os.environ.get("LEAKGATE_PY", "1") != "0"
            and os.environ.get("LEAKGATE_PY_CHILD", "1") != "0"
            and _tracemalloc is not None and hasattr(os, "register_at_fork"))


def install():
    """In any Python of CMD's tree: each child it forks traces itself; a child traces itself
    from now on (CMD does not)."""
    if _installed[0] or not wanted():
        return
    _installed[0] = True
    _find_mallctl()
    os.register_at_fork(after_in_child=_after_fork)
    if os.environ.get("LEAKGATE_AGENT_PID") != str(os.getpid()):
        _start()


def _after_fork():
    if not copying[0]:
        _start()


def _start():
    """A tracer for this process (a grandchild forked from a traced child gets its own); none
    where the program traces itself (PYTHONTRACEMALLOC, -X tracemalloc): its tracemalloc is
    left alone."""
    if os.environ.get("PYTHONTRACEMALLOC") or "tracemalloc" in getattr(sys, "_xoptions", {}):
        return
    try:
        _tracer[0] = _Tracer()
    except Exception as e:  # the child runs on, without its lines
        sys.stderr.write("leakgate: no Python lines for child pid %d (%s: %s)\n"
                         % (os.getpid(), type(e).__name__, e))


def _int_env(name, default):
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


def _read(path):
    """The bytes of a small file, b"" when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(fd, 64)
    except OSError:
        return b""
    finally:
        os.close(fd)


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _resident():
    v = _read("/proc/self/statm").split()
    return int(v[1]) * _PAGE if len(v) > 1 else 0


def _mark_own(pid):
    """LEAKGATE_AGENT_TREE: pid is leakgate's copy, not a process of CMD (exec_births.c)."""
    tree = os.environ.get("LEAKGATE_AGENT_TREE")
    if tree:
        try:
            fd = os.open(tree, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, b"-%d\n" % pid)
            finally:
                os.close(fd)
        except OSError:
            pass


def _write_whole(path, data):
    """data into path through a temporary file renamed over it: complete or absent."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class _Tracer:
    def __init__(self):
        self.prefix = os.environ["LEAKGATE_AGENT_CHILD_PROF"]
        self.pid = os.getpid()
        self.out = "%s.%d.py" % (self.prefix, self.pid)
        self.frames = max(1, _int_env("LEAKGATE_PY_CHILD_FRAMES", 8))
        if tracemalloc.is_tracing():  # forked from a Python that traces (CMD's attribution):
            tracemalloc.stop()  # its tables are not this child's, and it traces only if it grows
        paths = sysconfig.get_paths()
        self.lib_dirs = tuple(sorted({os.path.realpath(paths[k]) + os.sep
                                      for k in ("stdlib", "platstdlib", "purelib", "platlib")
                                      if paths.get(k)}))
        here = os.path.dirname(os.path.abspath(__file__)) + os.sep
        self.own = (here, os.path.dirname(os.path.abspath(_holders.__file__)) + os.sep,
                    os.path.dirname(os.path.abspath(tracemalloc.__file__)) + os.sep
                    + "tracemalloc.py")
        self.base_at = None  # sessions ended when it began tracing
        self.window = max(1, _int_env("LEAKGATE_PY_CHILD_SESSIONS", 3))
        self.high = 0
        self.thread = threading.Thread(target=self.run, name="leakgate-child-lines",
                                       daemon=True)
        self.thread.start()

    def told(self):
        """exec's PREFIX.sessions: the sessions ended (-1 before the first) and whether this
        child's series leaks so far ("arm PID...")."""
        v = _read(self.prefix + ".sessions").split()
        ended = int(v[0]) if v and v[0].isdigit() else -1
        return ended, len(v) > 1 and v[1] == b"arm" and str(self.pid).encode() in v[2:]

    def run(self):
        seen = -1
        while True:
            time.sleep(POLL)
            if os.getpid() != self.pid:  # a fork's copy of this thread never runs: defensive
                return
            ended, leaking = self.told()
            if self.base_at is None:
                if leaking:  # its base: nothing traced yet
                    tracemalloc.start(self.frames)
                    self.base_at = seen = ended
                    self.high = _resident()
            elif ended != seen or _resident() >= self.high + MARGIN:
                # at a session's end (CMD's children often idle while it waits for exec), or as
                # it grows (a long session)
                self.look(ended)
                self.high = _resident()
                seen = ended
                if ended >= self.base_at + self.window:  # the last look, then no more tracing
                    tracemalloc.stop()
                    return

    def look(self, ended):
        """The copy's work while this process waits."""
        copying[0] = True
        try:
            pid = os.fork()
        finally:
            copying[0] = False
        if pid == 0:
            code = 1
            try:
                no_dumps()
                _mark_own(os.getpid())
                self.in_copy(ended)
                code = 0
            finally:
                os._exit(code)
        _mark_own(pid)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped by the program's own wait()
            pass

    # ---- in the copy ------------------------------------------------------------------------

    def in_copy(self, ended):
        traces = _tracemalloc._get_traces()
        limit = tracemalloc.get_traceback_limit()
        tracemalloc.stop()  # the copy's own work untraced
        try:
            groups = self.group(traces)
            del traces
            _write_whole(self.out, self.lines(groups, ended, limit).encode("ascii", "replace"))
        finally:
            self.drop_dumps()

    def group(self, traces):
        """{traceback: [bytes, blocks]}, without leakgate's own frames."""
        out = {}
        for _domain, size, tb, *_ in traces:
            if any(f[0].startswith(self.own) for f in tb):
                continue
            e = out.get(tb)
            if e is None:
                out[tb] = [size, 1]
            else:
                e[0] += size
                e[1] += 1
        return out

    def is_user(self, filename, cache):
        v = cache.get(filename)
        if v is None:
            real = os.path.realpath(filename)
            v = cache[filename] = not (filename.startswith("<") or real.startswith(self.lib_dirs)
                                       or "/site-packages/" in real or "/dist-packages/" in real)
        return v

    def lines(self, now, ended, limit):
        """The file's text: the growth since tracing began by the innermost frame of user
        code."""
        user = {}
        by_line = {}
        for tb, (size, count) in now.items():
            if size <= 0:
                continue
            key = next((f for f in tb if self.is_user(f[0], user)), tb[0])
            g = by_line.setdefault(key, [0, 0, tb[0], 0])
            g[0] += size
            g[1] += count
            if size > g[3]:
                g[2], g[3] = tb[0], size
        names = _holders._FunctionNames()
        short = self.short
        out = [HEADER, "span %d %d %d" % (self.base_at, ended, limit)]
        for (fname, line), (size, count, inner, _) in sorted(
                by_line.items(), key=lambda kv: -kv[1][0])[:TOP]:
            where = "%s:%d in %s" % (short(fname), line, names.at(fname, line))
            if (inner[0], inner[1]) != (fname, line):
                where += " (allocated at %s:%d in %s)" % (
                    short(inner[0]), inner[1], names.at(inner[0], inner[1]))
            where = "".join(c if " " <= c <= "~" else "?" for c in where)[:WHERE_MAX]
            out.append("%d %d %s" % (size, count, where))
        return "\n".join(out) + "\n"

    @staticmethod
    def short(filename):
        """Relative to the working directory or site-packages, else its base name: a line in
        exec's why, among other children's, as their commands are named."""
        v = _holders._short(filename)
        return os.path.basename(v) if os.path.isabs(v) else v

    def drop_dumps(self):
        """The heap profiles jemalloc dumped for this copy (PREFIX.COPYPID.*): not CMD's."""
        d, name = os.path.split(self.prefix)
        mine = "%s.%d." % (name, os.getpid())
        try:
            for f in os.listdir(d or "."):
                if f.startswith(mine) and f.endswith(".heap"):
                    os.unlink(os.path.join(d, f))
        except OSError:
            pass
