"""A training loop that logs every step's loss as the tensor itself, `history.append(loss)`,
where `loss.item()` was meant: each step's autograd graph (its grad_fn and every node reachable
through next_functions) stays alive with the loss. `fixed` appends `loss.item()`. Sessions are
epochs: printed ("epoch N done") for marker mode, or inside `leakgate.session()` with `api`:

    leakgate exec --session-marker '^epoch [0-9]+ done' -- python3 -m leakgate torch_history.py
    leakgate exec -- python3 torch_history.py api [fixed] [EPOCHS]

tests/bindings/python/test_torch_shapes.py imports it for the pytest plugin (train_session).
"""
import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(256, 32), torch.randn(256, 1)
history = []


def train_session(epoch, fixed=False):
    for step in range(60):
        b = (step % 8) * 32
        loss = nn.functional.mse_loss(model(x[b:b + 32]), y[b:b + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.item() if fixed else loss)
    return history[-1]


train_session(0, fixed=True)  # one-time costs (autograd's and the optimizer's first step)
history.clear()

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
