"""A DataLoader-style leak that lives in the worker processes: a Dataset whose __getitem__ caches
what it makes, with num_workers=2 and persistent workers, so each forked worker keeps its half of
every epoch's items (16 items of 128 KiB an epoch) while the main process keeps nothing. `clean`
is the fixed twin (nothing cached). Sessions are epochs, printed ("epoch N done") for marker mode:

    leakgate exec --session-marker '^epoch [0-9]+ done' -- \\
        python3 -m leakgate worker_cache.py grow|clean [EPOCHS]

The loader is built at import and runs one epoch there (starting its persistent workers), so a
test can import this file and run `epoch()` as its body: ci/peers does, for the pytest plugins.
tests/bindings/python/test_torch_workers.py runs the same shape inline.
"""
import os
import sys

from torch.utils.data import DataLoader, Dataset

KEEP = (sys.argv[1:2] == ["grow"]) if __name__ == "__main__" else os.environ.get(
    "WORKER_CACHE") == "grow"
ITEMS, ITEM_BYTES = 16, 128 * 1024
cache = {}  # in each worker: what its items keep when KEEP


class Items(Dataset):
    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        buf = bytes([i % 251]) * ITEM_BYTES  # written: resident
        if KEEP:
            cache[len(cache)] = buf  # the leak: a per-worker cache that is never bounded
        return len(buf)


def total(batch):  # plain ints back to the main process: no tensor in shared memory
    return sum(batch)


loader = DataLoader(Items(), batch_size=4, num_workers=2, persistent_workers=True,
                    collate_fn=total)


def epoch():
    return sum(loader)


epoch()  # starts the persistent workers: a one-time cost, paid at import

if __name__ == "__main__":
    epochs = next((int(a) for a in sys.argv[2:] if a.isdigit()), 12)
    for e in range(epochs):
        print("epoch %d done %d" % (e, epoch()), flush=True)
