"""The forward-hook leak of hf_forward_hook.py as pytest tests judged by leakgate's plugin: each
test's body is one epoch of a tiny config-built BERT (no download) that logs pooled features
through a forward hook; the buggy test never removes its hook, the fixed one does. Run:

    pytest examples/realworld/test_hf_hooks.py     # with the leakgate package installed

"1 failed, 1 passed": the kept hooks (and the features each still appends) fail the first."""
import gc

import pytest

torch = pytest.importorskip("torch", reason="SKIP: torch is not installed")
transformers = pytest.importorskip("transformers", reason="SKIP: transformers is not installed")

transformers.logging.set_verbosity_error()
torch.manual_seed(0)
CFG = transformers.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=128,
                              max_position_embeddings=64, num_labels=2)
MODEL = transformers.BertForSequenceClassification(CFG)
OPT = torch.optim.AdamW(MODEL.parameters(), lr=1e-3)
IDS = torch.randint(0, CFG.vocab_size, (64, 32))
LABELS = (IDS[:, 0] % 2).long()


def epoch(remove):
    """One epoch with a feature-logging hook; remove: take the hook off at its end."""
    feats = []
    handle = MODEL.bert.pooler.register_forward_hook(lambda m, i, o: feats.append(o.detach()))
    for b in range(0, len(IDS), 32):
        out = MODEL(input_ids=IDS[b:b + 32], labels=LABELS[b:b + 32])
        OPT.zero_grad()
        out.loss.backward()
        OPT.step()
    if remove:
        handle.remove()
    del feats, handle, out
    gc.collect()  # cyclic garbage is not a leak: freed before the session is measured


epoch(True)  # PyTorch's and the optimizer's one-time state, before any session


@pytest.mark.leakgate(sessions=5)
def test_epoch_keeps_its_hook():
    epoch(False)


@pytest.mark.leakgate(sessions=5)
def test_epoch_removes_its_hook():
    epoch(True)
