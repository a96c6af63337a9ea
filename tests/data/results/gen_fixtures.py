#!/usr/bin/env python3
"""gen_fixtures.py — writes the recorded results fixtures of tests/data/results/.

Each fixture is a leakgate results file (schema "leakgate.results/1", docs/results-schema.md)
made by a small simulation of the tiny TFT preset: a session builds the model's VarMap, creates
the optimizer state on its first step, trains K steps (activations and gradients come and go),
validates, saves a checkpoint, optionally quantizes to INT8, then frees everything. The
harness then quiesces and reads every channel. Injected leaks keep what the real fault keeps.
The verdict line is computed here the way DESIGN.md describes (exact channels: zero
tolerance; statistical channels: Theil–Sen slope with a confidence bound against the slope
budget, and a late-vs-early median shift against the floor).

This file is independent of reports/: it writes the documented format by hand, so the loader's
tests check the format as documented, not just a round trip through the C writer.

    python3 tests/data/results/gen_fixtures.py [OUTDIR]   # default: this file's directory
"""
import json
import math
import os
import random
import sys

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3
CHANNELS = ["tagged_host", "tagged_device", "refs", "je_allocated", "je_active", "je_resident",
            "rss", "dev_driver", "dev_process"]
EXACT = {"tagged_host", "tagged_device", "refs"}
MEASURED = "default (measured on clean runs, 2026-11-30)"
BUDGETS = {
    "tagged_host": (0, 0, 0, "exact (zero tolerance)"),
    "tagged_device": (0, 0, 0, "exact (zero tolerance)"),
    "refs": (0, 0, 0, "exact (zero tolerance)"),
    "je_allocated": (64 * KiB, 16 * KiB, 64 * KiB, MEASURED),
    "je_active": (1 * MiB, 64 * KiB, 256 * KiB, MEASURED),
    "je_resident": (2 * MiB, 64 * KiB, 256 * KiB, MEASURED),
    "rss": (4 * MiB, 32 * KiB, 128 * KiB, MEASURED),
    "dev_driver": (2 * MiB, 64 * KiB, 256 * KiB, MEASURED),
    "dev_process": (2 * MiB, 64 * KiB, 256 * KiB, MEASURED),
}

# The tiny preset's VarMap: (tensor, float count). 24 tensors, 816,640 floats = 3.12 MiB.
VARMAP = [
    ("enc_vsn.var_grn.dow.fc1.weight", 16384), ("enc_vsn.var_grn.dow.fc2.weight", 16384),
    ("enc_vsn.flat_grn.fc1.weight", 49152), ("enc_vsn.flat_grn.fc2.weight", 16384),
    ("enc_lstm.w_ih", 65536), ("enc_lstm.w_hh", 65536), ("dec_lstm.w_ih", 65536),
    ("dec_lstm.w_hh", 65536), ("static_enc.grn_cs.fc1.weight", 16384),
    ("static_enc.grn_ce.fc1.weight", 16384), ("static_enc.grn_ch.fc1.weight", 16384),
    ("static_enc.grn_cc.fc1.weight", 16384), ("enrich_grn.fc1.weight", 32768),
    ("enrich_grn.fc2.weight", 16384), ("attn.q.weight", 16384), ("attn.k.weight", 16384),
    ("attn.v.weight", 16384), ("attn.out.weight", 16384), ("pos_wise_grn.fc1.weight", 65536),
    ("pos_wise_grn.fc2.weight", 65536), ("gate_add_norm.glu.weight", 32768),
    ("out_proj.weight", 24576), ("input_embed.cont.weight", 98304), ("enc_lstm.bias", 2048),
]
PARAM_BYTES = 4 * sum(n for _, n in VARMAP)
ACT_BYTES = 6 * MiB + 393216  # activations live during a training step
DATA_BYTES = 262144           # the dataset's tensors, allocated before any session


def stack(*frames):
    return list(frames)


