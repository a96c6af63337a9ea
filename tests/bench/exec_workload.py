"""exec_workload.py — an allocation-heavy Python program for bench_exec: JSON round trips of
nested records, a line per epoch (a session marker for leakgate exec). Run with
PYTHONMALLOC=malloc so that every object is a malloc and a free.

    python3 exec_workload.py EPOCHS
"""
import json
import sys

records = [{"id": i, "name": f"row{i}", "tags": [str(i), "x" * (i % 17)], "v": [i * 0.5] * 8}
           for i in range(2000)]
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
    total = 0
    for _ in range(6):
        text = json.dumps(records)
        back = json.loads(text)
        total += sum(len(r["tags"][1]) for r in back)
    print(f"epoch {epoch} done {total}")
