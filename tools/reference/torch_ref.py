#!/usr/bin/python3
"""Independent float64 reference forward for llama / qwen2 / qwen3 GGUF files.

usage: torch_ref.py MODEL.gguf --tokens 1,2,3 --out logits.f32 [--threads N]
  Writes S x n_vocab float32 little-endian logits, row s = the logits after token s
  (every position, causal, positions 0..S-1). Exit 0 ok, 1 runtime error, 2 usage error.

Written from the format and model definitions, sharing no code with the C engine:
  * GGUF v2/v3 container: llama.cpp docs/gguf.md (own parser below, numpy memmap for data).
  * Tensor types: F32, F16, BF16, Q8_0 (block of 32: f16 scale d, 32 x int8 q; x = d*q), Q4_0
    (block of 32: f16 d, 16 bytes; x[j] = d*((b[j] & 15) - 8), x[j+16] = d*((b[j] >> 4) - 8)),
    layouts as in llama.cpp ggml-common.h.
  * Graphs: llama.cpp src/models/{llama,qwen2,qwen3}.cpp. Pre-norm decoder:
      x += Wo . attn(rope(Q), rope(K), V);  x += Wdown . (silu(Wgate . n) * (Wup . n))
    RMSNorm with the file's epsilon; attention scale 1/sqrt(head_dim); grouped-query heads
    (query head h uses KV head h / (n_head / n_head_kv)).
    llama: RoPE "norm" mode, rotating adjacent pairs (2i, 2i+1); optional rope_freqs.weight
           divides theta (llama 3 style).
    qwen2: Q/K/V biases, RoPE NEOX mode, rotating (i, i + n_rot/2).
    qwen3: per-head RMSNorm of Q and K (attn_q_norm / attn_k_norm) before RoPE, NEOX mode.
  theta_i = pos * freq_base^(-2i/n_rot) for pair i; dims past n_rot are not rotated.
Weights are dequantized per layer to float64 and all arithmetic is float64.
"""
import argparse
import struct
import sys

import numpy as np
import torch

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_BF16 = 0, 1, 2, 8, 30
# ggml type -> (block elements, block bytes)
BLOCK = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_BF16: (1, 2), GGML_Q8_0: (32, 34),
         GGML_Q4_0: (32, 18)}


class GGUF:
    def __init__(self, path):
        self.data = np.memmap(path, dtype=np.uint8, mode="r")
        self.buf = memoryview(self.data)
        self.pos = 0
        if bytes(self.buf[0:4]) != b"GGUF":
            raise ValueError("not a GGUF file (bad magic)")
        self.pos = 4
        version = self._take("<I")
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        n_tensors, n_kv = self._take("<Q"), self._take("<Q")
        self.kv = {}
        for _ in range(n_kv):
            key = self._string()
            self.kv[key] = self._value(self._take("<I"))
        self.tensors = {}
        for _ in range(n_tensors):
            name = self._string()
            nd = self._take("<I")
            ne = [self._take("<Q") for _ in range(nd)]
            self.tensors[name] = (ne, self._take("<I"), self._take("<Q"))
        align = self.kv.get("general.alignment", 32)
        self.data_start = self.pos + (-self.pos) % align

    def _take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError(f"truncated at offset {self.pos}")
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return v

    def _string(self):
        n = self._take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError(f"string past end at offset {self.pos}")
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return s

    def _value(self, t):
        if t in SCALARS:
            return self._take(SCALARS[t])
        if t == 8:
            return self._string()
        if t == 9:
            et, n = self._take("<I"), self._take("<Q")
            return [self._value(et) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {t}")

    def has(self, name):
        return name in self.tensors

    def tensor(self, name):
        """float64 torch tensor with numpy shape = reversed ne (ne[0] innermost)."""
        if name not in self.tensors:
            raise KeyError(f"missing tensor {name}")
        ne, t, off = self.tensors[name]
        if t not in BLOCK:
            raise ValueError(f"{name}: unsupported ggml type {t}")
        n = int(np.prod(ne))
        be, bb = BLOCK[t]
        if n % be:
            raise ValueError(f"{name}: {n} elements not a multiple of block {be}")
        nbytes = n // be * bb
        start = self.data_start + off
        if start + nbytes > len(self.data):
            raise ValueError(f"{name}: data past end of file")
        raw = np.asarray(self.data[start:start + nbytes])
        x = dequantize(raw, t, n)
        return torch.from_numpy(x.reshape(list(reversed(ne))))


def dequantize(raw, t, n):
    if t == GGML_F32:
        return raw.view("<f4").astype(np.float64)
    if t == GGML_F16:
        return raw.view("<f2").astype(np.float64)
    if t == GGML_BF16:
        u = raw.view("<u2").astype(np.uint32) << 16
        return u.view("<f4").astype(np.float64)
    blocks = raw.reshape(-1, BLOCK[t][1])
    d = blocks[:, 0:2].copy().view("<f2").astype(np.float64)  # (nb, 1)
    if t == GGML_Q8_0:
        q = blocks[:, 2:34].view(np.int8).astype(np.float64)
        return (d * q).reshape(n)
    if t == GGML_Q4_0:
        b = blocks[:, 2:18]
        lo = (b & 15).astype(np.float64) - 8
        hi = (b >> 4).astype(np.float64) - 8
        return (d * np.concatenate([lo, hi], axis=1)).reshape(n)
    raise ValueError(f"unsupported ggml type {t}")


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, pos, n_rot, base, neox, freq_factors=None):
    """x: (S, H, D) float64; rotate the first n_rot dims of each head."""
    half = n_rot // 2
    inv = base ** (-torch.arange(0, half, dtype=torch.float64) * 2 / n_rot)
    if freq_factors is not None:
        inv = inv / freq_factors[:half]
    ang = pos[:, None].double() * inv[None, :]           # (S, half)
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
    out = x.clone()
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half:n_rot] = b * cos + a * sin
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = a * cos - b * sin
        out[..., 1:n_rot:2] = b * cos + a * sin
    return out


