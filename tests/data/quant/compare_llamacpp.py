#!/usr/bin/python3
"""Quantizes one GGUF with llama.cpp (libllama's llama_model_quantize, via
ctypes) and with `specdec quantize`, then compares the two files tensor by
tensor: type, shape and data bytes. A development check, not part of ctest
(it needs a llama.cpp build; node-llama-cpp ships one).

usage: compare_llamacpp.py LIBLLAMA.so SPECDEC IN.gguf WORKDIR TYPE...
TYPE: a mix (q4_k_m q2_k q3_k_s q3_k_m q3_k_l iq4_nl iq4_xs: llama.cpp's
per-tensor rules), a mix with "+pure" (both run pure, e.g. iq4_xs+pure), or
q8_0 / q4_0 / q4_1 / q5_0 / q5_1 / q3_k / q4_k / q5_k / q6_k (llama.cpp run
with pure = true, as ours are pure).

Compared with node-llama-cpp's prebuilt libllama.v0.5.0.so on
sd-genmodel --shape draft --type f32 (90 tensors, tied embeddings) and
--shape tiny (f32 and f16 input; 64-wide rows exercise the K-quant
fallbacks): every tensor identical for all nine types.

With the same library, for the low-bit types
(`compare_llamacpp.py LIB build/specdec IN WORKDIR q2_k q3_k_s q3_k_m q3_k_l
iq4_nl iq4_xs q3_k q2_k+pure iq4_nl+pure iq4_xs+pure q4_k_m`):
sd-genmodel --shape draft --type f32 (90 tensors, 256-wide rows, tied
embeddings): 90/90 identical for all eleven; --shape tiny --type f32 (24
tensors, 64/128-wide rows: every tensor takes llama.cpp's fallback, q2_k /
q3_k -> q4_0, iq4_xs -> iq4_nl, output -> q8_0): 24/24 identical for q2_k,
q3_k_s, q3_k_m, q3_k_l, iq4_nl, iq4_xs, q3_k, iq4_xs+pure. And on the qwen35
hybrid models/fixture-q35-target.gguf (Q8_0 input, requantized by both; 69
tensors: GDN attn_qkv / attn_gate / ssm_alpha / ssm_beta / ssm_out converted,
ssm_conv1d, ssm_a, ssm_dt.bias and the norms kept, MTP block included,
128-wide ssm_out rows falling back): 69/69 identical for q2_k, q3_k_s,
q3_k_m, q3_k_l, iq4_nl, iq4_xs. Not covered by these inputs: the
n_gqa >= 4 attn_v rules (all three have n_gqa 2)."""
import ctypes, os, struct, subprocess, sys

FTYPE = {"q8_0": 7, "q4_0": 2, "q4_1": 3, "q5_0": 8, "q5_1": 9, "q4_k": 14, "q5_k": 16,
         "q6_k": 18, "q4_k_m": 15, "q3_k": 11, "q2_k": 10, "q3_k_s": 11, "q3_k_m": 12, "q3_k_l": 13,
         "iq4_nl": 25, "iq4_xs": 30}
MIXES = {"q4_k_m", "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "iq4_nl", "iq4_xs"}


class Params(ctypes.Structure):  # llama.h llama_model_quantize_params (this release)
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int32),
                ("output_tensor_type", ctypes.c_int32), ("token_embedding_type", ctypes.c_int32),
                ("allow_requantize", ctypes.c_bool), ("quantize_output_tensor", ctypes.c_bool),
                ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool), ("keep_split", ctypes.c_bool),
                ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


def tensors(path):
    """name -> (type, shape, bytes) from a GGUF file (minimal reader)."""
    data = open(path, "rb").read()
    pos = 4
    version, n_t, n_kv = struct.unpack_from("<IQQ", data, pos)
    pos += 20
    def s():
        nonlocal pos
        (n,) = struct.unpack_from("<Q", data, pos); pos += 8
        v = data[pos:pos + n]; pos += n
        return v.decode()
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    align = 32
    def val(t):
        nonlocal pos
        if t in sizes:
            v = data[pos:pos + sizes[t]]; pos += sizes[t]; return v
        if t == 8:
            return s()
        et, n = struct.unpack_from("<IQ", data, pos); pos += 12
        return [val(et) for _ in range(n)]
    for _ in range(n_kv):
        k = s(); (t,) = struct.unpack_from("<I", data, pos); pos += 4
        v = val(t)
        if k == "general.alignment":
            align = struct.unpack("<I", v)[0]
    infos = []
    for _ in range(n_t):
        name = s(); (nd,) = struct.unpack_from("<I", data, pos); pos += 4
        ne = struct.unpack_from("<%dQ" % nd, data, pos); pos += 8 * nd
        t, off = struct.unpack_from("<IQ", data, pos); pos += 12
        infos.append((name, t, ne, off))
    base = (pos + align - 1) // align * align
    offs = sorted(o for _, _, _, o in infos) + [len(data) - base]
    out = {}
    for name, t, ne, off in infos:
        end = min(o for o in offs if o > off)
        out[name] = (t, ne, data[base + off: base + end])
    return out


def main():
    lib_path, specdec, inp, work = sys.argv[1:5]
    lib = ctypes.CDLL(lib_path)
    lib.llama_model_quantize_default_params.restype = Params
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
    bad = 0
    for arg in sys.argv[5:]:
        typ, pure = arg.split("+")[0], arg.endswith("+pure") or arg.split("+")[0] not in MIXES
        ref, ours = os.path.join(work, "llama-%s.gguf" % arg), os.path.join(work, "ours-%s.gguf" % arg)
        p = lib.llama_model_quantize_default_params()
        p.ftype, p.nthread, p.pure = FTYPE[typ], 2, pure
        p.allow_requantize = True  # a quantized input is dequantized exactly alike by both
        rc = lib.llama_model_quantize(inp.encode(), ref.encode(), ctypes.byref(p))
        assert rc == 0, "llama_model_quantize failed: %d" % rc
        subprocess.run([specdec, "quantize"] + (["--pure"] if arg.endswith("+pure") else []) + [inp, ours, typ],
                       check=True, stdout=subprocess.DEVNULL)
        a, b = tensors(ref), tensors(ours)
        assert a.keys() == b.keys(), "tensor names differ"
        n_same = 0
        for name in a:
            ta, tb = a[name], b[name]
            # llama.cpp pads each tensor to the alignment; compare the real bytes
            n = min(len(ta[2]), len(tb[2]))
            same = ta[0] == tb[0] and ta[1] == tb[1] and ta[2][:n] == tb[2][:n]
            if not same:
                bad += 1
                print("%s %s: llama.cpp type %d, ours %d, bytes %s" % (
                    typ, name, ta[0], tb[0], "equal" if ta[2][:n] == tb[2][:n] else "differ"))
            n_same += same
        print("%s: %d/%d tensors identical (type, shape, bytes)" % (arg, n_same, len(a)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
