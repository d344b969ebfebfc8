#!/usr/bin/python3
"""Independent, stdlib-only GGUF header parser used to cross-check
`specdec inspect` (tests/cli/inspect.test.sh). Format: llama.cpp docs/gguf.md.

usage:
  gguf_dump.py FILE                  JSON on stdout: {"version", "alignment", "n_kv",
      "n_tensors", "data_offset", "kv": {key: value}, "kv_types": {key: type},
      "tensors": [{"name", "type", "shape", "offset", "bytes"}]}; an array's value is
      {"type", "n", "first": [first 8 non-array elements]}.
  gguf_dump.py make-sample OUT       writes a small GGUF with several tensor types
  gguf_dump.py check FILE INSPECT.json
                                     compares `specdec inspect --json` output with
                                     this parser's reading; prints the differences
  gguf_dump.py untie IN OUT          copies a file whose lm head is tied to
      token_embd.weight and adds an output.weight of the same type and shape
      holding token_embd's rows in reverse order (row i is token V-1-i's), so a
      loader that reads the untied head gives the tied file's distribution with
      the token order reversed
"""
import json
import math
import struct
import sys

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}
# ggml tensor types: id -> (name, elements per block, bytes per block), from
# llama.cpp ggml/src/ggml-common.h block layouts (subset used by the sample).
GGML_TYPES = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 8: ("q8_0", 32, 34),
              12: ("q4_K", 256, 144), 14: ("q6_K", 256, 210), 24: ("i8", 1, 1), 30: ("bf16", 1, 2)}
