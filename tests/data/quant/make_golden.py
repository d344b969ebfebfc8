#!/usr/bin/python3
"""Writes golden.bin: llama.cpp's own reference quantizer and dequantizer
outputs, for test_quant_golden.c to compare against byte for byte.

Needs a built libggml-base.so (llama.cpp; node-llama-cpp ships one in
@node-llama-cpp/linux-x64/bins/linux-x64/). Run:
    /usr/bin/python3 tests/data/quant/make_golden.py path/to/libggml-base.so
The file records which library produced it in its provenance string.

Layout (little-endian): "SDQG", u32 version 1, u32 provenance length, the
provenance bytes, u32 n, f32 inputs[n], u32 n_records, then per record:
u32 ggml type, u32 kind (0: blocks = llama.cpp quantize_row_<t>_ref(inputs);
1: blocks = random bytes with finite fp16/f32 scales; IQ4_NL / IQ4_XS
blocks come from ggml_quantize_chunk, the quantizer llama-quantize runs),
u32 n_elems,
u32 n_bytes, blocks[n_bytes], f32 dequantize_row_<t>(blocks)[n_elems]."""
import ctypes, hashlib, os, struct, sys
import numpy as np

# type id, name, block elems, block bytes, offsets of fp16 scale fields (or 'f32')
TYPES = [
    (2, "q4_0", 32, 18, [0]), (3, "q4_1", 32, 20, [0, 2]), (6, "q5_0", 32, 22, [0]),
    (7, "q5_1", 32, 24, [0, 2]), (8, "q8_0", 32, 34, [0]), (9, "q8_1", 32, 36, [0, 2]),
    (10, "q2_K", 256, 84, [80, 82]), (11, "q3_K", 256, 110, [108]),
    (12, "q4_K", 256, 144, [0, 2]), (13, "q5_K", 256, 176, [0, 2]),
    (14, "q6_K", 256, 210, [208]), (15, "q8_K", 256, 292, "f32"),
    (20, "iq4_nl", 32, 18, [0]), (23, "iq4_xs", 256, 136, [0]),
]
QUANTIZED_BY_US = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_K", "q3_K", "q4_K", "q5_K",
                   "q6_K", "q8_K", "iq4_nl", "iq4_xs"}
NO_DEQUANT_SYMBOL = {"q8_1"}  # llama.cpp exports no dequantize_row_q8_1
# Quantized with the function ggml_quantize_chunk calls (what llama-quantize
# writes), not quantize_row_<t>_ref: for IQ4_NL the two differ (ntry 7 vs -1).
QUANTIZED_BY_CHUNK = {"iq4_nl", "iq4_xs"}


def inputs(rng):
    """Four super-blocks of realistic and awkward rows (1024 floats)."""
    g = rng.standard_normal(256).astype(np.float32)
    u = (rng.uniform(-1, 1, 256) * 0.02).astype(np.float32)
    o = rng.standard_normal(256).astype(np.float32) * 0.05
    o[rng.integers(0, 256, 5)] *= 30
    e = rng.standard_normal(256).astype(np.float32) * 3
    e[0:32] = 0.0                                   # zero sub-block
    e[32:64] = -np.abs(e[32:64]) - 1                # negative-only
    e[64:96] = 0.375                                # constant
    e[96:128] *= 1e-3                               # tiny next to large
    return np.concatenate([g, u, o.astype(np.float32), e]).astype(np.float32)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    rng = np.random.default_rng(20261201)
    x = inputs(rng)
    n = x.size
    records = []
    for tid, name, qk, bsize, scale_off in TYPES:
        deq = None if name in NO_DEQUANT_SYMBOL else getattr(lib, "dequantize_row_" + name)
        if name in QUANTIZED_BY_US:
            buf = ctypes.create_string_buffer(n // qk * bsize)
            if name in QUANTIZED_BY_CHUNK:  # ggml_quantize_chunk(type, src, dst, 0, 1 row, n, no imatrix)
                lib.ggml_quantize_chunk.restype = ctypes.c_size_t
                lib.ggml_quantize_chunk(ctypes.c_int(tid), x.ctypes.data_as(ctypes.c_void_p), buf,
                                        ctypes.c_int64(0), ctypes.c_int64(1), ctypes.c_int64(n),
                                        ctypes.c_void_p(None))
            else:
                getattr(lib, "quantize_row_%s_ref" % name)(
                    x.ctypes.data_as(ctypes.c_void_p), buf, ctypes.c_int64(n))
            records.append((tid, 0, n, bytes(buf), deq))
        nb = 8 if qk == 32 else 2
        raw = bytearray(rng.integers(0, 256, nb * bsize, dtype=np.uint8).tobytes())
        for b in range(nb):
            if scale_off == "f32":
                struct.pack_into("<f", raw, b * bsize, float(rng.standard_normal()) * 1e-2)
            else:
                for off in scale_off:  # finite fp16: exponent field below 31
                    h = int(rng.integers(0, 0x7C00)) | (int(rng.integers(0, 2)) << 15)
                    struct.pack_into("<H", raw, b * bsize + off, h)
        records.append((tid, 1, nb * qk, bytes(raw), deq))
    lib_hash = hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()[:16]
    prov = ("llama.cpp libggml-base.so sha256:%s (%s)" % (lib_hash, os.path.basename(sys.argv[1]))).encode()
    out = bytearray(b"SDQG" + struct.pack("<II", 1, len(prov)) + prov)
    out += struct.pack("<I", n) + x.tobytes()
    kept = [r for r in records if r[4] is not None or r[1] == 0]
    out += struct.pack("<I", len(kept))
    for tid, kind, ne, blocks, deq in kept:
        y = np.zeros(ne, dtype=np.float32)
        if deq is not None:
            bb = ctypes.create_string_buffer(blocks, len(blocks))
            deq(bb, y.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(ne))
        else:  # q8_1: d * q from the ggml definition (fp16 d at offset 0)
            for b in range(ne // 32):
                d = np.frombuffer(blocks[36 * b:36 * b + 2], dtype=np.float16).astype(np.float32)[0]
                q = np.frombuffer(blocks[36 * b + 4:36 * b + 36], dtype=np.int8)
                y[32 * b:32 * b + 32] = q.astype(np.float32) * d
        out += struct.pack("<IIII", tid, kind, ne, len(blocks)) + blocks + y.tobytes()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden.bin")
    open(path, "wb").write(out)
    print("wrote %s: %d bytes, %d records" % (path, len(out), len(kept)))


if __name__ == "__main__":
    main()
