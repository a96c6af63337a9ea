"""A plain Python program that knows nothing of leakgate (issues 34 and 41): a sweep that keeps
every finished run's trainer in a module-level list. No command change is needed for leakgate to
name that list: exec loads the Python binding into a Python CMD (docs/exec.md, "Python: no
command change"), so once a channel leaks the verdict's printout says who keeps the trainers:

    leakgate exec --session-marker '^run [0-9]+ done' -- python3 sweep.py [fixed] [RUNS]

`fixed` keeps each run's loss (a float) instead: nothing is kept, nothing is named.
tests/bindings/python/test_plain_python.py runs both, and with the binding turned off.
"""
import sys

WEIGHTS = 4096  # floats a trainer holds: 4096 x 24 B plus the list, about 130 KiB a run
FINISHED = []


class Trainer:
    def __init__(self, run):
        self.weights = [float(run + i) for i in range(WEIGHTS)]
        self.loss = sum(self.weights) / WEIGHTS


def main(args):
    fixed = "fixed" in args
    runs = next((int(a) for a in args if a.isdigit()), 12)
    for run in range(runs):
        trainer = Trainer(run)
        FINISHED.append(trainer.loss if fixed else trainer)
        print("run %d done" % run, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
