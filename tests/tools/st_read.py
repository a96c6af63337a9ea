#!/usr/bin/env python3
"""An independent safetensors reader (stdlib only: struct + json), to check files written by
leakgate's writer against the format as published, not against our own reader.

    python3 tests/tools/st_read.py FILE

Prints one JSON object: {"header_len": N, "metadata": {...}, "tensors": {name: {"dtype",
"shape", "data_offsets", "values": [...]}}} with values decoded little-endian. Exits 1, with
the reason on stderr, when the file breaks a rule of the format: header length not a multiple
of 8 or not padded with spaces, bad JSON, a dtype other than F32/I8/I32, offsets that do not
tile the data buffer from 0 without gaps or overlaps, a byte size that disagrees with the shape.
When the reference package (`safetensors`, with numpy) is importable, the file is also loaded
with it and its values must agree.
"""
import json
import struct
import sys

DTYPES = {"F32": ("f", 4), "I8": ("b", 1), "I32": ("i", 4)}


def fail(msg):
    sys.stderr.write("st_read.py: %s\n" % msg)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        fail("file too short")
    (n,) = struct.unpack("<Q", raw[:8])
    if n % 8:
        fail("header length %d is not a multiple of 8" % n)
    if 8 + n > len(raw):
        fail("header length %d past the end of the file" % n)
    text = raw[8:8 + n].decode("utf-8")
    stripped = text.rstrip(" ")
    if not stripped.endswith("}"):
        fail("header is not a JSON object padded with spaces")
    header = json.loads(text)
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        fail("metadata is not str -> str")
    spans = sorted((tuple(v["data_offsets"]), k) for k, v in header.items())
    pos = 0
    for (b, e), k in spans:
        if b != pos:
            fail("tensor %s starts at %d, expected %d (offsets not contiguous)" % (k, b, pos))
        pos = e
    if pos != len(data):
        fail("tensors cover %d bytes of a %d-byte data buffer" % (pos, len(data)))
    out = {}
    for k, v in header.items():
        if v["dtype"] not in DTYPES:
            fail("tensor %s: dtype %s" % (k, v["dtype"]))
        code, size = DTYPES[v["dtype"]]
        count = 1
        for d in v["shape"]:
            count *= d
        b, e = v["data_offsets"]
        if e - b != count * size:
            fail("tensor %s: %d bytes for %d elements of %s" % (k, e - b, count, v["dtype"]))
        values = list(struct.unpack("<%d%s" % (count, code), data[b:e]))
        out[k] = {"dtype": v["dtype"], "shape": v["shape"], "data_offsets": [b, e],
                  "values": values}
    return {"header_len": n, "metadata": meta, "tensors": out}


def cross_check(path, result):
    try:
        from safetensors.numpy import load_file  # the reference implementation, if installed
    except ImportError:
        return
    ref = load_file(path)
    for k, v in result["tensors"].items():
        if [float(x) for x in ref[k].reshape(-1)] != [float(x) for x in v["values"]]:
            fail("tensor %s: the reference reader disagrees" % k)


def main():
    if len(sys.argv) != 2:
        fail("usage: st_read.py FILE")
    result = read(sys.argv[1])
    cross_check(sys.argv[1], result)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