TYPE_NAMES = {0: "u8", 1: "i8", 2: "u16", 3: "i16", 4: "u32", 5: "i32", 6: "f32", 7: "bool",
              8: "string", 9: "array", 10: "u64", 11: "i64", 12: "f64"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("truncated at offset %d" % self.pos)
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return v

    def string(self):
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError("string past end at offset %d" % self.pos)
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8", errors="replace")

    def skip(self, t, n):
        """Steps over n values of type t without decoding them (vocab arrays
        hold ~150k strings; only the first few are reported)."""
        if t in SCALARS:
            self.pos += n * struct.calcsize(SCALARS[t])
            if self.pos > len(self.data):
                raise ValueError("array past end")
        elif t == 8:
            data, pos, end = self.data, self.pos, len(self.data)
            for _ in range(n):
                if pos + 8 > end:
                    raise ValueError("truncated string array")
                pos += 8 + int.from_bytes(data[pos:pos + 8], "little")
            if pos > end:
                raise ValueError("string past end")
            self.pos = pos
        else:
            for _ in range(n):
                self.value(t)

    def value(self, t):
        if t in SCALARS:
            return self.take(SCALARS[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            items = [self.value(et) for _ in range(min(n, 8))]
            self.skip(et, n - len(items))
            return {"type": TYPE_NAMES.get(et, "?"), "n": n, "items": items}
        raise ValueError("unknown value type %d" % t)


def dump(path):
    with open(path, "rb") as f:
        r = Reader(f.read())
    if r.take("<4s") != b"GGUF":
        raise ValueError("bad magic")
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    kv, kv_types = {}, {}
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        v = r.value(t)
        if isinstance(v, dict):
            v = {"type": v["type"], "n": v["n"],
                 "first": [x for x in v["items"][:8] if not isinstance(x, dict)]}
        kv[key] = v
        kv_types[key] = TYPE_NAMES.get(t, "?")
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        shape = [r.take("<q") for _ in range(nd)]
        t, offset = r.take("<I"), r.take("<Q")
        _, block, size = GGML_TYPES.get(t, ("?", 1, 0))
        n = math.prod(shape)
        tensors.append({"name": name, "shape": shape, "type": t, "offset": offset,
                        "bytes": n // block * size})
    alignment = kv.get("general.alignment", 32)
    return {"version": version, "alignment": alignment, "n_kv": n_kv, "n_tensors": n_tensors,
            "data_offset": (r.pos + alignment - 1) // alignment * alignment,
            "kv": kv, "kv_types": kv_types, "tensors": tensors}


def make_sample(path):
    """A GGUF written independently of specdec's writer: alignment 64, a few
    scalars, a token list, and tensors of several types with padding."""
    out = bytearray()

    def string(s):
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    kvs = [("general.architecture", 8, string("llama")),
           ("general.alignment", 4, struct.pack("<I", 64)),
           ("llama.block_count", 4, struct.pack("<I", 2)),
           ("llama.rope.freq_base", 6, struct.pack("<f", 10000.0)),
           ("sample.i64", 11, struct.pack("<q", -(1 << 40))),
           ("sample.flag", 7, struct.pack("<?", True)),
           ("tokenizer.ggml.model", 8, string("llama")),
           ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 3) + string("<unk>") + string("a") + string("\u00e9")),
           ("tokenizer.ggml.scores", 9, struct.pack("<IQ3f", 6, 3, 0.0, -1.5, 2.25))]
    tensors = [("token_embd.weight", 0, [4, 3]), ("blk.0.attn_norm.weight", 1, [8]),
               ("blk.0.attn_q.weight", 8, [64, 2]), ("blk.0.ffn_down.weight", 12, [256, 1, 2]),
               ("blk.0.pos", 24, [3]), ("output.weight", 14, [256, 2])]
    out += b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, val in kvs:
        out += string(key) + struct.pack("<I", t) + val
    offset, blobs = 0, []
    for name, t, shape in tensors:
        _, block, size = GGML_TYPES[t]
        nbytes = math.prod(shape) // block * size
        out += string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<q", n) for n in shape)
        out += struct.pack("<IQ", t, offset)
        blobs.append(bytes((k * 7 + len(name)) & 0xFF for k in range(nbytes)))
        offset += (nbytes + 63) // 64 * 64
    out += bytes(-len(out) % 64)
    for blob in blobs:
        out += blob + bytes(-len(blob) % 64)
    with open(path, "wb") as f:
        f.write(out)


def untie(src, dst):
    with open(src, "rb") as f:
        data = f.read()
    info = dump(src)
    if any(t["name"] == "output.weight" for t in info["tensors"]):
        raise ValueError("%s already has an output.weight" % src)
    emb = next(t for t in info["tensors"] if t["name"] == "token_embd.weight")
    if emb["type"] not in GGML_TYPES:
        raise ValueError("token_embd.weight type %d not in the table" % emb["type"])
    # The tensor-info section ends where the last tensor's info ends: re-read up to it.
    r = Reader(data)
    r.take("<4s"), r.take("<I"), r.take("<Q"), r.take("<Q")
    for _ in range(info["n_kv"]):
        r.string()
        r.value(r.take("<I"))
    for _ in range(info["n_tensors"]):
        r.string()
        nd = r.take("<I")
        r.pos += 8 * nd + 4 + 8
    infos_end, align = r.pos, info["alignment"]
    body = data[info["data_offset"]:]
    body += bytes(-len(body) % align)
    _, block, size = GGML_TYPES[emb["type"]]
    row = emb["shape"][0] // block * size
    old = data[info["data_offset"] + emb["offset"]:][:emb["bytes"]]
    rows = [old[i:i + row] for i in range(0, len(old), row)]
    name = b"output.weight"
    out = bytearray(b"GGUF" + struct.pack("<IQQ", info["version"], info["n_tensors"] + 1, info["n_kv"]))
    out += data[24:infos_end]
    out += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(emb["shape"]))
    out += b"".join(struct.pack("<q", n) for n in emb["shape"]) + struct.pack("<IQ", emb["type"], len(body))
    out += bytes(-len(out) % align) + body + b"".join(reversed(rows))
    with open(dst, "wb") as f:
        f.write(out)


def same(a, b):
    """Values equal; strings that needed U+FFFD replacement are not compared
    (the two replacement policies may differ), nor non-finite floats."""
    if isinstance(a, str) and isinstance(b, str) and ("\ufffd" in a or "\ufffd" in b):
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(b, str) and isinstance(a, float) and not math.isfinite(a):
            return True
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and float(a) == float(b)
    return a == b


def check(path, inspect_json):
    want = dump(path)
    with open(inspect_json, encoding="utf-8") as f:
        got = json.load(f)
    errors = []

    def expect(what, a, b):
        if not same(a, b):
            errors.append("%s: parser says %r, inspect says %r" % (what, a, b))

    for k in ("version", "alignment", "data_offset"):
        expect(k, want[k], got[k])
    expect("architecture", want["kv"].get("general.architecture"), got["architecture"])
    tok = got["tokenizer"] or {}
    expect("tokenizer model", want["kv"].get("tokenizer.ggml.model"), tok.get("model"))
    n_tok = want["kv"].get("tokenizer.ggml.tokens", {"n": None})["n"]
    expect("tokenizer tokens", n_tok, tok.get("n_tokens", None if n_tok is None else -1))
    expect("n_kv", want["n_kv"], len(got["metadata"]))
    for k, entry in zip(want["kv"], got["metadata"]):
        expect("key order", k, entry["key"])
        v = want["kv"][k]
        expect(k + " type", want["kv_types"][k], entry["type"])
        if isinstance(v, dict):
            expect(k + " elem_type", v["type"], entry["elem_type"])
            expect(k + " n", v["n"], entry["n"])
            expect(k + " first count", len(v["first"]), len(entry["first"]))
            for i, (a, b) in enumerate(zip(v["first"], entry["first"])):
                expect("%s[%d]" % (k, i), a, b)
        else:
            expect(k, v, entry["value"])
    expect("n_tensors", want["n_tensors"], len(got["tensors"]))
    for a, b in zip(want["tensors"], got["tensors"]):
        for field, gfield in (("name", "name"), ("type", "type_id"), ("shape", "shape"),
                              ("offset", "offset"), ("bytes", "bytes")):
            expect("tensor %s %s" % (a["name"], field), a[field], b[gfield])
    expect("total bytes", sum(t["bytes"] for t in want["tensors"]), got["total"]["bytes"])
    expect("total parameters", sum(math.prod(t["shape"]) for t in want["tensors"]),
           got["total"]["parameters"])
    for e in errors[:20]:
        print("gguf_dump check %s: %s" % (path, e))
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make-sample":
        make_sample(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "untie":
        untie(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        json.dump(dump(sys.argv[1]), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
