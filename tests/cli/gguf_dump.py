#!/usr/bin/python3
"""Independent, stdlib-only GGUF header parser used to cross-check
`specdec inspect` (tests/cli/inspect.test.sh). Format: llama.cpp docs/gguf.md.

usage: gguf_dump.py FILE   -> JSON on stdout:
  {"version", "alignment", "n_kv", "n_tensors", "kv": {key: summary},
   "tensors": [{"name", "type", "shape", "offset"}]}
A scalar's summary is its value; an array's is {"type", "n", "first": [...5]}.
"""
import json
import struct
import sys

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}
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

    def value(self, t):
        if t in SCALARS:
            return self.take(SCALARS[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            items = [self.value(et) for _ in range(n)]
            return {"type": TYPE_NAMES.get(et, "?"), "n": n, "items": items}
        raise ValueError("unknown value type %d" % t)


def dump(path):
    with open(path, "rb") as f:
        r = Reader(f.read())
    if r.take("<4s") != b"GGUF":
        raise ValueError("bad magic")
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        v = r.value(r.take("<I"))
        if isinstance(v, dict):
            v = {"type": v["type"], "n": v["n"],
                 "first": [x for x in v["items"][:5] if not isinstance(x, dict)]}
        kv[key] = v
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        shape = [r.take("<q") for _ in range(nd)]
        tensors.append({"name": name, "shape": shape, "type": r.take("<I"), "offset": r.take("<Q")})
    return {"version": version, "alignment": kv.get("general.alignment", 32), "n_kv": n_kv,
            "n_tensors": n_tensors, "kv": kv, "tensors": tensors}


if __name__ == "__main__":
    json.dump(dump(sys.argv[1]), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