def forward(g, tokens, kv_f16=False):
    arch = g.kv.get("general.architecture")
    if arch not in ("llama", "qwen2", "qwen3"):
        raise ValueError(f"unsupported architecture {arch!r}")
    kv = lambda k, d=None: g.kv.get(f"{arch}.{k}", d)  # noqa: E731
    n_layer = kv("block_count")
    n_embd = kv("embedding_length")
    n_head = kv("attention.head_count")
    n_head_kv = kv("attention.head_count_kv", n_head)
    if None in (n_layer, n_embd, n_head) or isinstance(n_head_kv, list):
        raise ValueError("missing or per-layer hyperparameters")
    head_dim = kv("attention.key_length", n_embd // n_head)
    v_dim = kv("attention.value_length", head_dim)
    eps = kv("attention.layer_norm_rms_epsilon", 1e-5)
    base = kv("rope.freq_base", 10000.0)
    n_rot = kv("rope.dimension_count", head_dim)
    neox = arch != "llama"
    ff = g.tensor("rope_freqs.weight") if g.has("rope_freqs.weight") else None
    emb = g.tensor("token_embd.weight")                 # (n_vocab, n_embd)
    n_vocab = emb.shape[0]
    if any(t < 0 or t >= n_vocab for t in tokens):
        raise ValueError(f"token id out of range [0, {n_vocab})")
    S = len(tokens)
    pos = torch.arange(S)
    x = emb[torch.tensor(tokens)]
    mask = torch.ones(S, S, dtype=torch.bool).triu(1)
    group = n_head // n_head_kv
    for i in range(n_layer):
        t = lambda n: g.tensor(f"blk.{i}.{n}")  # noqa: E731
        h = rms_norm(x, t("attn_norm.weight"), eps)
        q, k, v = h @ t("attn_q.weight").T, h @ t("attn_k.weight").T, h @ t("attn_v.weight").T
        if arch == "qwen2":
            q, k, v = q + t("attn_q.bias"), k + t("attn_k.bias"), v + t("attn_v.bias")
        q = q.view(S, n_head, head_dim)
        k = k.view(S, n_head_kv, head_dim)
        v = v.view(S, n_head_kv, v_dim)
        if arch == "qwen3":
            q = rms_norm(q, t("attn_q_norm.weight"), eps)
            k = rms_norm(k, t("attn_k_norm.weight"), eps)
        q, k = rope(q, pos, n_rot, base, neox, ff), rope(k, pos, n_rot, base, neox, ff)
        if kv_f16:  # an f16 KV cache (llama.cpp's default, specdec's): keys and values rounded once
            k, v = k.to(torch.float16).to(torch.float64), v.to(torch.float16).to(torch.float64)
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        att = torch.einsum("shd,thd->hst", q, k) / (head_dim ** 0.5)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        a = torch.einsum("hst,thd->shd", att, v).reshape(S, n_head * v_dim)
        x = x + a @ t("attn_output.weight").T
        h = rms_norm(x, t("ffn_norm.weight"), eps)
        gate = torch.nn.functional.silu(h @ t("ffn_gate.weight").T)
        x = x + (gate * (h @ t("ffn_up.weight").T)) @ t("ffn_down.weight").T
    x = rms_norm(x, g.tensor("output_norm.weight"), eps)
    out = g.tensor("output.weight") if g.has("output.weight") else emb
    return x @ out.T


def main(argv):
    ap = argparse.ArgumentParser(description="float64 reference logits for a GGUF model")
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", required=True, help="output file: S x n_vocab float32 LE")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kv-f16", action="store_true",
                    help="round keys (after RoPE) and values to IEEE half, as an f16 KV cache stores them")
    try:
        a = ap.parse_args(argv)
        tokens = [int(s) for s in a.tokens.split(",") if s.strip() != ""]
        if not tokens:
            raise ValueError("no tokens")
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    except ValueError as e:
        print(f"torch_ref: bad --tokens: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, a.threads))
    try:
        logits = forward(GGUF(a.model), tokens, a.kv_f16)
        logits.numpy().astype("<f4").tofile(a.out)
    except (OSError, ValueError, KeyError, RuntimeError, IndexError) as e:
        print(f"torch_ref: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
