#!/usr/bin/env python3
"""make_seeds.py — writes the seed corpus of fuzz_agent_msg: SESSION payloads as the agent
(agent/lga_session.c) writes them, little-endian, without the message header.

    python3 tests/fuzz/agent/make_seeds.py      # writes the seeds' *.bin beside this file

regress-*.bin are inputs the fuzzer found, kept once fixed: a leak group's stack without
frames (exec wrote a null the results loader refuses), a note that is not UTF-8 (the session
could not be encoded at all).
"""
import os
import struct


def u32(v): return struct.pack("<I", v)
def i64(v): return struct.pack("<q", v)
def f64(v): return struct.pack("<d", v)
def s(x): return u32(len(x.encode())) + x.encode()


def snapshot(je, rss):
    v = [0] * 26  # TRK_SNAPSHOT_FIGURES: ledger, jemalloc, arena, smaps, device, census, profile
    v[4] = v[5] = v[6] = je
    v[13] = rss
    v[17] = v[18] = v[19] = -1  # no device
    return f64(1.5) + u32(3) + u32(len(v)) + b"".join(i64(x) for x in v)


def session(used=0, groups=(), refs=(), begin=False, notes=(), marker="", index=0,
            census=None, keep=None):
    p = u32(index) + f64(0.25) + u32(used) + snapshot(1 << 20, 8 << 20)
    p += i64(4096) + i64(0) + i64(sum(g[1] for g in groups)) + i64(0)
    p += u32(len(groups))
    for tag, nbytes, count, stacks in groups:
        p += s(tag) + u32(0) + i64(nbytes) + i64(count) + u32(len(stacks))
        for c, frames in stacks:
            p += i64(c) + s(frames)
    p += u32(len(refs))
    for kind, name, n, retains in refs:
        p += s(kind) + s(name) + u32(n) + u32(len(retains))
        for site, gen, stack in retains:
            p += s(site) + u32(gen) + s(stack)
    p += s("") + s(marker)
    p += u32(1) + snapshot(1 << 20, 8 << 20) if begin else u32(0)
    p += u32(len(notes)) + b"".join(s(n) for n in notes)
    if census is not None:  # the flags, then the census: state, n × {born, bytes, blocks,
        state, entries = census  # big_bytes, big_stack}
        p += u32(0) + u32(state) + u32(len(entries))
        p += b"".join(u32(e[0]) + i64(e[1]) + i64(e[2]) + i64(e[3] if len(e) > 3 else 0) +
                      s(e[4] if len(e) > 4 else "") for e in entries)
    if keep is not None:  # the retention paths (agent/lga_keep.c): born, words, paths
        born, words, paths = keep
        p += u32(len(paths)) + u32(born) + i64(words)
        for blocks, nbytes, stack, kind, module, addr, base, links in paths:
            p += i64(blocks) + i64(nbytes) + s(stack) + u32(kind) + s(module) + i64(addr)
            p += i64(base) + u32(len(links)) + b"".join(i64(z) + s(st) for z, st in links)
    return p


here = os.path.dirname(os.path.abspath(__file__))
seeds = {
    "plain.bin": session(),
    "tags.bin": session(used=1, groups=[("model/w", 4096, 2, [(2, "0x401000\n0x402000")])]),
    "refs.bin": session(used=2, refs=[("varmap", "VarMap", 2, [("trainer_new", 3, "0x1")])]),
    "marker.bin": session(begin=True, notes=["step 10", "loss 0.5"], marker="epoch 3 done"),
    # the exact census (agent/lga_census.c): a 64-byte block born in this session; a capped pool
    # whose births come before the run's first session (refused: born at a negative index)
    "census.bin": session(census=(1, [(0, 64, 1)])),
    # a 1 MiB block kept, its stack taken at birth (agent/lga_big.c)
    # a kept block traced to a global of the program (harness/exec/exec_keep.c names it)
    "keep.bin": session(index=2, census=(1, [(1, 64, 1)]), keep=(1, 4096, [
        (1, 64, "0x401000\n", 1, "/bin/true", 0x404040, 0x400000, [(64, "0x401000\n")])])),
    "census-big.bin": session(index=2, census=(1, [(1, 1 << 20, 1, 1 << 20, "0x401000\n0x402000\n")])),
    "census-capped.bin": session(index=3, census=(2, [(1, 3072, 3), (2, 64, 1)])),
}
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
