#!/usr/bin/python3
"""tft_torch.py — the same TFT as leakgate's (model/tft/) in PyTorch, for a speed comparison only.

A benchmark tool, not a dependency of the build or the tests: it needs a PyTorch (Debian's
python3-torch, run with /usr/bin/python3, or a PyTorch 2.x from PyPI in a virtual environment;
bench_train --torch runs both). It builds the preset's model with leakgate's names and shapes
(model/tft/tft_config.c's presets; the parameter count is printed and checked against the one
tests/reference/test_tft.c pins for leakgate's VarMap), feeds random batches of
the preset's shape, and times full training steps (forward, pinball loss, backward, global-norm
clipping, Adam) with nn.LSTM (fused; cuDNN's on a GPU).

The variable selection networks keep a real variable's embedding factored as leakgate does
(model/tft/tft_blocks.c, linear_concat): ξ = x·wᵀ + b is rank one plus a constant, so a first
layer computes W ξ as x ⊗ (W w) + W b, and the flat GRN's input concatenation is never built.
`--embeddings plain` computes them the textbook way (the same function, more work).
`--compile` runs the model's forward through torch.compile (PyTorch 2.x; the step's backward is
compiled with it), warming up until the compiled graph is in use.

    /usr/bin/python3 tests/bench/tft_torch.py --preset electricity --steps 10 --threads 2
    python3 tests/bench/tft_torch.py --device cuda --preset foxhunt-815 --batch 4

On a GPU each timed step ends with torch.cuda.synchronize(), so it counts the device's work,
not only its launch. The last line is "RESULT torch preset=P device=D batch=B ms_per_step=X"
for ci/gpu-check's summary.
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    # name: (H, heads, L, T_enc, T_dec, batch, static, observed, known, params)
    "tiny": (16, 4, 1, 8, 4, 8, [("series", 10), ("scale", 0)], ["target", "obs_x"],
             [("dow", 7), ("time", 0)], 27211),
    "electricity": (160, 4, 1, 168, 24, 64, [("id", 370)], ["power_usage"],
                    [("hour", 0), ("day_of_week", 0), ("hours_from_start", 0)], 2453798),
    "foxhunt-815": (1024, 16, 1, 30, 7, 4,
                    [("item", 3600), ("store", 54), ("city", 22), ("state", 16), ("type", 5),
                     ("cluster", 17), ("family", 33), ("class", 337), ("perishable", 0)],
                    ["unit_sales", "transactions", "oil", "log_sales"],
                    [("onpromotion", 2), ("day_of_week", 7), ("day_of_month", 31), ("month", 12),
                     ("national_holiday", 2), ("local_holiday", 2), ("days_from_start", 0),
                     ("oil_known", 0)], 213659796),
}
MAX_NORM = {"tiny": 1.0, "electricity": 0.01, "foxhunt-815": 1.0}  # clip norms of model/tft/tft_config.c's presets


class GLU(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, 2 * d_out)

    def forward(self, x):
        a, g = self.fc(x).chunk(2, dim=-1)
        return a * torch.sigmoid(g)


class GateAddNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.glu = GLU(d, d)
        self.norm = nn.LayerNorm(d, eps=1e-3)

    def forward(self, x, skip):
        return self.norm(skip + self.glu(x))


class GRN(nn.Module):
    def __init__(self, d_in, d_h, d_out, d_c=0, dropout=0.1):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_h)
        self.ctx = nn.Linear(d_c, d_h, bias=False) if d_c else None
        self.fc2 = nn.Linear(d_h, d_h)
        self.glu = GLU(d_h, d_out)
        self.skip = nn.Linear(d_in, d_out) if d_in != d_out else None
        self.norm = nn.LayerNorm(d_out, eps=1e-3)
        self.drop = nn.Dropout(dropout)

    def forward(self, a, c=None):
        return self.tail(self.fc1(a), self.skip(a) if self.skip is not None else a, c)

    def tail(self, h, skip, c=None):
        """After the first layer: h = fc1(a), skip = skip(a) (or a)."""
        if c is not None and self.ctx is not None:
            hc = self.ctx(c)
            if h.dim() == 3:
                hc = hc.unsqueeze(1)
            h = h + hc
        h = self.fc2(F.elu(h))
        return self.norm(skip + self.glu(self.drop(h)))


def linear_concat(lin, xs, fs, H):
    """lin(concat_j xs[j]) without the concatenation; a factored input fs[j] = (x [..., 1], w [H, 1],
    b [H]) (ξ_j = x·wᵀ + b) contributes x ⊗ (W_j w) + W_j b instead of a product over its rows."""
    acc, cst, X, U = None, lin.bias, [], []
    for j, (x, f) in enumerate(zip(xs, fs)):
        Wj = lin.weight if len(xs) == 1 else lin.weight[:, j * H:(j + 1) * H]  # [out, H]
        if f is not None:
            fx, fw, fb = f
            X.append(fx)
            U.append((Wj @ fw).t())  # [1, out]
            cst = cst + Wj @ fb
        else:
            term = F.linear(x, Wj)
            acc = term if acc is None else acc + term
    if X:
        term = (X[0] if len(X) == 1 else torch.cat(X, -1)) @ (U[0] if len(U) == 1 else torch.cat(U, 0))
        acc = term if acc is None else acc + term
    return acc + cst


class VSN(nn.Module):
    def __init__(self, n, H, context):
        super().__init__()
        self.n, self.H = n, H
        self.var_grn = nn.ModuleList([GRN(H, H, H) for _ in range(n)])
        self.flat_grn = GRN(n * H, H, n, H if context else 0) if n > 1 else None

    def forward(self, xs, c=None, fs=None):
        """xs: the embedded inputs; fs: their factors (None for a categorical) or None (plain)."""
        if fs is None:
            proc = [g(x) for g, x in zip(self.var_grn, xs)]
        else:  # d_in = d_out: a var_grn's skip is ξ itself
            proc = [g.tail(linear_concat(g.fc1, [x], [f], self.H), x) if f is not None else g(x)
                    for g, x, f in zip(self.var_grn, xs, fs)]
        proc = torch.stack(proc, dim=-2)
        if self.n == 1:
            return proc.squeeze(-2)
        g = self.flat_grn
        if fs is None:
            gate = g(torch.cat(xs, dim=-1), c)
        else:
            gate = g.tail(linear_concat(g.fc1, xs, fs, self.H), linear_concat(g.skip, xs, fs, self.H), c)
        w = torch.softmax(gate, dim=-1)
        return (proc * w.unsqueeze(-1)).sum(-2)


class TFT(nn.Module):
    def __init__(self, H, heads, L, T_enc, T_dec, static, observed, known, Q=3, factored=True):
        super().__init__()
        self.H, self.heads, self.T_enc, self.T_dec = H, heads, T_enc, T_dec
        self.factored = factored
        self.static, self.observed, self.known = static, observed, known
        # keyed "v_<name>": a variable named like an nn.Module attribute (foxhunt-815's static
        # "type") is refused as a ModuleDict key ("attribute 'type' already exists")
        self.emb = nn.ModuleDict()
        for name, card in static + [(o, 0) for o in observed] + known:
            self.emb["v_" + name] = nn.Embedding(card, H) if card else nn.Linear(1, H)
        self.static_vsn = VSN(len(static), H, False)
        self.enc_vsn = VSN(len(observed) + len(known), H, True)
        self.dec_vsn = VSN(len(known), H, True)
        self.static_enc = nn.ModuleList([GRN(H, H, H) for _ in range(4)])
        self.lstm_enc = nn.LSTM(H, H, L, batch_first=True)
        self.lstm_dec = nn.LSTM(H, H, L, batch_first=True)
        self.post_lstm = GateAddNorm(H)
        self.enrich = GRN(H, H, H, H)
        da = H // heads
        self.q = nn.Linear(H, H, bias=False)
        self.k = nn.Linear(H, H, bias=False)
        self.v = nn.Linear(H, da, bias=False)
        self.o = nn.Linear(da, H, bias=False)
        self.post_attn = GateAddNorm(H)
        self.pos_ff = GRN(H, H, H)
        self.pre_out = GateAddNorm(H)
        self.out = nn.Linear(H, Q)
        T = T_enc + T_dec
        mask = torch.zeros(T_dec, T)
        for i in range(T_dec):
            mask[i, T_enc + i + 1:] = -math.inf
        self.register_buffer("mask", mask)

    def embed(self, name, x):
        """(ξ, its factors (x [..., 1], w, b) for a real variable, None for a categorical)."""
        e = self.emb["v_" + name]
        if isinstance(e, nn.Embedding):
            return e(x), None
        x1 = x.unsqueeze(-1)
        return e(x1), (x1, e.weight, e.bias)

    def forward(self, inp):
        Te, Td, H = self.T_enc, self.T_dec, self.H

        def steps(e, a, b):  # an embedding and its factors over steps [a, b)
            return e[0][:, a:b], (e[1][0][:, a:b], e[1][1], e[1][2]) if e[1] is not None else None

        def vsn(v, es, c=None):
            return v([e[0] for e in es], c, [e[1] for e in es] if self.factored else None)

        zeta = vsn(self.static_vsn, [self.embed(n, inp[n]) for n, _ in self.static])
        c_s, c_e, c_c, c_h = [g(zeta) for g in self.static_enc]
        full = {n: self.embed(n, inp[n]) for n, _ in self.known}
        enc = [self.embed(o, inp[o]) for o in self.observed] + [steps(full[n], 0, Te) for n, _ in self.known]
        dec = [steps(full[n], Te, Te + Td) for n, _ in self.known]
        xi_enc, xi_dec = vsn(self.enc_vsn, enc, c_s), vsn(self.dec_vsn, dec, c_s)
        L = self.lstm_enc.num_layers
        h0 = c_h.unsqueeze(0).expand(L, -1, -1).contiguous()
        c0 = c_c.unsqueeze(0).expand(L, -1, -1).contiguous()
        phi_enc, state = self.lstm_enc(xi_enc, (h0, c0))
        phi_dec, _ = self.lstm_dec(xi_dec, state)
        phi = torch.cat([phi_enc, phi_dec], 1)
        phi_t = self.post_lstm(phi, torch.cat([xi_enc, xi_dec], 1))
        theta = self.enrich(phi_t, c_e)
        theta_dec = theta[:, Te:]
        B, T, nh = theta.shape[0], theta.shape[1], self.heads
        da = H // nh
        q = self.q(theta_dec).view(B, Td, nh, da).transpose(1, 2)
        k = self.k(theta).view(B, T, nh, da).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(da) + self.mask, dim=-1)
        h = (a @ self.v(theta).unsqueeze(1)).mean(1)
        delta = self.post_attn(self.o(h), theta_dec)
        psi = self.pos_ff(delta)
        return self.out(self.pre_out(psi, phi_t[:, Te:]))


def pinball(yhat, y, q):
    e = y.unsqueeze(-1) - yhat
    return (torch.maximum(q * e, (q - 1) * e)).sum(-1).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="electricity", choices=PRESETS)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=0, help="batch size (default: the preset's)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--embeddings", default="factored", choices=["factored", "plain"],
                    help="real-variable embeddings in the VSNs' first layers (default: factored)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2.x)")
    ap.add_argument("--adam", default="default", choices=["default", "fused"],
                    help="fused: torch.optim.Adam(fused=True) (PyTorch 2.4 and later on the CPU)")
    ap.add_argument("--check", action="store_true",
                    help="compare the factored and the plain forward on one batch and exit "
                         "(non-zero when they differ by more than float rounding, or when the "
                         "parameter count is not leakgate's)")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("tft_torch.py: --device cuda, but torch sees no CUDA device")
    dev = torch.device(a.device)
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    H, heads, L, Te, Td, B, static, observed, known, want = PRESETS[a.preset]
    B = a.batch or B
    m = TFT(H, heads, L, Te, Td, static, observed, known, factored=a.embeddings == "factored").to(dev)
    n = sum(p.numel() for p in m.parameters())
    where = torch.cuda.get_device_name(dev) if a.device == "cuda" else f"{a.threads} thread(s)"
    print(f"torch {torch.__version__} on {where}, preset {a.preset}: {n} parameters "
          f"(leakgate's {want}{'' if n == want else ' MISMATCH'}), {a.embeddings} embeddings"
          f"{', torch.compile' if a.compile else ''}{', fused Adam' if a.adam == 'fused' else ''}")
    T = Te + Td
    inp = {}
    for name, card in static:
        inp[name] = torch.randint(card, (B,)) if card else torch.randn(B)
    for o in observed:
        inp[o] = torch.randn(B, Te)
    for name, card in known:
        inp[name] = torch.randint(card, (B, T)) if card else torch.randn(B, T)
    inp = {k: v.to(dev) for k, v in inp.items()}
    y = torch.randn(B, Td).to(dev)
    q = torch.tensor([0.1, 0.5, 0.9], device=dev)
    if a.check:
        m.eval()
        with torch.no_grad():
            m.factored = True
            yf = m(inp)
            m.factored = False
            yp = m(inp)
        err = ((yf - yp).abs().max() / yp.abs().max()).item()
        print(f"factored vs plain forward: largest difference {err:.3g} of the largest output")
        raise SystemExit(0 if err < 1e-4 and n == want else 1)
    fwd = torch.compile(m) if a.compile else m
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, **({"fused": True} if a.adam == "fused" else {}))
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    times, losses = [], []
    for step in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = pinball(fwd(inp), y, q)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), MAX_NORM[a.preset])
        opt.step()
        sync()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
        if step in (0, a.warmup + a.steps - 1):  # outside the timing: .item() waits for the device
            losses.append(loss.item())
    times.sort()
    med = times[len(times) // 2]
    print(f"median {med * 1e3:.1f} ms/step, {B / med:.1f} samples/s over {a.steps} steps (batch {B}), "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    print(f"RESULT torch preset={a.preset} device={a.device} batch={B} ms_per_step={med * 1e3:.3f}")


if __name__ == "__main__":
    main()
