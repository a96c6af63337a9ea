"""PyTorch's two classic shapes of leak, each with its fix, in one small training loop (a
32 -> 64 -> 1 regression, SGD). Sessions are epochs: printed ("epoch N done") for marker mode,
or each inside `leakgate.session()` with `api`:

- `history`: every step's loss is logged as the tensor itself, `history.append(loss)`, where
  `loss.item()` was meant, so each step's autograd graph (its grad_fn and every node reachable
  through next_functions) stays alive with it. `fixed` appends `loss.item()`.
- `hook`: the first layer's activations are recorded by a forward hook that every epoch
  registers and never removes: each earlier epoch's hook still runs on every forward and
  appends to the list its closure keeps. `fixed` removes it as the epoch ends.
- `optimizer`: every epoch fine-tunes a new head with the one Adam optimizer
  (`heads_opt.add_param_group`), which keeps each head's parameters and their moments in its
  `state` after the epoch dropped the head. `fixed` takes the group and its state out again.

    leakgate exec --session-marker '^epoch [0-9]+ done' -- \\
        python3 -m leakgate torch_shapes.py history|hook|optimizer [fixed] [EPOCHS]
    leakgate exec -- python3 torch_shapes.py history|hook|optimizer api [fixed] [EPOCHS]

tests/bindings/python/test_torch_shapes.py runs the first two, and imports this file for the
pytest plugin (history_session, hook_session); tests/bindings/python/test_torch_keep.py names
who keeps the hook's and the optimizer's (issue 41).
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
heads_opt = torch.optim.Adam(model[2].parameters(), lr=1e-3)


def step(b):
    loss = nn.functional.mse_loss(model(x[b:b + 32]), y[b:b + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def history_session(epoch, fixed=False):
    for i in range(60):
        loss = step((i % 8) * 32)
        if fixed:
            history.append(loss.item())
        else:
            history.append(loss)  # the leak: the tensor keeps its graph


def hook_session(epoch, fixed=False):
    acts = []

    def save_activation(module, inputs, output):
        acts.append(output.detach())

    handle = model[0].register_forward_hook(save_activation)
    for i in range(8):
        step(i * 32)
    spread = torch.cat(acts).std().item()
    if fixed:
        handle.remove()  # the leak is the hook left in place
    return spread


def optimizer_session(epoch, fixed=False):
    head = nn.Linear(64, 64)  # 64 x 65 floats, and Adam's two moments of each: 49 KiB
    heads_opt.add_param_group({"params": head.parameters()})
    for i in range(4):
        loss = head(torch.tanh(model[0](x[i * 32:(i + 1) * 32]))).square().mean()
        heads_opt.zero_grad()
        loss.backward()
        heads_opt.step()
    if fixed:  # the leak is the group, and its state, left in the optimizer
        for p in heads_opt.param_groups.pop()["params"]:
            heads_opt.state.pop(p, None)


SESSIONS = {"history": history_session, "hook": hook_session, "optimizer": optimizer_session}
for warm in SESSIONS.values():  # one-time costs: autograd's, the optimizer's first step
    warm(0, fixed=True)
history.clear()

if __name__ == "__main__":
    import sessions

    sessions.run(SESSIONS[sys.argv[1]], "epoch")
