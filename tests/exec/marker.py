"""marker.py — a Python trainer that knows nothing of leakgate: a line per epoch, and with
`leak` 256 KiB kept per epoch. leakgate exec --session-marker finds its sessions.

    python3 marker.py EPOCHS [leak]
"""
import sys

kept = []
leak = len(sys.argv) > 2 and sys.argv[2] == "leak"
for epoch in range(int(sys.argv[1])):
    junk = [bytearray(1000) for _ in range(200)]  # freed at once: the sawtooth
    del junk
    if leak:
        kept.append(bytearray(256 * 1024))
    print(f"epoch {epoch} done")
