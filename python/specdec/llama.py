"""Llama: llama-cpp-python's high-level API over libspecdec.

A script written against llama-cpp-python's documented `Llama` class runs
against this one with `from specdec import Llama` (and LlamaGrammar,
LlamaPromptLookupDecoding) in place of `from llama_cpp import ...`. The dicts
returned are the OpenAI shapes llama-cpp-python returns (choices, usage,
stream chunks), and what they hold is what `specdec serve` answers for the
same request: the same chat template (the model's own, run by the library),
the same tokenization, sampling, stop strings, penalties, grammar,
log-probabilities, reasoning split and tool-call parser, all the library's
(docs/PYTHON.md). Speculation is on by default (spec="auto", as `specdec
generate`) and never changes the output.

Keywords llama-cpp-python has that only tune where and how fast it runs
(n_gpu_layers, use_mmap, logits_all, verbose, ...) are accepted and have no
effect. Keywords that would change the output and that we do not implement
(typical_p != 1, mirostat, tfs_z != 1, echo, suffix, logits_processor,
LoRA, rope scaling, ...) raise ValueError naming the keyword: never ignored.
"""
import ctypes
import json
import random
import time
import uuid

from . import _lib as _c
from . import Context, Grammar, Model, SpecdecError, OPTIONS
from .llama_grammar import LlamaGrammar, _schema_gbnf
from .llama_speculative import LlamaPromptLookupDecoding

__all__ = ["Llama", "LlamaGrammar", "LlamaPromptLookupDecoding", "LLAMA_DEFAULT_SEED"]

LLAMA_DEFAULT_SEED = 0xFFFFFFFF  # llama-cpp-python's "pick a random seed"

# Keywords of llama-cpp-python's Llama() that only tune the machine side:
# accepted and without effect here (the CPU engine has no GPU, mmaps always,
# and gives log-probabilities without logits_all).
_IGNORED_INIT = {"n_gpu_layers", "split_mode", "main_gpu", "tensor_split", "rpc_servers", "use_mmap", "use_mlock",
                 "n_threads_batch", "n_ubatch", "logits_all", "offload_kqv", "flash_attn", "op_offload", "swa_full",
                 "numa", "verbose", "no_perf", "kv_unified", "cache"}
# Keywords that would change what the model computes, taken only at their
# llama-cpp-python defaults (anything else raises ValueError).
_DEFAULT_ONLY_INIT = {"vocab_only": False, "kv_overrides": None, "rope_scaling_type": -1, "pooling_type": -1,
                      "rope_freq_base": 0.0, "rope_freq_scale": 0.0, "yarn_ext_factor": -1.0,
                      "yarn_attn_factor": 1.0, "yarn_beta_fast": 32.0, "yarn_beta_slow": 1.0, "yarn_orig_ctx": 0,
                      "embedding": False, "lora_base": None, "lora_path": None, "lora_scale": 1.0,
                      "chat_handler": None, "tokenizer": None, "spm_infill": False}
# ggml type ids (llama-cpp-python's type_k / type_v take them) -> our KV cache names.
_GGML_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 20: "iq4_nl", 30: "bf16"}
# chat_format names of llama-cpp-python -> the library's built-in formatters.
_CHAT_FORMATS = {"chatml": "chatml", "qwen": "chatml", "llama-3": "llama3", "llama3": "llama3", "llama31": "llama31",
                 "qwen3": "qwen3", "qwen35": "qwen35", "qwen36": "qwen36"}

_COMPLETION_DEFAULTS = dict(max_tokens=16, temperature=0.8, top_p=0.95, min_p=0.05, top_k=40, repeat_penalty=1.0,
                            presence_penalty=0.0, frequency_penalty=0.0)
_CHAT_DEFAULTS = dict(max_tokens=None, temperature=0.2, top_p=0.95, min_p=0.05, top_k=40, repeat_penalty=1.0,
                      presence_penalty=0.0, frequency_penalty=0.0)
_LOGPROB_FLOOR = -9999.0  # what the server sends for a value that is not finite (JSON has no -inf)


def _refuse(name, why):
    return ValueError("%s: not supported by specdec.Llama (%s)" % (name, why))


