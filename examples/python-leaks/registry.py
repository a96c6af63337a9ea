"""Who keeps it (issue 41), in plain Python: a sweep whose every run builds a Trainer holding a
model's weights, and something that keeps each finished trainer.

- `registry`: a module-level list of every run's trainer (`RUNS.append(trainer)`), the shape
  of issue 41's Lightning sweep. `fixed` keeps the run's loss (a float) instead.
- `classattr`: a class attribute that caches every trainer by run (`Cache.runs[run] =
  trainer`). `fixed` caches the loss.
- `capi`: a reference taken from C and never given back (`Py_IncRef` through ctypes, as an
  extension that forgets its `Py_DECREF`): nothing the garbage collector sees keeps the trainer.
  `fixed` gives it back (`Py_DecRef`).

Sessions are runs: printed ("run N done") for marker mode, or each inside `leakgate.session()`
with `api`:

    leakgate exec --session-marker '^run [0-9]+ done' -- \\
        python3 -m leakgate registry.py registry|classattr|capi [fixed] [RUNS]
    leakgate exec -- python3 registry.py registry|classattr|capi api [fixed] [RUNS]

tests/bindings/python/test_keep.py runs both and their fixed twins, and imports this file for
the pytest plugin (run_session).
"""
import ctypes
import sys

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


def run_session(run, shape="registry", fixed=False):
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
