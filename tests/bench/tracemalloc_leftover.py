"""What CPython's tracemalloc holds in the C heap, against what it says it holds
(docs/realworld.md, finding 10). jemalloc's stats.allocated is read around one workload of
distinct call depths: untraced, and traced with 1, 4 and 16 frames, then again after
tracemalloc.stop(). Run it with jemalloc preloaded (its mallctl is what is read):

    for f in 0 1 4 16; do
        LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 python3 tests/bench/tracemalloc_leftover.py $f
    done

Each line: the bytes the traced workload added to stats.allocated, what
tracemalloc.get_tracemalloc_memory() said at that point, and what stays after stop()."""
import ctypes
import gc
import random
import sys
import tracemalloc

_lib = ctypes.CDLL(None)


def allocated():
    """jemalloc's stats.allocated after a tcache flush and an epoch refresh."""
    epoch, size = ctypes.c_uint64(1), ctypes.c_size_t(8)
    _lib.mallctl(b"thread.tcache.flush", None, None, None, 0)
    _lib.mallctl(b"epoch", None, None, ctypes.byref(epoch), size)
    value, length = ctypes.c_size_t(0), ctypes.c_size_t(8)
    if _lib.mallctl(b"stats.allocated", ctypes.byref(value), ctypes.byref(length), None, 0):
        sys.exit("no jemalloc mallctl here: preload libjemalloc (see the top of this file)")
    return value.value


def nested(depth, n):
    """n strings made `depth` calls down: a distinct traceback per depth."""
    if depth:
        return nested(depth - 1, n)
    return [str(random.random()) * 40 for _ in range(n)]


def workload():
    kept = [nested(depth, 20) for depth in range(40)]
    del kept


def main():
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    for _ in range(3):  # the interpreter's one-time costs first
        workload()
    gc.collect()
    before = allocated()
    if frames:
        tracemalloc.start(frames)
    workload()
    said = tracemalloc.get_tracemalloc_memory() if frames else 0
    during = allocated() - before
    if frames:
        tracemalloc.stop()
    gc.collect()
    after = allocated() - before
    print("frames %2d: the traced workload added %6d B; get_tracemalloc_memory said %6d B; "
          "after stop() %6d B stay (Python %s)" % (frames, during, said, after,
                                                   sys.version.split()[0]))


if __name__ == "__main__":
    main()