def _check_sampling_extras(typical_p=1.0, tfs_z=1.0, mirostat_mode=0, mirostat_tau=5.0, mirostat_eta=0.1,
                           logits_processor=None, stopping_criteria=None, functions=None, function_call=None, **rest):
    """Sampling keywords of llama-cpp-python we do not implement: their
    defaults pass, other values raise ValueError; rest must be empty."""
    if rest:
        raise TypeError("unexpected keyword argument(s): %s" % ", ".join(sorted(rest)))
    if typical_p is not None and typical_p != 1.0:
        raise _refuse("typical_p", "locally typical sampling is not implemented; use 1.0")
    if tfs_z is not None and tfs_z != 1.0:
        raise _refuse("tfs_z", "tail-free sampling is not implemented; use 1.0")
    if mirostat_mode:
        raise _refuse("mirostat_mode", "mirostat is not implemented; use 0")
    if logits_processor is not None:
        raise _refuse("logits_processor", "the sampler runs in C inside the verifier; use logit_bias or grammar")
    if stopping_criteria is not None:
        raise _refuse("stopping_criteria", "use stop strings, or break out of a stream")
    if functions or function_call:
        raise _refuse("functions/function_call", "the deprecated forms of tools; use tools and tool_choice")


def _json_text(data):
    """bytes -> str as the server puts text in JSON: valid UTF-8 as it is,
    each byte of an invalid sequence as U+FFFD."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out, i, n = [], 0, len(data)
    while i < n:
        c = data[i]
        k = 1 if c < 0x80 else 2 if c & 0xE0 == 0xC0 else 3 if c & 0xF0 == 0xE0 else 4 if c & 0xF8 == 0xF0 else 0
        if k and i + k <= n:
            try:
                out.append(data[i:i + k].decode("utf-8"))
                i += k
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)


def _out(ptr, n):
    """A malloc'd buffer of n bytes from the library, copied and freed."""
    try:
        return ctypes.string_at(ptr, n) if n else b""
    finally:
        _c.lib().specdec_free(ptr)


class _Splitter:
    """specdec_reasoning: an answer's <think> section apart from its content."""

    def __init__(self, model, params):
        self._h, err = ctypes.c_void_p(), _c.Error()
        if _c.lib().specdec_reasoning_init(model._handle(), ctypes.byref(params), ctypes.byref(self._h),
                                           ctypes.byref(err)) != 0:
            self._h = None

    def feed(self, data, flush=False):
        """(reasoning bytes, content bytes) decided by data (or by the end)."""
        if not self._h:
            return b"", data
        r, nr = ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t()
        c, nc = ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t()
        L = _c.lib()
        if flush:
            L.specdec_reasoning_flush(self._h, ctypes.byref(r), ctypes.byref(nr), ctypes.byref(c), ctypes.byref(nc))
        else:
            L.specdec_reasoning_feed(self._h, data, len(data), ctypes.byref(r), ctypes.byref(nr), ctypes.byref(c),
                                     ctypes.byref(nc))
        return (ctypes.string_at(r, nr.value) if nr.value else b"", ctypes.string_at(c, nc.value) if nc.value else b"")

    def close(self):
        if self._h:
            _c.lib().specdec_reasoning_free(self._h)
            self._h = None


class _Calls:
    """specdec_tool_parser: an answer's content into text and tool calls."""

    def __init__(self, model, params, tools_json):
        self._h, err = ctypes.c_void_p(), _c.Error()
        data = tools_json.encode("utf-8")
        st = _c.lib().specdec_tool_parser_init(model._handle(), ctypes.byref(params), data, len(data),
                                               ctypes.byref(self._h), ctypes.byref(err))
        if st != 0:
            raise SpecdecError(st, err.message.decode("utf-8", "replace"))
        self.calls = []  # [{"id", "type", "function": {"name", "arguments"}}] as they complete
        self._base = "call_" + uuid.uuid4().hex[:16]

    def feed(self, data, flush=False):
        """Events of data: ("content", bytes), ("start", index, call dict) or
        ("args", index, bytes)."""
        ev, n = ctypes.POINTER(_c.ToolEvent)(), ctypes.c_size_t()
        L = _c.lib()
        st = (L.specdec_tool_parser_flush(self._h, ctypes.byref(ev), ctypes.byref(n)) if flush else
              L.specdec_tool_parser_feed(self._h, data, len(data), ctypes.byref(ev), ctypes.byref(n)))
        if st != 0:
            raise SpecdecError(st, "tool-call parser: out of memory")
        out = []
        for i in range(n.value):
            e = ev[i]
            text = ctypes.string_at(e.text, e.len) if e.len else b""
            if e.kind == _c.TOOL_EVENT_CONTENT:
                out.append(("content", text))
            elif e.kind == _c.TOOL_EVENT_START:
                call = {"id": "%s_%d" % (self._base, e.index), "type": "function",
                        "function": {"name": _json_text(text), "arguments": ""}}
                self.calls.append(call)
                out.append(("start", e.index, call))
            else:
                if 0 <= e.index < len(self.calls):
                    self.calls[e.index]["function"]["arguments"] += _json_text(text)
                out.append(("args", e.index, text))
        return out

    def message_calls(self):
        for call in self.calls:
            if not call["function"]["arguments"]:
                call["function"]["arguments"] = "{}"
        return self.calls

    def close(self):
        if self._h:
            _c.lib().specdec_tool_parser_free(self._h)
            self._h = None


