"""Who keeps it (issue 41), in plain Python: a sweep whose every run builds a Trainer holding a
model's weights, and something that keeps each finished trainer.

- `registry`: a module-level list of every run's trainer (`RUNS.append(trainer)`), the shape
  of issue 41's Lightning sweep. `fixed` keeps the run's loss (a float) instead.
- `classattr`: a class attribute that caches every trainer by run (`Cache.runs[run] =
  trainer`). `fixed` caches the loss.
- `capi`: a reference taken from C and never given back (`Py_IncRef` through ctypes, as an
  extension that forgets its `Py_DECREF`): nothing the garbage collector sees keeps the trainer.
  `fixed` gives it back (`Py_DecRef`).
- `thread`: each run is handed to a feeder thread ('feeder', started at the first run), whose
  loop keeps every trainer in a list that is its own local (`cache.append(trainer)`), while the
  main thread runs the sessions. `fixed` keeps the loss.

Sessions are runs: printed ("run N done") for marker mode, or each inside `leakgate.session()`
with `api`:

    leakgate exec --session-marker '^run [0-9]+ done' -- \\
        python3 -m leakgate registry.py registry|classattr|capi|thread [fixed] [RUNS]
    leakgate exec -- python3 registry.py registry|classattr|capi|thread api [fixed] [RUNS]

tests/bindings/python/test_keep.py runs both and their fixed twins, and imports this file for
the pytest plugin (run_session).
"""
import ctypes
import queue
import sys
import threading

WEIGHTS = 4096  # floats a model holds: 4096 x 24 B plus the list, about 130 KiB a run
RUNS = []


class Model:
    def __init__(self, seed):
        self.weights = [float(seed + i) for i in range(WEIGHTS)]


class Trainer:
    def __init__(self, run):
        self.run = run
        self.model = Model(run)
        self.loss = sum(self.model.weights) / WEIGHTS


class Cache:
    runs = {}


def feeder_loop(jobs, done):
    """The `thread` shape's feeder: trains each run it is handed, and keeps each trainer (with
    `fixed`, its loss) in its own local list."""
    cache = []
    while True:
        run, fixed = jobs.get()
        trainer = Trainer(run)
        cache.append(trainer.loss if fixed else trainer)
        done.put(trainer.loss)


FEEDER = {}  # the `thread` shape's queues, made with its thread at the first run


def feed(run, fixed):
    """Hands run to the feeder thread (started at the first run) and waits for its loss."""
    if not FEEDER:
        FEEDER.update(jobs=queue.Queue(), done=queue.Queue())
        threading.Thread(target=feeder_loop, args=(FEEDER["jobs"], FEEDER["done"]),
                         name="feeder", daemon=True).start()
    FEEDER["jobs"].put((run, fixed))
    return FEEDER["done"].get()


def run_session(run, shape="registry", fixed=False):
    if shape == "thread":
        return feed(run, fixed)
    trainer = Trainer(run)
    kept = trainer.loss if fixed else trainer
    if shape == "capi":
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(trainer))
        if fixed:
            ctypes.pythonapi.Py_DecRef(ctypes.py_object(trainer))
    elif shape == "registry":
        RUNS.append(kept)
    else:
        Cache.runs[run] = kept
    return trainer.loss


if __name__ == "__main__":
    import sessions

    shape = sys.argv[1] if len(sys.argv) > 1 else "registry"
    sessions.run(lambda run, fixed: run_session(run, shape, fixed), "run")
