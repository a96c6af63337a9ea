"""A small Temporal Fusion Transformer-like forecaster in PyTorch (CPU), trained session after
session in one process, with the seed's leak in Python terms: the trainer takes its own strong
reference to the model's parameter map (its "VarMap") and its optimizer state, and registers
itself in a long-lived registry that nobody cleans, so every session's parameters and AdamW
moments outlive it.

    python train.py                       # the bug: every session's VarMap and Adam state stay
    python train.py --fixed               # the trainer unregisters when it closes: nothing stays
    python train.py --params-mb 815       # the seed's size (an 815 MB static embedding table)

Sessions: with the binding installed each one is ``with leakgate.session()`` (judged by
``leakgate exec -- python train.py``); every session also prints ``session N done``, so
``leakgate exec --session-marker '^session [0-9]+ done' -- python -m leakgate train.py --no-api``
gates it with no leakgate code at all. Outside exec everything runs unchanged.
"""

import argparse
import contextlib
import gc
import math
import sys

import torch
from torch import nn

try:
    import leakgate
except ImportError:  # the program runs without the binding
    leakgate = None


class VarMap(dict):
    """The model's parameters by name: the map that the model owns (and the trainer should only
    borrow). A dict subclass, so it can be weakly referenced (and tracked)."""


class GRN(nn.Module):
    """Gated residual network (TFT's building block)."""

    def __init__(self, d_in, d, d_out):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, d), nn.Linear(d, d)
        self.gate = nn.Linear(d, 2 * d_out)
        self.skip = nn.Linear(d_in, d_out) if d_in != d_out else nn.Identity()
        self.norm = nn.LayerNorm(d_out)

    def forward(self, x):
        h = self.fc2(nn.functional.elu(self.fc1(x)))
        return self.norm(self.skip(x) + nn.functional.glu(self.gate(h), dim=-1))


class TemporalFusionTransformer(nn.Module):
    """Variable selection (GRN), an LSTM encoder, interpretable multi-head attention, a gated
    output, and a static-covariate embedding whose size --params-mb sets."""

    def __init__(self, n_features, hidden, heads, n_series, horizon):
        super().__init__()
        self.static = nn.Embedding(n_series, hidden)
        self.select = GRN(n_features, hidden, hidden)
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.post = GRN(hidden, hidden, hidden)
        self.head = nn.Linear(hidden, horizon)
        self.varmap = VarMap(self.named_parameters())

    def get_varmap(self):
        return self.varmap

    def forward(self, x, series):
        h = self.select(x) + self.static(series)[:, None, :]
        h, _ = self.encoder(h)
        a, _ = self.attn(h, h, h, need_weights=False)
        return self.head(self.post(h + a)[:, -1])


TAGS = True
_TRAINERS = {}  # run id -> trainer: the dashboard's registry of live runs (lives for the process)


class TFTTrainer:
    def __init__(self, model, run_id, lr, fixed):
        self.run_id, self.fixed, self.losses = run_id, fixed, []
        self.varmap = model.get_varmap()  # the trainer's own reference to the parameters
        self.optimizer = torch.optim.AdamW(self.varmap.values(), lr=lr)
        _TRAINERS[run_id] = self  # registered for the dashboard

    def train(self, model, batches):
        for x, series, y in batches:
            self.optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(model(x, series), y)
            loss.backward()
            self.optimizer.step()
            self.losses.append(loss.item())

    @torch.no_grad()
    def validate(self, model, batches):
        return sum(nn.functional.mse_loss(model(x, s), y).item() for x, s, y in batches) / len(
            batches)

    def close(self):
        if self.fixed:  # the fix: the registry forgets the run when it ends
            del _TRAINERS[self.run_id]


def make_batches(n, batch, seq, n_features, horizon, n_series, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        t = torch.rand(batch, 1, generator=g) * 6.28 + torch.arange(seq + horizon) * 0.3
        wave = torch.sin(t) + 0.1 * torch.randn(t.shape, generator=g)
        x = wave[:, :seq, None].expand(batch, seq, n_features).contiguous()
        series = torch.randint(0, n_series, (batch,), generator=g)
        out.append((x, series, wave[:, seq:].contiguous()))
    return out


def scope(kind, *a):
    if leakgate is None or (kind == "tag" and not TAGS):
        return contextlib.nullcontext()
    return leakgate.session() if kind == "session" else leakgate.tag(*a)


def run_session(i, args, data, val):
    with scope("tag", "varmap"):  # the parameters' storage is tagged: exact, by name
        model = TemporalFusionTransformer(args.features, args.hidden, 4, args.n_series,
                                          args.horizon)
    if leakgate is not None:
        leakgate.track(model.get_varmap(), "varmap", "tft.varmap", holder=model)
    trainer = TFTTrainer(model, "run-%d" % i, 1e-3, args.fixed)
    trainer.train(model, data)
    loss = trainer.validate(model, val)
    trainer.close()
    del trainer, model
    gc.collect()
    return loss


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixed", action="store_true", help="the trainer unregisters when it closes")
    p.add_argument("--sessions", type=int, default=6)
    p.add_argument("--steps", type=int, default=8, help="training batches per session")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--params-mb", type=float, default=0.5,
                   help="size of the static embedding table, in MB (the seed's: 815)")
    p.add_argument("--no-api", action="store_true",
                   help="do not use the binding (sessions from the printed markers only)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-tags", action="store_true", help="no tag scope around the model's build")
    args = p.parse_args(argv)
    global leakgate, TAGS
    TAGS = not args.no_tags
    if args.no_api:
        leakgate = None
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    args.features, args.horizon = 4, 6
    args.n_series = max(1, int(args.params_mb * 1e6 / (4 * args.hidden)))
    data = make_batches(args.steps, 32, 24, args.features, args.horizon, 16, 1)
    val = make_batches(2, 32, 24, args.features, args.horizon, 16, 2)
    # PyTorch initialises some of its own state on the first model it builds (10 KiB here);
    # outside every session and tag scope, so that no session is charged for it.
    TemporalFusionTransformer(args.features, args.hidden, 4, 1, args.horizon)
    for i in range(args.sessions):
        with scope("session"):
            loss = run_session(i, args, data, val)
        print("session %d done: val loss %.4f, %d run(s) registered" % (i, loss, len(_TRAINERS)))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