class Llama:
    """A model (and an optional draft) loaded for llama-cpp-python's API.

    model_path: the GGUF file. n_ctx (512, 0 = the model's, at most 4096),
    n_batch, n_threads (None = the online cores), seed (LLAMA_DEFAULT_SEED =
    a random one per call unless a call gives its own), chat_format (None =
    the model's own template; or a built-in formatter: "chatml", "llama-3",
    "qwen3", "qwen35", "qwen36"), last_n_tokens_size (the repeat penalty's
    window), type_k / type_v (KV cache types: ggml ids or names),
    draft_model (LlamaPromptLookupDecoding -> our n-gram drafter).

    Our own keywords: draft_model_path (a draft GGUF, an EAGLE-3 head, an MTP
    sidecar or a DFlash drafter), spec ("auto" default: n-gram lookup plus
    the draft; "none", "ngram", "draft", "eagle3", "mtp", "suffix",
    "grammar", "dflash"), spec_options (a dict of other generation fields by
    specdec.OPTIONS names: draft_max, tree_nodes, gate, ...).
    """

    def __init__(self, model_path, *, n_ctx=512, n_batch=512, n_threads=None, seed=LLAMA_DEFAULT_SEED,
                 chat_format=None, draft_model=None, last_n_tokens_size=64, type_k=None, type_v=None,
                 draft_model_path=None, spec="auto", spec_options=None, **kwargs):
        for k in list(kwargs):
            if k in _IGNORED_INIT:
                kwargs.pop(k)
            elif k in _DEFAULT_ONLY_INIT:
                v = kwargs.pop(k)
                if v != _DEFAULT_ONLY_INIT[k]:
                    raise _refuse(k, "only its default %r is taken" % (_DEFAULT_ONLY_INIT[k],))
        if kwargs:
            raise TypeError("Llama() got unexpected keyword argument(s): %s" % ", ".join(sorted(kwargs)))
        self.model_path = model_path
        self._seed = seed
        self._template = None
        if chat_format is not None:
            if chat_format not in _CHAT_FORMATS:
                raise _refuse("chat_format=%r" % chat_format, "the formats are None (the model's own template), %s"
                              % ", ".join(sorted(_CHAT_FORMATS)))
            self._template = _CHAT_FORMATS[chat_format]
        self.chat_format = chat_format
        gen = {"spec": spec, "repeat_last_n": last_n_tokens_size}
        if draft_model is not None:
            if not isinstance(draft_model, LlamaPromptLookupDecoding):
                raise _refuse("draft_model", "only LlamaPromptLookupDecoding (our n-gram drafter) runs here; a draft "
                              "GGUF goes in draft_model_path=")
            gen.update(spec="ngram", ngram_min=1, ngram_max=draft_model.max_ngram_size,
                       draft_max=draft_model.num_pred_tokens)
        for k, v in (spec_options or {}).items():
            if k not in OPTIONS or k in ("grammar", "logprobs", "logit_bias", "stop", "temperature", "top_k", "top_p",
                                         "min_p", "seed", "n_predict", "presence_penalty", "frequency_penalty",
                                         "repeat_penalty"):
                raise _refuse("spec_options[%r]" % k, "spec_options takes the drafting fields of specdec.OPTIONS; "
                              "sampling goes in each call's keywords")
            gen[k] = v
        self._gen = gen
        kv = [self._cache_type(t, name) for t, name in ((type_k, "type_k"), (type_v, "type_v"))]
        self._model = Model(model_path)
        self._draft = None
        try:
            self._draft = Model(draft_model_path) if draft_model_path is not None else None
            self._ctx = Context(self._model, self._draft, n_ctx, n_batch, n_threads or 0, kv[0], kv[1])
            self._ctx.check(**gen)
        except BaseException:
            self.close()
            raise
        self.n_tokens = 0
        self.last_stats = None  # specdec.Stats of the last call (speculation figures)

    @staticmethod
    def _cache_type(t, name):
        if t is None:
            return "f16"
        if isinstance(t, int):
            if t not in _GGML_TYPES:
                raise _refuse("%s=%d" % (name, t), "KV cache types: %s" % ", ".join(sorted(_GGML_TYPES.values())))
            return _GGML_TYPES[t]
        return t

    # ---- model facts, tokens ----

    def close(self):
        for name in ("_ctx", "_draft", "_model"):
            h = getattr(self, name, None)
            if h is not None:
                h.close()
                setattr(self, name, None)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        raise _refuse("Llama.from_pretrained", "nothing is downloaded; give model_path= a GGUF file")

    def create_embedding(self, *args, **kwargs):
        raise _refuse("create_embedding", "the engine generates text; it has no embedding output")

    def embed(self, *args, **kwargs):
        raise _refuse("embed", "the engine generates text; it has no embedding output")

    def n_ctx(self):
        return self._ctx.n_ctx

    def n_vocab(self):
        return self._model.n_vocab

    def token_bos(self):
        return self._model.token_bos

    def token_eos(self):
        return self._model.token_eos

    @property
    def metadata(self):
        return {k: v for k, v in (("general.name", self._model.name), ("general.architecture", self._model.arch),
                                  ("tokenizer.chat_template", self._model.chat_template)) if v is not None}

    def set_seed(self, seed):
        self._seed = seed

    def reset(self):
        self._ctx.reset()
        self.n_tokens = 0

    def tokenize(self, text, add_bos=True, special=False):
        """llama-cpp-python's tokenize: text is bytes (str is taken too);
        add_bos adds BOS (and EOS) as the model asks; special parses
        control-token texts."""
        return self._model.tokenize(text, add_bos, special)

    def detokenize(self, tokens, prev_tokens=None, special=False):
        """The bytes of tokens (prev_tokens is accepted: whole tokens need no context here)."""
        return self._model.detokenize(tokens, special)

    # ---- generation ----

    def _seed_for(self, seed):
        s = self._seed if seed is None else seed
        if s is None or s == LLAMA_DEFAULT_SEED or s < 0:
            s = random.getrandbits(32)
        return s

    def _options(self, defaults, given, seed, stop, logit_bias, n_logprobs):
        """The generate options of one call, checked by the package."""
        o = dict(self._gen)
        vals = dict(defaults)
        vals.update({k: v for k, v in given.items() if v is not None})
        mt = vals.pop("max_tokens")
        o["n_predict"] = -1 if mt is None or mt <= 0 else mt
        o.update(vals)
        o["seed"] = self._seed_for(seed)
        if stop:
            stop = [stop] if isinstance(stop, (str, bytes)) else [s for s in stop if s]
            if stop:
                o["stop"] = stop
        if logit_bias:
            o["logit_bias"] = {int(k): v for k, v in logit_bias.items()}
        if n_logprobs is not None:
            o["logprobs"] = n_logprobs
        return o

    def _run(self, tokens, options):
        """A stream of (bytes, logprobs or None, n_tokens) pieces; the Stats
        land in self.last_stats when it ends."""
        if len(tokens) >= self._ctx.n_ctx:
            raise ValueError("Requested tokens (%d) exceed context window of %d" % (len(tokens), self._ctx.n_ctx))
        from . import _Params
        params = _Params(options)
        stream = self._ctx._stream_raw(tokens, params)
        try:
            for item in stream:
                yield item
        finally:
            stream.close()
            if stream.result is not None:
                self.last_stats = stream.result.stats
                self.n_tokens = len(self._ctx.tokens)

    def _token_text(self, t, want_bytes=False):
        b = self._model.token_to_piece(t, True)[:256]
        return (_json_text(b), list(b)) if want_bytes else _json_text(b)

    @staticmethod
    def _lp(v):
        """A log-probability as the server sends it: 15 significant digits
        (more than a float32 holds, so no value is merged), -9999.0 for one
        that is not finite (JSON has no -inf)."""
        return float("%.15g" % v) if v == v and abs(v) != float("inf") else _LOGPROB_FLOOR

    def _chat_logprobs(self, lps, n_top):
        content = []
        for r in lps:
            tok, b = self._token_text(r["token"], True)
            tops = []
            for t, v in r["top"][:n_top]:
                tt, tb = self._token_text(t, True)
                tops.append({"token": tt, "logprob": self._lp(v), "bytes": tb})
            content.append({"token": tok, "logprob": self._lp(r["logprob"]), "bytes": b, "top_logprobs": tops})
        return content

    def _completion_logprobs(self, lps, n_top, offset):
        o = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
        for r in lps:
            text = self._token_text(r["token"])
            o["text_offset"].append(offset[0])
            offset[0] += len(text.encode("utf-8"))
            o["tokens"].append(text)
            o["token_logprobs"].append(self._lp(r["logprob"]))
            top = {}
            for t, v in r["top"][:n_top]:
                top.setdefault(self._token_text(t), self._lp(v))
            o["top_logprobs"].append(top)
        return o

    @staticmethod
    def _finish(stats, calls=False):
        f = "length" if stats.stop_reason in ("length", "context") else "stop"
        return "tool_calls" if calls and f != "length" else f

    @staticmethod
    def _usage(stats):
        return {"prompt_tokens": stats.n_prompt, "completion_tokens": stats.n_gen,
                "total_tokens": stats.n_prompt + stats.n_gen}

    def _prompt_tokens(self, prompt):
        if isinstance(prompt, (str, bytes, bytearray)):
            # llama-cpp-python (and the server's /v1/completions): BOS as the model asks, control texts parsed
            return self._model.tokenize(prompt, True, True)
        return list(prompt)

    def _grammar(self, grammar):
        if grammar is None:
            return None
        if isinstance(grammar, LlamaGrammar):
            return grammar._for(self._model)
        if isinstance(grammar, Grammar):
            return grammar
        raise TypeError("grammar must be a LlamaGrammar, not %r" % (type(grammar).__name__,))

    def create_completion(self, prompt, suffix=None, max_tokens=16, temperature=0.8, top_p=0.95, min_p=0.05,
                          typical_p=1.0, logprobs=None, echo=False, stop=None, frequency_penalty=0.0,
                          presence_penalty=0.0, repeat_penalty=1.0, top_k=40, stream=False, seed=None, tfs_z=1.0,
                          mirostat_mode=0, mirostat_tau=5.0, mirostat_eta=0.1, model=None, stopping_criteria=None,
                          logits_processor=None, grammar=None, logit_bias=None):
        """llama-cpp-python's create_completion: a text_completion dict, or
        with stream=True an iterator of its chunks (the last one carries
        finish_reason). logprobs=N (0..20): choices[].logprobs in the
        completions shape (tokens, token_logprobs, top_logprobs,
        text_offset)."""
        _check_sampling_extras(typical_p, tfs_z, mirostat_mode, mirostat_tau, mirostat_eta, logits_processor,
                               stopping_criteria)
        if suffix:
            raise _refuse("suffix", "fill-in-the-middle is not implemented")
        if echo:
            raise _refuse("echo", "the prompt is not returned; prepend it yourself")
        if logprobs is True:
            logprobs = 0
        elif logprobs is False:
            logprobs = None
        tokens = self._prompt_tokens(prompt)
        opts = self._options(_COMPLETION_DEFAULTS,
                             dict(max_tokens=max_tokens, temperature=temperature, top_p=top_p, min_p=min_p,
                                  top_k=top_k, repeat_penalty=repeat_penalty, presence_penalty=presence_penalty,
                                  frequency_penalty=frequency_penalty),
                             seed, stop, logit_bias, logprobs)
        if max_tokens is None or max_tokens <= 0:
            opts["n_predict"] = -1
        g = self._grammar(grammar)
        if g is not None:
            opts["grammar"] = g
        head = {"id": "cmpl-" + str(uuid.uuid4()), "object": "text_completion", "created": int(time.time()),
                "model": model if model is not None else self.model_path}
        pieces = self._run(tokens, opts)
        if stream:
            return self._completion_stream(head, pieces, logprobs)
        text, lps = [], []
        for data, lp, _n in pieces:
            text.append(data)
            lps.extend(lp or [])
        st = self.last_stats
        choice = {"text": _json_text(b"".join(text)), "index": 0,
                  "logprobs": self._completion_logprobs(lps, logprobs, [0]) if logprobs is not None else None,
                  "finish_reason": self._finish(st)}
        return dict(head, choices=[choice], usage=self._usage(st))

    def _completion_stream(self, head, pieces, n_top):
        offset, pend = [0], []
        for data, lp, _n in pieces:
            pend.extend(lp or [])
            if not data:
                continue
            lpo = self._completion_logprobs(pend, n_top, offset) if n_top is not None and pend else None
            pend = []
            yield dict(head, choices=[{"text": _json_text(data), "index": 0, "logprobs": lpo, "finish_reason": None}])
        lpo = self._completion_logprobs(pend, n_top, offset) if n_top is not None and pend else None
        yield dict(head, choices=[{"text": "", "index": 0, "logprobs": lpo,
                                   "finish_reason": self._finish(self.last_stats)}])

    def __call__(self, prompt, *args, **kwargs):
        return self.create_completion(prompt, *args, **kwargs)

    # ---- chat ----

    def _chat_prompt(self, messages, cp):
        """messages -> (prompt text, tokens) by the model's template (specdec_chat_tokenize)."""
        if not isinstance(messages, (list, tuple)) or not messages:
            raise ValueError("messages must be a non-empty list")
        keep, arr = [], (_c.ChatMessage * len(messages))()

        def b(s):
            if s is None:
                return None
            v = s.encode("utf-8")
            keep.append(v)
            return v

        for i, m in enumerate(messages):
            role = m.get("role")
            if role not in ("system", "user", "assistant", "tool", "developer"):
                raise ValueError("messages[%d].role %r is not one of system, user, assistant, tool" % (i, role))
            content = m.get("content")
            if isinstance(content, list):
                parts = []
                for k, part in enumerate(content):
                    if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                        raise _refuse("messages[%d].content[%d]" % (i, k), "only parts of type \"text\"")
                    parts.append(part["text"])
                content = "".join(parts)
            elif content is not None and not isinstance(content, str):
                raise ValueError("messages[%d].content must be a string or a list of parts" % i)
            if content is None and role not in ("assistant", "tool"):
                raise ValueError("messages[%d].content is required" % i)
            calls = m.get("tool_calls")
            calls_json = None
            if calls:
                out = []
                for k, c in enumerate(calls):
                    fn = c.get("function") or {}
                    args = fn.get("arguments")
                    if isinstance(args, str):
                        try:
                            args = json.loads(args)
                        except ValueError as e:
                            raise ValueError("messages[%d].tool_calls[%d].function.arguments is not JSON: %s"
                                             % (i, k, e))
                    elif args is None:
                        args = {}
                    call = {}
                    if isinstance(c.get("id"), str):
                        call["id"] = c["id"]
                    call["type"] = "function"
                    call["function"] = {"name": fn.get("name"), "arguments": args}
                    out.append(call)
                calls_json = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
            arr[i] = _c.ChatMessage(b("system" if role == "developer" else role), b(content or ""),
                                    b(m.get("reasoning_content")), b(calls_json), b(m.get("tool_call_id")),
                                    b(m.get("name")))
        L, err = _c.lib(), _c.Error()
        text, tlen = ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t()
        toks, n = _c.c_token_p(), ctypes.c_size_t()
        st = L.specdec_chat_tokenize(self._model._handle(), arr, len(messages), ctypes.byref(cp), ctypes.byref(text),
                                     ctypes.byref(tlen), ctypes.byref(toks), ctypes.byref(n), ctypes.byref(err))
        if st != 0:
            raise SpecdecError(st, err.message.decode("utf-8", "replace"))
        prompt = _out(text, tlen.value).decode("utf-8", "replace")
        try:
            ids = toks[:n.value]
        finally:
            L.specdec_free(toks)
        return prompt, ids

    def _has_think_end(self):
        try:
            t = self._model.tokenize("</think>", False, True)
        except SpecdecError:
            return False
        return len(t) == 1 and self._model.token_text(t[0]) == "</think>"

    def _compile(self, gbnf, reasoning):
        """GBNF text, after a reasoning section when the prompt opened one
        (as the server does: any tokens but </think>, then </think>)."""
        if reasoning and self._has_think_end():
            return Grammar(self._model, gbnf + "\nsd-reasoning-root ::= (!<</think>>)* <</think>> [\\n]* root\n",
                           "sd-reasoning-root")
        return Grammar(self._model, gbnf)

    def _response_grammar(self, response_format, grammar, reasoning):
        if response_format is not None and grammar is not None:
            raise ValueError("give at most one of response_format and grammar")
        if grammar is not None:
            if isinstance(grammar, LlamaGrammar):
                return self._compile(grammar.grammar, reasoning)
            return self._grammar(grammar)
        if response_format is None:
            return None
        if not isinstance(response_format, dict) or not isinstance(response_format.get("type"), str):
            raise ValueError("response_format must be {\"type\": ...}")
        t = response_format["type"]
        if t == "text":
            return None
        if t == "json_object":  # any object, or llama-cpp-python's {"type": "json_object", "schema": S}
            schema = response_format.get("schema")
            return self._compile(_schema_gbnf(schema, any_object=schema is None), reasoning)
        if t == "json_schema":
            js = response_format.get("json_schema")
            if not isinstance(js, dict):
                raise ValueError("response_format.json_schema must be an object")
            schema = js.get("schema")
            return self._compile(_schema_gbnf(schema, any_object=schema is None, strict=bool(js.get("strict"))),
                                 reasoning)
        raise ValueError("response_format.type must be \"text\", \"json_object\" or \"json_schema\", not %r" % t)

    @staticmethod
    def _tool_choice(tools, tool_choice):
        if not tools:
            if tool_choice not in (None, "none"):
                raise ValueError("tool_choice is only allowed when tools are given")
            return _c.TOOL_CHOICE_NONE, None
        for i, t in enumerate(tools):
            fn = t.get("function") if isinstance(t, dict) else None
            if t.get("type") != "function" or not isinstance(fn, dict) or not fn.get("name"):
                raise ValueError("tools[%d] must be {\"type\": \"function\", \"function\": {\"name\": ...}}" % i)
        if tool_choice is None or tool_choice == "auto":
            return _c.TOOL_CHOICE_AUTO, None
        if tool_choice == "none":
            return _c.TOOL_CHOICE_NONE, None
        if tool_choice == "required":
            return _c.TOOL_CHOICE_REQUIRED, None
        name = (tool_choice.get("function") or {}).get("name") if isinstance(tool_choice, dict) else None
        if not isinstance(name, str):
            raise ValueError("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                             "\"function\": {\"name\": ...}}")
        if name not in [t["function"]["name"] for t in tools]:
            raise ValueError("tool_choice names %r, which is not in tools" % name)
        return _c.TOOL_CHOICE_NAMED, name

    def create_chat_completion(self, messages, functions=None, function_call=None, tools=None, tool_choice=None,
                               temperature=0.2, top_p=0.95, top_k=40, min_p=0.05, typical_p=1.0, stream=False,
                               stop=None, seed=None, response_format=None, max_tokens=None, presence_penalty=0.0,
                               frequency_penalty=0.0, repeat_penalty=1.0, tfs_z=1.0, mirostat_mode=0,
                               mirostat_tau=5.0, mirostat_eta=0.1, model=None, logits_processor=None, grammar=None,
                               logit_bias=None, logprobs=None, top_logprobs=None, parallel_tool_calls=True,
                               chat_template_kwargs=None):
        """llama-cpp-python's create_chat_completion: a chat.completion dict,
        or with stream=True an iterator of chat.completion.chunk dicts. The
        prompt is the model's chat template run by the library (or
        chat_format's formatter); tools are rendered by it, forced calls
        (tool_choice "required" / a named function) are grammar-constrained
        to each tool's schema, and the answer's calls come back as
        message.tool_calls (finish_reason "tool_calls"); a <think> section as
        message.reasoning_content. Ours: parallel_tool_calls (True) and
        chat_template_kwargs ({"enable_thinking": bool, "preserve_thinking": bool})."""
        _check_sampling_extras(typical_p, tfs_z, mirostat_mode, mirostat_tau, mirostat_eta, logits_processor, None,
                               functions, function_call)
        n_top = None
        if logprobs:
            n_top = 0 if top_logprobs is None else top_logprobs
        elif top_logprobs is not None:
            raise ValueError("top_logprobs needs logprobs=True")
        if n_top is not None and not 0 <= n_top <= 20:
            raise ValueError("top_logprobs must be in [0, 20], got %r" % (n_top,))
        choice, name = self._tool_choice(tools, tool_choice)
        cp = _c.lib().specdec_chat_default_params()
        cp.template_name = self._template.encode() if self._template else None
        for k, v in (chat_template_kwargs or {}).items():
            if k == "enable_thinking":
                cp.enable_thinking = 1 if v else 0
            elif k == "preserve_thinking":
                cp.preserve_thinking = bool(v)
            else:
                raise _refuse("chat_template_kwargs[%r]" % k, "the template switches are enable_thinking and "
                              "preserve_thinking")
        tools_json = json.dumps(tools, ensure_ascii=False, separators=(",", ":")) if tools else None
        cp.tools_json = tools_json.encode("utf-8") if tools_json else None
        prompt, tokens = self._chat_prompt(messages, cp)
        reasoning = prompt.rstrip("\n ").endswith("<think>")
        g = self._response_grammar(response_format, grammar, reasoning)
        if tools and choice != _c.TOOL_CHOICE_NONE:
            if g is not None and choice != _c.TOOL_CHOICE_AUTO:
                raise ValueError("tool_choice %r cannot be combined with response_format or grammar" % (tool_choice,))
            if g is None:
                L, err = _c.lib(), _c.Error()
                out, olen = ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t()
                tj = tools_json.encode("utf-8")
                st = L.specdec_tool_grammar(self._model._handle(), ctypes.byref(cp), tj, len(tj), choice,
                                            name.encode("utf-8") if name else None, bool(parallel_tool_calls),
                                            ctypes.byref(out), ctypes.byref(olen), ctypes.byref(err))
                if st != 0:
                    raise SpecdecError(st, "tools: " + err.message.decode("utf-8", "replace"))
                if out:
                    g = Grammar(self._model, _out(out, olen.value))
        opts = self._options(_CHAT_DEFAULTS,
                             dict(max_tokens=max_tokens, temperature=temperature, top_p=top_p, min_p=min_p,
                                  top_k=top_k, repeat_penalty=repeat_penalty, presence_penalty=presence_penalty,
                                  frequency_penalty=frequency_penalty),
                             seed, stop, logit_bias, n_top)
        if g is not None:
            opts["grammar"] = g
        splitter = _Splitter(self._model, cp)
        calls = _Calls(self._model, cp, tools_json) if tools and choice != _c.TOOL_CHOICE_NONE else None
        head = {"id": "chatcmpl-" + str(uuid.uuid4()), "created": int(time.time()),
                "model": model if model is not None else self.model_path}
        events = self._chat_events(self._run(tokens, opts), splitter, calls)
        if stream:
            return self._chat_stream(head, events, calls, n_top)
        content, reason, lps = [], [], []
        for kind, data, lp in events:
            lps.extend(lp or [])
            if kind == "content":
                content.append(data)
            elif kind == "reasoning":
                reason.append(data)
        st = self.last_stats
        msg = {"role": "assistant"}
        made = calls.message_calls() if calls else []
        text = b"".join(content)
        msg["content"] = None if made and not text else _json_text(text)
        if made:
            msg["tool_calls"] = made
        if reason:
            msg["reasoning_content"] = _json_text(b"".join(reason))
        choice_o = {"index": 0, "message": msg,
                    "logprobs": ({"content": self._chat_logprobs(lps, n_top), "refusal": None}
                                 if n_top is not None else None),
                    "finish_reason": self._finish(st, bool(made))}
        return dict(head, object="chat.completion", choices=[choice_o], usage=self._usage(st))

    @staticmethod
    def _chat_events(pieces, splitter, calls):
        """(kind, payload, logprobs) per event: ("reasoning", bytes),
        ("content", bytes), ("start", (index, call)), ("args", (index,
        bytes)), ("lp", None) for a piece's log-probabilities alone; each
        piece's logprobs ride on its first event."""
        try:
            def route(r, c, lp):
                out = []
                if r:
                    out.append(("reasoning", r))
                if calls is None:
                    if c:
                        out.append(("content", c))
                else:
                    for ev in calls.feed(c):
                        out.append(("content", ev[1]) if ev[0] == "content" else (ev[0], ev[1:]))
                if not out:
                    out.append(("lp", None))
                first = out[0]
                out[0] = (first[0], first[1], lp)
                return [(o[0], o[1], None) if i else o for i, o in enumerate(out)]

            for data, lp, _n in pieces:
                r, c = splitter.feed(data)
                for e in route(r, c, lp):
                    yield e
            r, c = splitter.feed(b"", flush=True)
            for e in route(r, c, None):
                yield e
            if calls is not None:
                for ev in calls.feed(b"", flush=True):
                    yield (("content", ev[1], None) if ev[0] == "content" else (ev[0], ev[1:], None))
        finally:
            splitter.close()
            if calls is not None:
                calls.close()

    def _chat_stream(self, head, events, calls, n_top):
        """Chunks as the server streams them: delta {role, content ""} first,
        one chunk per piece of content or reasoning, tool-call deltas (index,
        id, type, name with arguments "", then argument pieces), a last
        chunk with finish_reason; logprobs ride on text chunks (held ones on
        the last)."""
        base = dict(head, object="chat.completion.chunk")

        def chunk(delta, lp=None, finish=None):
            return dict(base, choices=[{"index": 0, "delta": delta, "logprobs": lp, "finish_reason": finish}])

        yield chunk({"role": "assistant", "content": ""})
        pend = []
        for kind, payload, lp in events:
            pend.extend(lp or [])
            if kind in ("content", "reasoning"):
                if not payload:
                    continue
                lpo = None
                if n_top is not None and pend:
                    lpo = {"content": self._chat_logprobs(pend, n_top), "refusal": None}
                    pend = []
                key = "content" if kind == "content" else "reasoning_content"
                yield chunk({key: _json_text(payload)}, lpo)
            elif kind == "start":
                index, call = payload
                yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"], "arguments": ""}}]})
            elif kind == "args":
                index, data = payload
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": _json_text(data)}}]})
        lpo = None
        if n_top is not None and pend:
            lpo = {"content": self._chat_logprobs(pend, n_top), "refusal": None}
        made = bool(calls and calls.calls)
        yield chunk({}, lpo, self._finish(self.last_stats, made))
