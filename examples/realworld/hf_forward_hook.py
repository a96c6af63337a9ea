"""A tiny BERT (transformers.BertConfig, no download) fine-tuned on synthetic token sequences
with a manual loop, logging the pooled features through a forward hook that each epoch
registers: the leak never removes it, so every earlier epoch's hook still runs and appends to
its own list; the clean twin calls handle.remove(). Sessions are epochs ("epoch N done").

Both forms call gc.collect() before the marker line: without it the clean twin's RSS rose by
12-16 KiB a session and a 1.3 MiB step at session 9 (cyclic garbage of small Python objects
waiting for a generation-2 collection, in pymalloc's arenas, which only rss sees), judged LEAK
in one run and INCONCLUSIVE in the next (docs/realworld.md).

    python hf_forward_hook.py leak|clean [EPOCHS]
"""
import gc
import sys
import time

import torch
from transformers import BertConfig, BertForSequenceClassification
from transformers.utils import logging

MODE = sys.argv[1] if len(sys.argv) > 1 else "leak"
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
assert MODE in ("leak", "clean"), "usage: hf_forward_hook.py leak|clean [EPOCHS]"
logging.set_verbosity_error()

START = time.monotonic()  # the markers say the seconds since (imports excluded)
torch.manual_seed(0)
cfg = BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=128, max_position_embeddings=64, num_labels=2)
model = BertForSequenceClassification(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, cfg.vocab_size, (256, 32))
labels = (ids[:, 0] % 2).long()

for epoch in range(EPOCHS):
    feats = []  # this epoch's pooled features
    handle = model.bert.pooler.register_forward_hook(lambda m, i, o, f=feats: f.append(o.detach()))
    for b in range(0, len(ids), 32):
        out = model(input_ids=ids[b:b + 32], labels=labels[b:b + 32])
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    spread, loss = torch.cat(feats).std().item(), out.loss.item()
    if MODE == "clean":
        handle.remove()
    del feats, handle, out
    gc.collect()  # the epoch's cyclic garbage, freed before the session is measured
    print("epoch %d done loss %.4f spread %.4f %.2f s" % (epoch, loss, spread,
                                                         time.monotonic() - START), flush=True)