def theil_sen(xs, ys):
    """Slope, its ~95% bounds (Sen 1968, normal approximation of Kendall's S) and intercept."""
    slopes = sorted((ys[j] - ys[i]) / (xs[j] - xs[i])
                    for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[j] != xs[i])
    n, m = len(xs), len(slopes)
    if m == 0:
        return float("nan"), float("nan"), float("nan")
    mid = slopes[m // 2] if m % 2 else 0.5 * (slopes[m // 2 - 1] + slopes[m // 2])
    c = 1.96 * math.sqrt(n * (n - 1) * (2 * n + 5) / 18.0)
    lo = int(max(0, math.floor((m - c) / 2)))
    hi = int(min(m - 1, math.ceil((m + c) / 2)))
    return mid, slopes[lo], slopes[hi]


def median(v):
    v = sorted(v)
    n = len(v)
    return float("nan") if n == 0 else (v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2]))


def fmt_bytes(b):
    units = ["B", "KiB", "MiB", "GiB"]
    v, u = abs(b), 0
    while v >= 1024 and u < 3:
        v /= 1024
        u += 1
    sign = "-" if b < 0 else ""
    return f"{sign}{v:.0f} B" if u == 0 else f"{sign}{v:.2f} {units[u]}"


class Run:
    def __init__(self, name, *, command="run", modes=("fp32", "int8"), warmup=2, sessions=6,
                 steps=12, seed=42, device="cpu", inject="", stacks=True, leak=None, slow_rss=0,
                 stop_after=None):
        self.name, self.command, self.modes = name, command, list(modes)
        self.warmup, self.sessions, self.steps, self.seed = warmup, sessions, steps, seed
        self.device, self.inject, self.stacks = device, inject, stacks
        self.leak, self.slow_rss, self.stop_after = leak, slow_rss, stop_after
        self.rng = random.Random(seed)
        self.cuda = device.startswith("cuda")

    def run_line(self):
        return {
            "type": "run", "schema": "leakgate.results/1", "version": "0.1.0",
            "command": self.command, "started": "2026-11-30T15:10:%02dZ" % (self.seed % 60),
            "hostname": "ci-runner-7", "cpus": 2, "mem_bytes": 8 * GiB, "device": self.device,
            "preset": "tiny", "modes": ",".join(self.modes), "sessions": self.sessions,
            "warmup": self.warmup, "steps": self.steps, "seed": self.seed, "stacks": self.stacks,
            "inject": self.inject, "shard": "",
            "budgets": {c: {"band": float(b[0]), "slope": float(b[1]), "floor": float(b[2]),
                            "source": b[3]} for c, b in BUDGETS.items()},
        }

    # What an injected fault leaves behind after session `gen` (1-based generation).
    def leaked_groups(self, mode, gen):
        leak, groups, refs = self.leak, [], []
        if leak == "varmap-dup-ref":
            for tname, n in VARMAP:
                groups.append({"tag": "varmap/" + tname, "space": "host", "bytes": 4 * n, "count": 1,
                               "stacks": [{"count": 1, "frames": stack(
                                   "vm_tensor_new (model/varmap.c:77)",
                                   "tft_param (model/tft_build.c:%d)" % (40 + len(tname)),
                                   "tft_new (model/tft.c:120)",
                                   "hx_session_run (harness/session.c:188)",
                                   "hx_run (harness/run.c:96)", "main (harness/main.c:57)")}]})
            refs.append({"kind": "varmap", "name": "tft.varmap", "refs": 1, "retains": [
                {"site": "trainer_new (model/trainer.c:142)", "generation": gen, "stack": stack(
                    "vm_retain (model/varmap.c:210)", "trainer_new (model/trainer.c:142)",
                    "hx_session_run (harness/session.c:194)", "hx_run (harness/run.c:96)",
                    "main (harness/main.c:57)") if self.stacks else None}]})
        elif leak == "adam-state":
            for cls in ("adam.m", "adam.v"):
                for tname, n in VARMAP[:6]:
                    groups.append({"tag": cls + "/" + tname, "space": "host", "bytes": 4 * n, "count": 1,
                                   "stacks": [{"count": 1, "frames": stack(
                                       "adamw_state_new (model/optim.c:64)",
                                       "adamw_step (model/optim.c:118)",
                                       "trainer_train (model/trainer.c:233)",
                                       "hx_session_run (harness/session.c:201)")}]})
        elif leak == "device-tensor":
            groups.append({"tag": "act/dec.attn.scores", "space": "device", "bytes": 4 * MiB, "count": 1,
                           "stacks": [{"count": 1, "frames": stack(
                               "tn_new_device (model/tensor.c:301)",
                               "attn_forward_cuda (model/ops_attn.cu:88)",
                               "tft_forward (model/tft.c:412)",
                               "trainer_train (model/trainer.c:226)")}]})
        groups.sort(key=lambda g: (-g["bytes"], g["tag"]))
        return groups, refs

    def generate(self):
        r = self.rng
        lines = [self.run_line()]
        total = self.warmup + self.sessions
        base_tagged = DATA_BYTES
        cum_host = cum_dev = cum_refs = 0
        lazy = 0                       # one-time costs the warm-up absorbs
        baseline = None
        series = {c: [] for c in CHANNELS}  # (index, delta) of measured sessions
        for i in range(total):
            if self.stop_after is not None and i >= self.stop_after:
                break
            mode = self.modes[i % len(self.modes)]
            warm = i < self.warmup
            gen = i + 1
            groups, refs = self.leaked_groups(mode, gen)
            host_leak = sum(g["bytes"] for g in groups if g["space"] == "host")
            dev_leak = sum(g["bytes"] for g in groups if g["space"] == "device")
            if warm:
                lazy += [5 * MiB + 327680, 1 * MiB + 65536][i % 2]  # BLAS buffers, int8 tables
            cum_host += host_leak
            cum_dev += dev_leak
            cum_refs += sum(x["refs"] for x in refs)
            samples, t, dur = self.samples(mode, base_tagged + cum_host - host_leak,
                                           cum_dev - dev_leak, lazy, host_leak, dev_leak, self.slow_rss * i)
            je_alloc = 4 * MiB + 131072 + lazy + base_tagged + cum_host + 16 * r.randint(-400, 400)
            absolute = {
                "tagged_host": base_tagged + cum_host,
                "tagged_device": cum_dev if self.cuda else None,
                "refs": cum_refs,
                "je_allocated": je_alloc,
                "je_active": (je_alloc + 393216) // 4096 * 4096 + 4096 * r.randint(-24, 24),
                "je_resident": (12 * MiB + lazy + cum_host) // 4096 * 4096 + 4096 * r.randint(-96, 96),
                "rss": (58 * MiB + lazy + cum_host + self.slow_rss * i) // 4096 * 4096
                       + 4096 * r.randint(-200, 200),
                "dev_driver": (1228 * MiB + cum_dev) // (2 * MiB) * (2 * MiB) + 2 * MiB * r.choice([0, 0, 0, 1, -1])
                if self.cuda else None,
                "dev_process": (604 * MiB + cum_dev) // (2 * MiB) * (2 * MiB) if self.cuda else None,
            }
            if i == self.warmup - 1 or (self.warmup == 0 and i == 0 and baseline is None):
                baseline = dict(absolute)
            delta = {c: (None if warm or absolute[c] is None else absolute[c] - baseline[c])
                     for c in CHANNELS}
            if not warm:
                for c in CHANNELS:
                    if delta[c] is not None:
                        series[c].append((i, delta[c]))
            classes = {}
            for g in groups:
                cls = g["tag"].split("/")[0]
                classes[cls] = classes.get(cls, 0) + g["bytes"]
            loss = 0.92 * math.exp(-0.012 * i) + r.uniform(-0.02, 0.02)
            peak_host = base_tagged + cum_host - host_leak + (PARAM_BYTES * 4 + ACT_BYTES
                                                              if not self.cuda else 65536)
            lines.append({
                "type": "session", "index": i, "mode": mode, "warmup": warm,
                "duration_s": round(dur, 3), "steps": self.steps,
                "train_loss": round(loss, 5), "val_loss": round(loss * 1.08 + r.uniform(0, 0.01), 5),
                "quant_val_loss": round(loss * 1.13, 5) if mode == "int8" else None,
                "absolute": absolute, "delta": delta,
                "peak_tagged_host": peak_host,
                "peak_tagged_device": (cum_dev - dev_leak + PARAM_BYTES * 4 + ACT_BYTES) if self.cuda else None,
                "leaked_host_bytes": host_leak,
                "leaked_device_bytes": dev_leak if self.cuda else None,
                "leaks": groups, "refs": refs,
                "classes": [{"class": k, "bytes": v} for k, v in sorted(classes.items(), key=lambda kv: -kv[1])],
                "samples": samples, "error": "",
            })
        verdict = None if self.stop_after is not None else self.verdict(series, lines)
        return lines, verdict

    def samples(self, mode, tagged0, dev0, lazy, host_leak, dev_leak, outside=0):
        """Samples at phase marks and at every training step: [step, phase, t, tagged_host,
        tagged_device, je_allocated, rss]."""
        r, out, t = self.rng, [], 0.0
        untagged = 4 * MiB + 131072 + lazy
        rss0 = 58 * MiB + lazy + outside  # outside: mapped behind the allocator's back
        on_dev = self.cuda

        def point(step, phase, host, dev):
            je = untagged + host + 16 * r.randint(0, 2048)
            rss = rss0 + host + (host - tagged0) // 3 + 4096 * r.randint(0, 64)
            out.append([step, phase, round(t, 4), host, (dev if on_dev else None), je, rss // 4096 * 4096])

        P = PARAM_BYTES
        # (host, device) bytes beyond what earlier sessions left: CPU runs keep the model on
        # the host, CUDA runs keep 64 KiB of staging on the host and the model on the device
        def at(model_state):
            return (tagged0 + 65536, dev0 + model_state) if on_dev else (tagged0 + model_state, dev0)

        point(-1, "build", *at(P))                       # the VarMap
        for k in range(1, self.steps + 1):
            t += 0.021 + r.uniform(0, 0.004)
            act = ACT_BYTES + 4096 * r.randint(0, 32)
            point(k, "train", *at(4 * P + act))          # + AdamW m, v + gradients + activations
        t += 0.03
        point(-1, "validate", *at(3 * P + ACT_BYTES // 3))
        t += 0.02
        point(-1, "save", *at(4 * P))                    # + the checkpoint buffer
        if mode == "int8":
            t += 0.05
            point(-1, "int8", *at(3 * P + P // 4 + 131072))  # int8 weights + calibration stats
        t += 0.01
        point(-1, "free", tagged0 + host_leak, dev0 + dev_leak)
        return out, t, t + 0.015

    def verdict(self, series, lines):
        chans, worst = [], "pass"
        measured = sum(1 for ln in lines if ln["type"] == "session" and not ln["warmup"])
        sessions = [ln for ln in lines if ln["type"] == "session" and not ln["warmup"]]
        whys = []
        for c in CHANNELS:
            band, slope_budget, floor, _ = BUDGETS[c]
            pts = series[c]
            if not pts:
                chans.append({"channel": c, "status": "unavailable", "figure": None, "budget": None,
                              "slope": None, "slope_lo": None, "slope_hi": None, "shift": None,
                              "why": "not measured on this machine (%s)" % self.device})
                continue
            if c in EXACT:
                if c == "refs":
                    per = [sum(x["refs"] for x in s["refs"]) for s in sessions]
                    total = sum(per)
                    bad = sum(1 for v in per if v)
                    why = ("%d of %d measured sessions left %d reference(s) unreleased" % (bad, measured, total)
                           if total else "every retain was released in %d measured sessions" % measured)
                else:
                    key = "leaked_host_bytes" if c == "tagged_host" else "leaked_device_bytes"
                    per = [s[key] or 0 for s in sessions]
                    total = sum(per)
                    bad = sum(1 for v in per if v)
                    if total:
                        top = max((g for s in sessions for g in s["leaks"]
                                   if g["space"] == ("host" if c == "tagged_host" else "device")),
                                  key=lambda g: g["bytes"])
                        why = ("%d of %d measured sessions left %s live (%s per session), largest %s"
                               % (bad, measured, fmt_bytes(total), fmt_bytes(total // max(bad, 1)), top["tag"]))
                    else:
                        why = "0 B left live in %d measured sessions (exact channel)" % measured
                status = "leak" if total else "pass"
                chans.append({"channel": c, "status": status, "figure": float(total), "budget": 0.0,
                              "slope": None, "slope_lo": None, "slope_hi": None, "shift": None, "why": why})
            else:
                xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                s, lo, hi = theil_sen(xs, ys)
                q = max(1, len(ys) // 4)
                shift = median(ys[-q:]) - median(ys[:q])
                if lo > slope_budget and shift > floor:
                    status = "leak"
                    why = "slope %s/session [%s, %s] > %s/session and shift %s > %s" % (
                        fmt_bytes(s), fmt_bytes(lo), fmt_bytes(hi), fmt_bytes(slope_budget),
                        fmt_bytes(shift), fmt_bytes(floor))
                elif hi > slope_budget and len(ys) < 8 and shift > floor:
                    status = "inconclusive"
                    why = "slope %s/session [%s, %s] straddles %s/session: run more sessions" % (
                        fmt_bytes(s), fmt_bytes(lo), fmt_bytes(hi), fmt_bytes(slope_budget))
                else:
                    status = "pass"
                    why = "slope %s/session [%s, %s] within %s/session; shift %s" % (
                        fmt_bytes(s), fmt_bytes(lo), fmt_bytes(hi), fmt_bytes(slope_budget), fmt_bytes(shift))
                chans.append({"channel": c, "status": status, "figure": s, "budget": float(slope_budget),
                              "slope": s, "slope_lo": lo, "slope_hi": hi, "shift": shift, "why": why})
            if chans[-1]["status"] == "leak":
                worst = "leak"
                whys.append(c)
            elif chans[-1]["status"] == "inconclusive" and worst == "pass":
                worst = "inconclusive"
        if worst == "leak":
            summary = "LEAK on %s" % ", ".join(whys)
            if self.leak == "varmap-dup-ref":
                summary += ": %s of varmap/* tensors outlive each session, held by a reference " \
                           "taken at trainer_new (model/trainer.c:142)" % fmt_bytes(PARAM_BYTES)
            elif self.leak == "device-tensor":
                summary += ": 4.00 MiB of device memory (act/dec.attn.scores) outlives each session"
            elif self.slow_rss:
                summary += ": RSS grows %s per session outside the allocator" % fmt_bytes(self.slow_rss)
        elif worst == "inconclusive":
            summary = "INCONCLUSIVE: run more sessions"
        else:
            summary = "PASS: %d measured sessions returned to baseline on every channel" % measured
        return {"type": "verdict", "status": worst,
                "exit_code": {"pass": 0, "leak": 1, "inconclusive": 3}[worst],
                "sessions_measured": measured, "partial": False, "summary": summary,
                "channels": chans}


def write(path, lines, verdict, truncate_tail=False):
    with open(path, "w") as f:
        for ln in lines:
            f.write(json.dumps(ln, separators=(",", ":"), allow_nan=False) + "\n")
        if verdict:
            f.write(json.dumps(verdict, separators=(",", ":"), allow_nan=False) + "\n")
    if truncate_tail:
        # a crash in the middle of writing the next session line: half a line, no newline
        with open(path, "a") as f:
            f.write(json.dumps(truncate_tail, separators=(",", ":"))[:211])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    fixtures = [
        (Run("clean", seed=42), False),
        (Run("clean2", seed=7), False),
        (Run("leaking", seed=43, inject="varmap-dup-ref", leak="varmap-dup-ref"), False),
        (Run("partial", seed=44, inject="adam-state", leak="adam-state", stop_after=5), True),
        (Run("soak", command="soak", modes=("fp32",), warmup=1, sessions=100, steps=6, seed=45,
             inject="raw-mmap:96KiB", stacks=False, slow_rss=96 * KiB), False),
        (Run("device", modes=("fp32",), warmup=1, sessions=5, steps=10, seed=46,
             device="cuda: NVIDIA H200", inject="device-tensor", leak="device-tensor"), False),
    ]
    for run, partial in fixtures:
        lines, verdict = run.generate()
        tail = None
        if partial:
            # the next session as it would have been written, cut short mid-line
            nxt = Run(run.name, seed=run.seed, inject=run.inject, leak=run.leak, stop_after=run.stop_after + 1)
            tail = nxt.generate()[0][-1]
        write(os.path.join(out, run.name + ".jsonl"), lines, verdict, truncate_tail=tail or False)
        print("wrote", os.path.join(out, run.name + ".jsonl"), len(lines) - 1, "sessions",
              "(cut short)" if partial else "(%s)" % verdict["status"])


if __name__ == "__main__":
    main()
