"""A training loop that memoizes each sample's features and never evicts them: about 256 KiB of
Python objects (lists of floats, keyed by (epoch, sample)) kept every epoch. `fixed` clears the
cache at each epoch's end; `json` parses the features from text, so the kept lists are allocated
in the standard library (json's decoder), not in this file. Sessions are epochs ("epoch N
done"); the program knows nothing of leakgate, so it runs in marker mode:

    leakgate exec --session-marker '^epoch [0-9]+ done' -- python3 -m leakgate memo.py \
        [fixed] [json] [EPOCHS]
"""
import json
import sys

FIXED = "fixed" in sys.argv[1:]
JSON = "json" in sys.argv[1:]
EPOCHS = next((int(a) for a in sys.argv[1:] if a.isdigit()), 24)
CACHE = {}


def features(epoch, i):
    if JSON:
        return json.loads("[%s]" % ", ".join("%d.5" % (epoch * 100000 + i * 8 + k)
                                               for k in range(8)))
    return [float(epoch * 100000 + i * 8 + k) for k in range(8)]


def train_session(epoch):
    total = 0.0
    for i in range(700):
        key = (epoch, i)
        if key not in CACHE:
            CACHE[key] = features(epoch, i)  # memoized, never evicted
        row = CACHE[key]
        for _ in range(40):  # the epoch's work: temporaries that die with it
            scaled = [x * 0.5 for x in row]
            total += sum(scaled) + len(str(scaled[0]))
    return total


for epoch in range(EPOCHS):
    loss = train_session(epoch)
    if FIXED:
        CACHE.clear()
    print("epoch %d done %.1f" % (epoch, loss), flush=True)
