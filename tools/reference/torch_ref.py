#!/usr/bin/python3
"""Independent float64 reference forward for llama / qwen2 / qwen3 / qwen3moe / qwen35 / qwen35moe GGUF files.

usage: torch_ref.py MODEL.gguf --tokens 1,2,3 --out logits.f32 [--threads N] [--kv-f16]
                    [--mtp-out mtp.f32]
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
    qwen3moe (src/models/qwen3moe.cpp, llama-graph.cpp build_moe_ffn; docs/MOE.md): qwen3 with
      the FFN = routed experts: p = softmax(ffn_gate_inp . n), the expert_used_count largest
      (ties to the lower id), weights p_j / sum p_j (sum clamped at 2^-14), each expert
      down_e . (silu(gate_e . n) * up_e . n) from the 3-D ffn_{gate,up,down}_exps, summed.
  theta_i = pos * freq_base^(-2i/n_rot) for pair i; dims past n_rot are not rotated.
  qwen35 (hybrid; llama.cpp src/models/qwen35.cpp, delta-net-base.cpp): trunk = block_count -
    nextn_predict_layers layers, each Gated DeltaNet (attention.recurrent_layers, else
    (i+1) % full_attention_interval != 0) or gated attention; pre-FFN post_attention_norm.
    Gated attention: attn_q = per head [q | gate]; RMSNorm q, k; IMROPE with text positions
    (p, p, p, 0) on the first n_rot dims (NEOX pairs); output * sigmoid(gate).
    Gated DeltaNet, token by token from a zero state: depthwise causal conv over the raw
    attn_qkv output (window = last K-1 raw inputs), SiLU; q, k L2-normalised (eps inside the sqrt);
    V head h uses Q/K head h mod H_k; beta = sigmoid, g = softplus(alpha + dt_bias) * ssm_a;
    S <- e^g S, delta = beta (v - S^T k), S += k delta^T, o = S^T q / sqrt(S_k); RMSNorm(o; ssm_norm)
    * SiLU(z); ssm_out. The MTP block (graph_mtp) on request (--mtp-out).
  qwen35moe (src/models/qwen35moe.cpp): qwen35 with every FFN (the MTP block's too) = the routed
    experts of qwen3moe + sigmoid(ffn_gate_inp_shexp . n) * the shared expert (ffn_*_shexp, SwiGLU).
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


def embed(g, tokens):
    """token_embd.weight (n_vocab, n_embd) and its rows for tokens (S, n_embd); an id outside
    [0, n_vocab) is a ValueError."""
    emb = g.tensor("token_embd.weight")
    n_vocab = emb.shape[0]
    if any(t < 0 or t >= n_vocab for t in tokens):
        raise ValueError(f"token id out of range [0, {n_vocab})")
    return emb, emb[torch.tensor(tokens)]


def forward(g, tokens, kv_f16=False):
    arch = g.kv.get("general.architecture")
    if arch not in ("llama", "qwen2", "qwen3", "qwen3moe"):
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
    emb, x = embed(g, tokens)
    S = len(tokens)
    pos = torch.arange(S)
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
        if arch in ("qwen3", "qwen3moe"):
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
        if arch == "qwen3moe":
            x = x + moe_ffn(g, i, h, kv("expert_count"), kv("expert_used_count"))
            continue
        gate = torch.nn.functional.silu(h @ t("ffn_gate.weight").T)
        x = x + (gate * (h @ t("ffn_up.weight").T)) @ t("ffn_down.weight").T
    x = rms_norm(x, g.tensor("output_norm.weight"), eps)
    out = g.tensor("output.weight") if g.has("output.weight") else emb
    return x @ out.T


def moe_ffn(g, i, h, E, k):
    """Routed experts of layer i on normed input h (S, n_embd) -> (S, n_embd)."""
    if not isinstance(E, int) or not isinstance(k, int) or E < 1 or not 1 <= k <= E:
        raise ValueError(f"bad expert_count {E!r} / expert_used_count {k!r}")
    t = lambda n: g.tensor(f"blk.{i}.{n}")  # noqa: E731
    router, gate, up, down = (t("ffn_gate_inp.weight"), t("ffn_gate_exps.weight"),
                              t("ffn_up_exps.weight"), t("ffn_down_exps.weight"))
    if router.shape[0] != E or gate.shape[0] != E or up.shape != gate.shape or down.shape[0] != E:
        raise ValueError(f"blk.{i}: expert tensor shapes disagree with expert_count {E}")
    p = (h @ router.T).softmax(-1)
    y = torch.zeros_like(h)
    for s in range(h.shape[0]):
        # stable sort on -p: equal probabilities keep the lower expert id first
        sel = sorted(range(E), key=lambda e: -float(p[s, e]))[:k]
        w = p[s, sel]
        w = w / max(float(w.sum()), 6.103515625e-5)
        for j, e in enumerate(sel):
            a = torch.nn.functional.silu(gate[e] @ h[s]) * (up[e] @ h[s])
            y[s] += w[j] * (down[e] @ a)
    return y


def rope_sections_mask(n_rot, sections):
    """qwen35's IMROPE for text positions (p, p, p, 0): which of the n_rot/2 pairs rotate by p.
    ggml-cpu ops.cpp ggml_mrope_cache_init: pair i has sector i mod sum(sections); sector % 3 == 1
    (below 3*sections[1]) takes stream h, == 2 (below 3*sections[2]) stream w, == 0 (below
    3*sections[0]) stream t, anything else the 4th stream, whose text position is 0 (no rotation)."""
    total = sum(sections)
    if total <= 0:
        raise ValueError("rope.dimension_sections sum to 0")
    rot = []
    for i in range(n_rot // 2):
        sec = i % total
        rot.append((sec % 3 == 1 and sec < 3 * sections[1]) or (sec % 3 == 2 and sec < 3 * sections[2])
                   or (sec % 3 == 0 and sec < 3 * sections[0]))
    return torch.tensor(rot, dtype=torch.float64)


def rope_qwen35(x, pos, n_rot, base, rot_mask):
    """NEOX pairs (i, i + n_rot/2) over the first n_rot dims; pairs with rot_mask 0 see position 0."""
    half = n_rot // 2
    inv = base ** (-torch.arange(0, half, dtype=torch.float64) * 2 / n_rot)
    ang = pos[:, None].double() * inv[None, :] * rot_mask[None, :]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
    out = x.clone()
    a, b = x[..., :half], x[..., half:n_rot]
    out[..., :half] = a * cos - b * sin
    out[..., half:n_rot] = b * cos + a * sin
    return out


def softplus_ggml(x):
    """ggml-cpu unary-ops.cpp: x > 20 ? x : log(1 + e^x)."""
    return torch.where(x > 20, x, torch.log1p(torch.exp(torch.clamp(x, max=20))))


class Qwen35Params:
    """Hyperparameters of a qwen35 file (llama.cpp src/models/qwen35.cpp load_arch_hparams)."""

    def __init__(self, g):
        arch = g.kv.get("general.architecture")
        kv = lambda k, d=None: g.kv.get(f"{arch}.{k}", d)  # noqa: E731
        self.moe = arch == "qwen35moe"
        self.n_expert, self.n_expert_used = kv("expert_count"), kv("expert_used_count")
        self.n_all = kv("block_count")
        self.n_mtp = kv("nextn_predict_layers", 0)
        self.n_embd = kv("embedding_length")
        self.n_head = kv("attention.head_count")
        self.n_head_kv = kv("attention.head_count_kv", self.n_head)
        self.eps = kv("attention.layer_norm_rms_epsilon")
        self.sections = kv("rope.dimension_sections")
        ssm = [kv("ssm." + k) for k in ("conv_kernel", "inner_size", "state_size", "time_step_rank",
                                         "group_count")]
        if None in (self.n_all, self.n_embd, self.n_head, self.eps, self.sections) or None in ssm:
            raise ValueError("qwen35: missing required hyperparameter")
        self.K, inner, self.S, self.Hv, self.Hk = ssm
        if self.K < 1 or self.Hk < 1 or self.Hv % self.Hk or inner != self.S * self.Hv:
            raise ValueError("qwen35: inconsistent ssm.* sizes")
        self.D = kv("attention.key_length", self.n_embd // self.n_head)
        if kv("attention.value_length", self.D) != self.D:
            raise ValueError("qwen35: key_length != value_length")
        self.n_rot = kv("rope.dimension_count", self.D)
        self.base = kv("rope.freq_base", 10000.0)
        self.n_trunk = self.n_all - self.n_mtp
        rec = kv("attention.recurrent_layers")
        if rec is not None:
            if len(rec) != self.n_all:
                raise ValueError("qwen35: attention.recurrent_layers has the wrong length")
            self.recurrent = [bool(r) for r in rec]
        else:
            iv = kv("full_attention_interval", 4)
            self.recurrent = [i < self.n_trunk and (i + 1) % iv != 0 for i in range(self.n_all)]
        self.rot_mask = rope_sections_mask(self.n_rot, self.sections)


def gated_attention(g, hp, i, x, pos, kv_f16):
    """One full-attention mixer on normed input x (S, n_embd), §2.1 of the fact sheet."""
    t = lambda n: g.tensor(f"blk.{i}.{n}")  # noqa: E731
    S, D, H, Hkv = x.shape[0], hp.D, hp.n_head, hp.n_head_kv
    qg = (x @ t("attn_q.weight").T).view(S, H, 2 * D)
    q, gate = qg[..., :D], qg[..., D:].reshape(S, H * D)
    k = (x @ t("attn_k.weight").T).view(S, Hkv, D)
    v = (x @ t("attn_v.weight").T).view(S, Hkv, D)
    q, k = rms_norm(q, t("attn_q_norm.weight"), hp.eps), rms_norm(k, t("attn_k_norm.weight"), hp.eps)
    q = rope_qwen35(q, pos, hp.n_rot, hp.base, hp.rot_mask)
    k = rope_qwen35(k, pos, hp.n_rot, hp.base, hp.rot_mask)
    if kv_f16:
        k, v = k.to(torch.float16).to(torch.float64), v.to(torch.float16).to(torch.float64)
    grp = H // Hkv
    k, v = k.repeat_interleave(grp, dim=1), v.repeat_interleave(grp, dim=1)
    att = torch.einsum("shd,thd->hst", q, k) / (D ** 0.5)
    att = att.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
    o = torch.einsum("hst,thd->shd", att, v).reshape(S, H * D) * torch.sigmoid(gate)
    return o @ t("attn_output.weight").T


def gated_delta_net(g, hp, i, x):
    """One Gated DeltaNet mixer on normed input x (S, n_embd), token by token (§2.3), zero state."""
    t = lambda n: g.tensor(f"blk.{i}.{n}")  # noqa: E731
    T, S, Hk, Hv, K = x.shape[0], hp.S, hp.Hk, hp.Hv, hp.K
    mixed = x @ t("attn_qkv.weight").T                      # (T, conv_dim)
    z = (x @ t("attn_gate.weight").T).view(T, Hv, S)
    beta = torch.sigmoid(x @ t("ssm_beta.weight").T)        # (T, Hv)
    gdecay = softplus_ggml(x @ t("ssm_alpha.weight").T + t("ssm_dt.bias")) * t("ssm_a")
    w = t("ssm_conv1d.weight")                              # (conv_dim, K)
    conv_dim = mixed.shape[1]
    if w.shape != (conv_dim, K):
        raise ValueError(f"blk.{i}.ssm_conv1d.weight: shape {tuple(w.shape)} != {(conv_dim, K)}")
    window = torch.zeros(K - 1, conv_dim, dtype=torch.float64)  # last K-1 raw inputs, oldest first
    state = torch.zeros(Hv, S, S, dtype=torch.float64)         # [head][key i][value j]
    out = torch.empty(T, Hv, S, dtype=torch.float64)
    kd = Hk * S
    for s in range(T):
        u = torch.cat([window, mixed[s:s + 1]], 0)            # (K, conv_dim), time-ordered
        y = torch.nn.functional.silu((u * w.T).sum(0))
        window = u[1:]
        q = y[:kd].view(Hk, S)
        k = y[kd:2 * kd].view(Hk, S)
        v = y[2 * kd:].view(Hv, S)
        q = q / torch.sqrt(q.pow(2).sum(-1, keepdim=True) + hp.eps)
        k = k / torch.sqrt(k.pow(2).sum(-1, keepdim=True) + hp.eps)
        for h in range(Hv):
            kh, qh = k[h % Hk], q[h % Hk]                     # tiled V heads
            st = state[h] * torch.exp(gdecay[s, h])
            pred = kh @ st                                    # sum_i S[i][j] k_i
            delta = beta[s, h] * (v[h] - pred)
            st = st + torch.outer(kh, delta)
            state[h] = st
            out[s, h] = (qh @ st) / (S ** 0.5)
    o = rms_norm(out, t("ssm_norm.weight"), hp.eps) * torch.nn.functional.silu(z)
    return o.reshape(T, Hv * S) @ t("ssm_out.weight").T


def ffn(g, i, x, eps, hp=None):
    t = lambda n: g.tensor(f"blk.{i}.{n}")  # noqa: E731
    h = rms_norm(x, t("post_attention_norm.weight"), eps)
    if hp is not None and hp.moe:
        shexp = (torch.nn.functional.silu(h @ t("ffn_gate_shexp.weight").T) * (h @ t("ffn_up_shexp.weight").T)) \
            @ t("ffn_down_shexp.weight").T
        gate = torch.sigmoid(h @ t("ffn_gate_inp_shexp.weight").reshape(-1))[:, None]
        return x + moe_ffn(g, i, h, hp.n_expert, hp.n_expert_used) + gate * shexp
    return x + (torch.nn.functional.silu(h @ t("ffn_gate.weight").T) * (h @ t("ffn_up.weight").T)) \
        @ t("ffn_down.weight").T


def forward_qwen35(g, tokens, kv_f16=False, want_mtp=False):
    """Logits (S, n_vocab) of the trunk; with want_mtp also the MTP logits (S-1, n_vocab): row t
    from (token t+1, post-output_norm hidden h_t), MTP position t+1 (qwen35.cpp graph_mtp)."""
    hp = Qwen35Params(g)
    emb, x = embed(g, tokens)
    S = len(tokens)
    pos = torch.arange(S)
    for i in range(hp.n_trunk):
        h = rms_norm(x, g.tensor(f"blk.{i}.attn_norm.weight"), hp.eps)
        x = x + (gated_delta_net(g, hp, i, h) if hp.recurrent[i]
                 else gated_attention(g, hp, i, h, pos, kv_f16))
        x = ffn(g, i, x, hp.eps, hp)
    hidden = rms_norm(x, g.tensor("output_norm.weight"), hp.eps)
    head = g.tensor("output.weight") if g.has("output.weight") else emb
    logits = hidden @ head.T
    if not want_mtp:
        return logits, None
    if hp.n_mtp != 1 or S < 2:
        raise ValueError("--mtp-out needs a file with nextn_predict_layers = 1 and >= 2 tokens")
    i = hp.n_trunk
    t = lambda n: g.tensor(f"blk.{i}.nextn.{n}")  # noqa: E731
    memb = t("embed_tokens.weight") if g.has(f"blk.{i}.nextn.embed_tokens.weight") else emb
    e = rms_norm(memb[torch.tensor(tokens[1:])], t("enorm.weight"), hp.eps)
    c = torch.cat([e, rms_norm(hidden[:-1], t("hnorm.weight"), hp.eps)], -1) @ t("eh_proj.weight").T
    h = rms_norm(c, g.tensor(f"blk.{i}.attn_norm.weight"), hp.eps)
    c = ffn(g, i, c + gated_attention(g, hp, i, h, pos[1:], kv_f16), hp.eps, hp)
    norm = (t("shared_head_norm.weight") if g.has(f"blk.{i}.nextn.shared_head_norm.weight")
            else g.tensor("output_norm.weight"))
    mhead = t("shared_head_head.weight") if g.has(f"blk.{i}.nextn.shared_head_head.weight") else head
    return logits, rms_norm(c, norm, hp.eps) @ mhead.T


def logits_of(g, tokens, kv_f16):
    if g.kv.get("general.architecture") in ("qwen35", "qwen35moe"):
        return forward_qwen35(g, tokens, kv_f16)[0]
    return forward(g, tokens, kv_f16)


def greedy(g, tokens, n, kv_f16):
    """Greedy continuation (argmax, lowest id on an exact tie as llama.cpp's greedy sampler)."""
    out, margins = [], []
    toks = list(tokens)
    for _ in range(n):
        last = logits_of(g, toks, kv_f16)[-1]
        top = torch.topk(last, 2)
        nxt = int(torch.argmax(last))
        out.append(nxt)
        margins.append(float(top.values[0] - top.values[1]))
        toks.append(nxt)
    print(" ".join(map(str, out)))
    print("margins: " + " ".join(f"{m:.4g}" for m in margins), file=sys.stderr)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description="float64 reference logits for a GGUF model")
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", help="output file: S x n_vocab float32 LE (required without --greedy)")
    ap.add_argument("--greedy", type=int, default=0, metavar="N",
                    help="instead: continue the tokens greedily for N steps (full recompute per step);"
                         " prints the N ids on stdout and per step the top-1 - top-2 logit margin on"
                         " stderr")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mtp-out", help="qwen35 with an MTP block: also write its (S-1) x n_vocab "
                    "logits, row t predicting token t+2 from token t+1 and the trunk's h_t")
    ap.add_argument("--kv-f16", action="store_true",
                    help="round keys (after RoPE) and values to IEEE half, as an f16 KV cache stores them")
    try:
        a = ap.parse_args(argv)
        tokens = [int(s) for s in a.tokens.split(",") if s.strip() != ""]
        if not tokens:
            raise ValueError("no tokens")
        if a.greedy < 0 or (a.greedy == 0 and not a.out):
            raise ValueError("need --out, or --greedy N with N > 0")
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    except ValueError as e:
        print(f"torch_ref: bad --tokens: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, a.threads))
    try:
        g = GGUF(a.model)
        if a.greedy:
            return greedy(g, tokens, a.greedy, a.kv_f16)
        if g.kv.get("general.architecture") in ("qwen35", "qwen35moe"):
            logits, mtp = forward_qwen35(g, tokens, a.kv_f16, a.mtp_out is not None)
            if mtp is not None:
                mtp.numpy().astype("<f4").tofile(a.mtp_out)
        else:
            if a.mtp_out:
                raise ValueError("--mtp-out is only for qwen35 / qwen35moe files")
            logits = forward(g, tokens, a.kv_f16)
        logits.numpy().astype("<f4").tofile(a.out)
    except (OSError, ValueError, KeyError, RuntimeError, IndexError) as e:
        print(f"torch_ref: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
