"""A training loop that records the first layer's activations with a forward hook it registers
every epoch and never removes: each earlier epoch's hook still runs on every forward and appends
to the list its closure keeps. `fixed` removes the hook at the epoch's end (handle.remove()).
Sessions are epochs: printed ("epoch N done") for marker mode, or inside `leakgate.session()`
with `api`:

    leakgate exec --session-marker '^epoch [0-9]+ done' -- python3 -m leakgate torch_hook.py
    leakgate exec -- python3 torch_hook.py api [fixed] [EPOCHS]

tests/bindings/python/test_torch_shapes.py imports it for the pytest plugin (train_session).
"""
import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(256, 32), torch.randn(256, 1)


def train_session(epoch, fixed=False):
    acts = []

    def save_activation(module, inputs, output):
        acts.append(output.detach())

    handle = model[0].register_forward_hook(save_activation)
    for step in range(8):
        b = step * 32
        loss = nn.functional.mse_loss(model(x[b:b + 32]), y[b:b + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
    spread = torch.cat(acts).std().item()
    if fixed:
        handle.remove()
    return spread


train_session(0, fixed=True)  # one-time costs (autograd's and the optimizer's first step)

if __name__ == "__main__":
    args = sys.argv[1:]
    FIXED, API = "fixed" in args, "api" in args
    EPOCHS = next((int(a) for a in args if a.isdigit()), 12)
    if API:
        import leakgate
    for epoch in range(EPOCHS):
        if API:
            with leakgate.session():
                train_session(epoch, FIXED)
        else:
            train_session(epoch, FIXED)
            print("epoch %d done" % epoch, flush=True)
