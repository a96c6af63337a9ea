#!/usr/bin/env python3
"""Writes the safetensors corpus under tests/data/safetensors/ (stdlib only).

bad/   one malformed file per rejection case of spec/TFT.md "Checkpoints", each named for
       what is wrong with it, and bad/expected.tsv: file <TAB> a phrase the reader's error
       message must contain. test_safetensors iterates bad/ and asserts LG_EFORMAT, a message
       naming the file and no leak; files not listed in expected.tsv (inputs the fuzzer found)
       are held to the same rule without the phrase.
good/  a few valid files (also the fuzzer's seed corpus, with bad/).

Run from anywhere: python3 tests/tools/make_bad_safetensors.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "data", "safetensors")


def pack(header, data=b"", pad=True, raw_header=None):
    """A file from a header (dict, or raw bytes) and a data buffer."""
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def good_files():
    g = {}
    g["two_f32.safetensors"] = pack(
        {"__metadata__": {"config": '{"preset":"tiny"}'},
         "a.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
         "a.bias": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}},
        f32(1, 2, 3, 4) + f32(-1, 0.5))
    g["mixed_dtypes.safetensors"] = pack(
        {"q": {"dtype": "I8", "shape": [3], "data_offsets": [0, 3]},
         "q.scale": {"dtype": "F32", "shape": [1], "data_offsets": [3, 7]},
         "idx": {"dtype": "I32", "shape": [2, 1], "data_offsets": [7, 15]},
         "empty": {"dtype": "F32", "shape": [0, 4], "data_offsets": [15, 15]}},
        bytes([1, 255, 127]) + f32(0.25) + struct.pack("<2i", -7, 1 << 30))
    g["empty_header.safetensors"] = pack({})
    g["scalar_unpadded.safetensors"] = pack(
        {"s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, f32(3.5), pad=False)
    return g


T1 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
D1 = f32(1, 2)


def one(**kw):
    e = dict(T1)
    e.update(kw)
    return {"t": e}


def bad_files():
    """name -> (bytes, phrase the error must contain)."""
    b = {}
    b["empty_file"] = (b"", "too short")
    b["short_file"] = (b"\x10\x00\x00", "too short")
    b["header_len_past_eof"] = (struct.pack("<Q", 64) + b'{"a":1}', "larger than the file")
    b["header_len_huge"] = (struct.pack("<Q", 2**64 - 1) + b"{}", "over the")
    b["header_over_100mb"] = (struct.pack("<Q", 100_000_001) + b"{}      ", "over the")
    b["bad_json_truncated"] = (pack(None, raw_header=b'{"t":{"dtype":"F32","sha'), "not valid JSON")
    b["bad_json_trailing_garbage"] = (pack(None, raw_header=b'{}xyz'), "not valid JSON")
    b["bad_json_not_utf8"] = (pack(None, raw_header=b'{"\xff\xfe":{}}'), "not valid JSON")
    b["bad_json_nul_in_name"] = (pack(None, raw_header=b'{"a\\u0000b":{"dtype":"F32","shape":[0],'
                                      b'"data_offsets":[0,0]}}'), "not valid JSON")
    b["bad_json_empty_header"] = (pack(None, raw_header=b"", pad=False), "not valid JSON")
    b["header_is_array"] = (pack([1, 2]), "not an object")
    b["header_is_string"] = (pack("t"), "not an object")
    b["entry_not_object"] = (pack({"t": [0, 8]}, D1), "not an object")
    b["dtype_unknown_f16"] = (pack(one(dtype="F16", shape=[4]), D1), "unknown dtype")
    b["dtype_unknown_lowercase"] = (pack(one(dtype="f32"), D1), "unknown dtype")
    b["dtype_missing"] = (pack({"t": {"shape": [2], "data_offsets": [0, 8]}}, D1), "no \"dtype\"")
    b["dtype_not_string"] = (pack(one(dtype=4), D1), "not a string")
    b["shape_negative"] = (pack(one(shape=[-2]), D1), "shape[0]")
    b["shape_non_integer"] = (pack(one(shape=[2.0]), D1), "shape[0]")
    b["shape_string_dim"] = (pack(one(shape=[1, "2"]), D1), "shape[1]")
    b["shape_not_array"] = (pack(one(shape=2), D1), "not an array")
    b["shape_missing"] = (pack({"t": {"dtype": "F32", "data_offsets": [0, 8]}}, D1), "no \"shape\"")
    b["shape_too_many_dims"] = (pack(one(shape=[1, 1, 1, 1, 2]), D1), "dimensions")
    b["shape_overflow"] = (pack(one(shape=[2**62, 2**62]), D1), "too large")
    b["shape_bytes_overflow"] = (pack(one(shape=[2**62]), D1), "too large")
    b["size_disagrees_with_offsets"] = (pack(one(shape=[3]), D1), "needs 12 bytes")
    b["offsets_overlap"] = (pack({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                  "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
                                 f32(1, 2, 3)), "overlaps")
    b["offsets_duplicate_range"] = (pack({"a": T1, "b": T1}, D1), "overlaps")
    b["offsets_gap"] = (pack({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                              "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}},
                             f32(1, 2, 3)), "gap")
    b["offsets_not_from_zero"] = (pack(one(data_offsets=[4, 12]), f32(0, 1, 2)), "gap")
    b["offsets_past_buffer"] = (pack(one(data_offsets=[0, 8]), f32(1)), "run past")
    b["offsets_huge"] = (pack(one(data_offsets=[2**62, 2**62 + 8]), D1), "run past")
    b["offsets_reversed"] = (pack(one(data_offsets=[8, 0]), D1), "end before")
    b["offsets_negative"] = (pack(one(data_offsets=[-8, 0]), D1), "data_offsets")
    b["offsets_three_values"] = (pack(one(data_offsets=[0, 8, 8]), D1), "data_offsets")
    b["offsets_real_numbers"] = (pack(one(data_offsets=[0.0, 8.0]), D1), "data_offsets")
    b["trailing_bytes"] = (pack({"t": T1}, D1 + b"\x00" * 4), "belong to no tensor")
    b["data_without_tensors"] = (pack({}, b"\x00" * 8), "belong to no tensor")
    b["metadata_non_string"] = (pack({"__metadata__": {"config": 3}, "t": T1}, D1), "not a string")
    b["metadata_nested_object"] = (pack({"__metadata__": {"config": {"a": "b"}}}), "not a string")
    b["metadata_not_object"] = (pack({"__metadata__": ["config"]}), "\"__metadata__\" is not an object")
    b["duplicate_names"] = (pack(None, raw_header=b'{"t":{"dtype":"F32","shape":[1],"data_offsets":'
                                 b'[0,4]},"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'),
                            "appears twice")
    b["duplicate_metadata_key"] = (pack(None, raw_header=b'{"__metadata__":{"k":"a","k":"b"}}'),
                                   "appears twice")
    return b


def main():
    bad_dir, good_dir = os.path.join(ROOT, "bad"), os.path.join(ROOT, "good")
    os.makedirs(bad_dir, exist_ok=True)
    os.makedirs(good_dir, exist_ok=True)
    for name, data in good_files().items():
        with open(os.path.join(good_dir, name), "wb") as f:
            f.write(data)
    lines = []
    for name, (data, phrase) in sorted(bad_files().items()):
        fname = name + ".safetensors"
        with open(os.path.join(bad_dir, fname), "wb") as f:
            f.write(data)
        lines.append("%s\t%s\n" % (fname, phrase))
    with open(os.path.join(bad_dir, "expected.tsv"), "w") as f:
        f.write("# file\tphrase the reader's error message must contain (make_bad_safetensors.py)\n")
        f.writelines(lines)
    print("wrote %d bad and %d good files under %s" % (len(lines), len(good_files()),
                                                      os.path.normpath(ROOT)))


if __name__ == "__main__":
    main()
