"""pymalloc_keep.py — what each channel sees of small Python objects (bindings/python/README.md,
"pymalloc and the channels"): each epoch keeps a list of 1,000 small tuples (8 KB of list
storage from malloc, the tuples and their floats from pymalloc unless PYTHONMALLOC=malloc) and
prints a line per epoch, a session marker for leakgate exec; `clean` drops the list instead.

    leakgate exec --no-reports --session-marker '^epoch [0-9]+ done' -- \
        python3 tests/bench/pymalloc_keep.py 9 [clean]
    PYTHONMALLOC=malloc leakgate exec ... (the same)
"""
import sys

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
clean = len(sys.argv) > 2 and sys.argv[2] == "clean"
kept = []
for epoch in range(epochs):
    batch = [(epoch, i, float(i)) for i in range(1000)]
    if not clean:
        kept.append(batch)
    del batch
    print(f"epoch {epoch} done", flush=True)
