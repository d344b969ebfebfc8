"""specdec from Python: GGUF models with lossless speculative decoding.

A thin layer over the C library libspecdec (include/specdec.h) through ctypes
from the standard library; nothing is compiled for Python. The text a
speculative run streams is exactly plain greedy decoding's at temperature 0,
and plain sampling's with the same seed at temperature > 0 (deterministic
drafts), as for the C API and the `specdec` command.

    import specdec
    llm = specdec.LLM("models/fixture-target.gguf", draft_path="models/fixture-draft.gguf")
    for piece in llm.stream("def main():", n_predict=48, check_lossless=True):
        print(piece, end="", flush=True)
    print()
    print(llm.stats)   # prefill ... | decode ... tok/s | spec auto (ngram + draft) | α ... | LOSSLESS 48/48

Where libspecdec.so is found, first match wins:
  1. the environment variable SPECDEC_LIB: the library's path, or a directory
     holding libspecdec.so. When it is set nothing else is tried.
  2. next to this package's files (specdec/libspecdec.so): copy the library
     there to ship the two together.
  3. the build directory of the source checkout the package sits in
     (python/specdec/ -> build/libspecdec.so): `cmake --build build --target
     specdec_shared`, then PYTHONPATH=python.
  4. the dynamic loader's own search (LD_LIBRARY_PATH, the ld.so cache), e.g.
     after `cmake --install build --prefix PREFIX`.
The library is loaded at the first call that needs it; OSError lists the
places tried when none holds it. Its major.minor version must be the
package's (__version__), since the structs are declared here field for field.

Errors of the library raise SpecdecError, whose str() is the library's
one-line message (e.g. "models/x.gguf: cannot open: No such file or
directory") and whose .code / .status give the specdec_status.

Classes: Model (a loaded GGUF file: metadata, tokenize, detokenize), Context
(a KV cache over a model and an optional draft: generate, stream), LLM (a
Context that loads and owns its models), Stats (what a generation did, with
the command line's derived figures: tok/s, α, accepted/round, speedup).
"""
import ctypes
import os
import queue
import threading

from . import _lib as _c

__version__ = "0.1.0"
__all__ = ["SpecdecError", "Model", "Context", "LLM", "Grammar", "Stats", "Result", "Stream", "version", "OPTIONS",
           "Llama", "LlamaGrammar", "LlamaPromptLookupDecoding", "LLAMA_DEFAULT_SEED"]

# specdec_status values (include/specdec.h)
OK, ERR_IO, ERR_FORMAT, ERR_NOMEM, ERR_UNSUPPORTED, ERR_CONTEXT, ERR_ARG, ERR_VOCAB, ERR_MISMATCH = range(9)


class SpecdecError(Exception):
    """A failed library call. str(e) and e.message: the library's one-line
    message; e.code: the specdec_status (an int, ERR_IO...); e.status: its
    short name ("io error", "invalid argument", ...)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = _c.lib().specdec_status_name(code).decode()


def _check(status, err):
    if status != OK:
        raise SpecdecError(status, err.message.decode("utf-8", "replace"))


def _arg_error(message):
    return SpecdecError(ERR_ARG, message)


def _bytes(text):
    return text if isinstance(text, (bytes, bytearray)) else str(text).encode("utf-8")


def version():
    """The version of the library actually loaded, "MAJOR.MINOR.PATCH"."""
    return _c.lib().specdec_version().decode()


def _str(p):
    return p.decode("utf-8", "replace") if p is not None else None


class _Owned:
    """A library handle (self._h) freed by close(), a with block, or garbage
    collection, with the library's function named by _free."""
    _free, _what, _h = None, None, None

    def _handle(self):
        if not self._h:
            raise _arg_error("the %s is closed" % self._what)
        return self._h

    def close(self):
        if self._h:
            getattr(_c.lib(), self._free)(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Model(_Owned):
    """A GGUF model loaded read-only (specdec_model_load). Thread-safe: any
    number of threads may tokenize while contexts of it generate. Free it with
    close() (or a with block) after every Context made from it."""
    _free, _what = "specdec_model_free", "model"

    def __init__(self, path):
        L = _c.lib()
        err, handle = _c.Error(), ctypes.c_void_p()
        _check(L.specdec_model_load(os.fsencode(path), None, ctypes.byref(handle), ctypes.byref(err)), err)
        self._h = handle

    path = property(lambda self: _str(_c.lib().specdec_model_path(self._handle())))
    name = property(lambda self: _str(_c.lib().specdec_model_name(self._handle())),
                    doc="general.name, or the file name without .gguf")
    arch = property(lambda self: _str(_c.lib().specdec_model_arch(self._handle())),
                    doc='"llama", "qwen2", "qwen3", "qwen35" or "eagle3"')
    n_vocab = property(lambda self: _c.lib().specdec_model_n_vocab(self._handle()))
    n_ctx_train = property(lambda self: _c.lib().specdec_model_n_ctx_train(self._handle()))
    n_params = property(lambda self: _c.lib().specdec_model_n_params(self._handle()))
    chat_template = property(lambda self: _str(_c.lib().specdec_model_chat_template(self._handle())),
                             doc="tokenizer.chat_template's Jinja source, or None")
    token_bos = property(lambda self: _c.lib().specdec_token_bos(self._handle()), doc="-1 when none")
    token_eos = property(lambda self: _c.lib().specdec_token_eos(self._handle()), doc="-1 when none")
    token_eot = property(lambda self: _c.lib().specdec_token_eot(self._handle()), doc="-1 when none")

    def meta(self, key):
        """A string-valued GGUF metadata key, or None when absent or not a string."""
        return _str(_c.lib().specdec_model_meta_str(self._handle(), _bytes(key)))

    def token_is_eog(self, token):
        return bool(_c.lib().specdec_token_is_eog(self._handle(), token))

    def token_is_control(self, token):
        return bool(_c.lib().specdec_token_is_control(self._handle(), token))

    def token_text(self, token):
        """The vocabulary entry as stored (not decoded), or None out of range."""
        return _str(_c.lib().specdec_token_text(self._handle(), token))

    def token_to_piece(self, token, show_special=False):
        """The raw bytes of one token (maybe part of a UTF-8 character)."""
        L, h, cap = _c.lib(), self._handle(), 64
        while True:  # the count returned may exceed cap: then again with room for it (buf is never NULL)
            buf = ctypes.create_string_buffer(cap)
            n = L.specdec_token_to_piece(h, token, show_special, buf, cap)
            if n < 0:
                raise _arg_error("token id %d out of range [0, %d)" % (token, self.n_vocab))
            if n <= cap:
                return buf.raw[:n]
            cap = n

    def tokenize(self, text, add_special=True, parse_special=False):
        """Token ids (a list of int) of text (str, encoded as UTF-8, or bytes:
        any bytes are taken). add_special: BOS/EOS as the model asks;
        parse_special: control-token texts such as "<|im_start|>" become
        single tokens (only for trusted text)."""
        L, data = _c.lib(), _bytes(text)
        err, out, n = _c.Error(), _c.c_token_p(), ctypes.c_size_t()
        _check(L.specdec_tokenize(self._handle(), data, len(data), add_special, parse_special, ctypes.byref(out),
                                  ctypes.byref(n), ctypes.byref(err)), err)
        try:
            return out[:n.value]
        finally:
            L.specdec_free(out)

    def detokenize(self, tokens, show_special=False):
        """The bytes of tokens (bytes, as llama-cpp-python's detokenize:
        byte-exact, so detokenize(tokenize(s, add_special=False)) ==
        s.encode(); .decode() it for text). Control tokens give their text
        only if show_special."""
        L, tokens = _c.lib(), list(tokens)
        err, out, n = _c.Error(), ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t()
        _check(L.specdec_detokenize(self._handle(), _token_array(tokens), len(tokens), show_special, ctypes.byref(out),
                                    ctypes.byref(n), ctypes.byref(err)), err)
        try:
            return ctypes.string_at(out, n.value)
        finally:
            L.specdec_free(out)

    def memory(self):
        """What the weights hold in memory now (specdec_model_memory): a dict
        of packed_bytes, f32_bytes, file_bytes (None when unmeasured) and load_ms."""
        m, err = _c.ModelMemory(), _c.Error()
        _check(_c.lib().specdec_model_memory_get(self._handle(), ctypes.byref(m), ctypes.byref(err)), err)
        return {"packed_bytes": m.packed_bytes, "f32_bytes": m.f32_bytes,
                "file_bytes": m.file_bytes if m.file_measured else None, "load_ms": m.load_ms}


def _token_array(tokens):
    """A C array of the ids of the list tokens (never of length 0, so the
    pointer is never NULL; the count passed is len(tokens))."""
    return (_c.c_token * max(len(tokens), 1))(*tokens)


# The options of generate() and stream(), the fields of specdec_generate_params
# (include/specdec.h documents each; the defaults are the library's):
#   n_predict=128 (< 0: until an end-of-generation token or a full context),
#   spec="auto" ("none", "ngram", "draft", "auto", "eagle3", "mtp", "suffix", "grammar", "dflash"),
#   draft_max=8, fixed_k=False, ngram_min=1, ngram_max=3, gate=4,
#   temperature=0.0 (greedy), top_k=0, top_p=1.0, min_p=0.0, seed=42,
#   draft_sample=False, stop=() (up to 8 strings), stop_at_eog=True,
#   check_lossless=False (decode again plainly and compare: Stats.lossless),
#   hybrid_rollback="auto" ("checkpoint", "replay", "redecode", "window"),
#   hybrid_window=9, tree_nodes=0, tree_width=2,
#   grammar=None (a Grammar of the context's model: the output is kept to it; docs/GRAMMAR.md),
#   presence_penalty=0.0, frequency_penalty=0.0 (OpenAI's, [-2, 2]), repeat_penalty=1.0 (llama.cpp's,
#   (0, 10]), repeat_last_n=64 (its window; 0 = off, -1 = all), logit_bias=None (a dict token id -> bias
#   in [-100, 100]; -100 bans the token). Speculation stays lossless with each (docs/LIBRARY.md),
#   logprobs=None (an int 0..20: Result.logprobs holds, per delivered token, a dict {token, logprob, top: [(token,
#   logprob), ...]} with that many alternatives; the values as docs/LIBRARY.md "Log-probabilities" says).
OPTIONS = ("n_predict", "spec", "draft_max", "fixed_k", "ngram_min", "ngram_max", "gate", "temperature", "top_k",
           "top_p", "min_p", "seed", "draft_sample", "stop", "stop_at_eog", "check_lossless", "hybrid_rollback",
           "hybrid_window", "tree_nodes", "tree_width", "grammar", "presence_penalty", "frequency_penalty",
           "repeat_penalty", "repeat_last_n", "logit_bias", "logprobs")
_NAMED = {"spec": ("specdec_spec_mode_parse", "none, ngram, draft, eagle3, mtp, suffix, grammar, dflash or auto"),
          "hybrid_rollback": ("specdec_rollback_parse", "auto, checkpoint, replay, redecode or window"),
          "cache_type": ("specdec_cache_type_parse", "f16, f32, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1")}


def _named_enum(field, value):
    parse, choices = _NAMED[field]
    out = ctypes.c_int()
    if not getattr(_c.lib(), parse)(_bytes(value), ctypes.byref(out)):
        raise _arg_error("%s must be %s, not '%s'" % (field, choices, value))
    return out.value


# Fields whose range the front ends' option table holds (specdec_option_table:
# the same ranges as `specdec generate`'s flags and the server's request
# fields), by the table name that finds them.
_TABLE_NAMES = {"n_predict": "--n-predict", "draft_max": "--draft-max", "ngram_min": "--ngram-min",
                "ngram_max": "--ngram-max", "gate": "--gate", "temperature": "--temp", "top_k": "--top-k",
                "top_p": "--top-p", "min_p": "--min-p", "hybrid_window": "--window", "tree_nodes": "--tree",
                "tree_width": "--tree-width", "presence_penalty": "--presence-penalty",
                "frequency_penalty": "--frequency-penalty", "repeat_penalty": "--repeat-penalty",
                "repeat_last_n": "--repeat-last-n"}


def _check_range(field, value):
    """Refuse a number outside the table's range, as the command line does
    ("temperature -1: out of range [0, 100]")."""
    L = _c.lib()
    opt = L.specdec_option_find(_TABLE_NAMES[field].encode())
    if not opt:
        return
    o = opt.contents
    below = value < o.lo or (o.lo_open and value == o.lo)
    above = value > o.hi or (o.hi_open and value == o.hi)
    if below or above or value != value:  # value != value: NaN
        text = ctypes.create_string_buffer(128)
        L.specdec_option_range(opt, text, len(text))
        shown = "%g" % value if isinstance(value, float) else str(value)
        raise _arg_error("%s %s: out of range %s" % (field, shown, text.value.decode()))


def _int_field(field, value, ctype):
    bits = ctypes.sizeof(ctype) * 8
    lo, hi = (0, 2 ** bits) if field == "seed" else (-2 ** (bits - 1), 2 ** (bits - 1))
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value < hi:
        raise _arg_error("%s must be an integer in [%d, %d), not %r" % (field, lo, hi, value))
    return value


class _Params:
    """specdec_generate_params from keyword options, and what its pointers
    borrow (the stop strings), kept alive for the call."""

    def __init__(self, options):
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TypeError("unknown generate option(s) %s; the options are %s" % (", ".join(unknown), ", ".join(OPTIONS)))
        p = _c.lib().specdec_generate_default_params()
        types = dict(_c.GenerateParams._fields_)
        for field, value in options.items():
            if field in _NAMED:
                value = _named_enum(field, value)
            elif field == "grammar":
                if value is not None and not isinstance(value, Grammar):
                    raise _arg_error("grammar must be a specdec.Grammar or None, not %r" % (value,))
                self._grammar = value  # kept alive for the call
                p.grammar = value._handle() if value is not None else None
                continue
            elif field == "logprobs":
                p.logprobs = -1 if value is None else _int_field(field, value, ctypes.c_int32)
                if not -1 <= p.logprobs <= _c.MAX_TOP_LOGPROBS:
                    raise _arg_error("logprobs %d: out of range [0, %d]" % (p.logprobs, _c.MAX_TOP_LOGPROBS))
                continue
            elif field == "logit_bias":
                items = list((value or {}).items())
                try:
                    entries = [(int(k), float(b)) for k, b in items]
                except (TypeError, ValueError):
                    raise _arg_error("logit_bias must map token ids to numbers, not %r" % (value,))
                self._bias = (_c.LogitBias * max(len(entries), 1))(*entries)  # kept alive for the call
                p.logit_bias, p.n_logit_bias = (ctypes.cast(self._bias, ctypes.c_void_p) if entries else None,
                                                len(entries))
                continue
            elif field == "stop":
                self._stop_strings = [_bytes(s) for s in ([value] if isinstance(value, (str, bytes)) else value)]
                self._stop = (ctypes.c_char_p * max(len(self._stop_strings), 1))(*self._stop_strings)
                p.stop, p.n_stop = ctypes.cast(self._stop, ctypes.POINTER(ctypes.c_char_p)), len(self._stop_strings)
                continue
            elif types[field] is ctypes.c_bool:
                value = bool(value)
            elif types[field] is ctypes.c_float:
                value = float(value)
            else:
                value = _int_field(field, value, types[field])
            if field in _TABLE_NAMES:
                _check_range(field, value)
            setattr(p, field, value)
        self.c = p


class Grammar(_Owned):
    """A grammar compiled for one model's vocabulary (specdec_grammar_init):
    GBNF text in llama.cpp's dialect with start rule root, or, with
    Grammar.from_json_schema, a JSON Schema. Pass it as generate(...,
    grammar=g) to any number of calls (threads may share it); the output is
    kept to the grammar, with speculation as exact as without. Errors raise
    SpecdecError with "grammar LINE:COL: what" or the schema keyword."""
    _free, _what = "specdec_grammar_free", "grammar"

    def __init__(self, model, gbnf, root=None, _handle=None):
        self._model = model  # the grammar borrows the model
        if _handle is not None:
            self._h = _handle
            return
        data = _bytes(gbnf)
        err, handle = _c.Error(), ctypes.c_void_p()
        _check(_c.lib().specdec_grammar_init(model._handle(), data, len(data), _bytes(root) if root else None,
                                             ctypes.byref(handle), ctypes.byref(err)), err)
        self._h = handle.value

    @classmethod
    def from_json_schema(cls, model, schema, strict=False):
        """schema: a JSON Schema as a dict or as JSON text; None for any JSON
        object (response_format json_object). strict: additionalProperties
        defaults to false (OpenAI's strict mode), else JSON Schema's true."""
        import json
        any_object = schema is None
        text = b"" if any_object else _bytes(schema if isinstance(schema, (str, bytes)) else json.dumps(schema))
        err, handle = _c.Error(), ctypes.c_void_p()
        _check(_c.lib().specdec_grammar_from_json_schema(model._handle(), None if any_object else text, len(text),
                                                         strict, any_object, ctypes.byref(handle),
                                                         ctypes.byref(err)), err)
        return cls(model, None, _handle=handle.value)

    def accepts(self, text):
        """True when text (str or bytes) is a complete sentence of the grammar."""
        data = _bytes(text)
        return bool(_c.lib().specdec_grammar_accepts(self._handle(), data, len(data)))


class Stats:
    """What one generation did: every field of specdec_stats (n_prompt,
    n_cached, n_gen, t_prefill_ms, t_decode_ms, n_drafted, n_accepted,
    n_rounds, n_target_forwards, n_draft_forwards, gate_closed_steps,
    n_probes, n_probe_hits, gate_open, drafter, stop_reason (a name: "length",
    "eog", "stop", "cancelled", "context", "grammar"), stop_index, lossless_checked,
    lossless_first_diff, plain_n_gen, plain_decode_ms, rollback, n_rollbacks,
    n_redecoded, rollback_ms, rollback_bytes_moved, rollback_bytes_held,
    grammar_ms, grammar_rounds_ms, n_grammar_masks, gate_k, gate_r, and
    gate_cv / gate_accept as lists indexed from S = 1 / position 1) and
    the figures `specdec generate` derives from them, under its --json names,
    None where there is nothing to measure (its n/a): prefill_tok_s,
    decode_tok_s, acceptance (α), accepted_per_round, tokens_per_forward,
    greedy_tok_s and speedup (only when the lossless check ran), lossless
    (True / False, None when unchecked). str() is its stats line."""

    def __init__(self, c_stats):
        for name, _ in _c.Stats._fields_:
            setattr(self, name, getattr(c_stats, name))
        self.gate_cv, self.gate_accept = list(self.gate_cv)[1:], list(self.gate_accept)[1:]
        self.drafter, self.rollback = _str(self.drafter), _str(self.rollback)
        self.stop_reason = _str(_c.lib().specdec_stop_reason_name(self.stop_reason))
        self.lossless = bool(c_stats.lossless) if self.lossless_checked else None

    @staticmethod
    def _ratio(a, b):
        return a / b if b > 0 else None

    @staticmethod
    def _decode_rate(n_gen, ms):
        # The first token comes from the prefill: a decode rate needs two.
        return Stats._ratio(n_gen - 1, ms / 1e3) if n_gen > 1 else None

    prefill_tok_s = property(lambda s: s._ratio(s.n_prompt, s.t_prefill_ms / 1e3))
    decode_tok_s = property(lambda s: s._decode_rate(s.n_gen, s.t_decode_ms))
    acceptance = property(lambda s: s._ratio(s.n_accepted, s.n_drafted), doc="α = accepted / drafted")
    accepted_per_round = property(lambda s: s._ratio(s.n_accepted, s.n_rounds))
    # The prefill's last row gives the first token: it counts as a forward.
    tokens_per_forward = property(lambda s: s._ratio(s.n_gen, s.n_target_forwards + 1) if s.n_gen > 0 else None)
    greedy_tok_s = property(lambda s: s._decode_rate(s.plain_n_gen, s.plain_decode_ms) if s.lossless_checked else None,
                            doc="the plain run of the lossless check")
    speedup = property(lambda s: s._ratio(s.decode_tok_s, s.greedy_tok_s)
                       if s.decode_tok_s is not None and s.greedy_tok_s is not None else None)

    def as_dict(self):
        d = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        for k in ("prefill_tok_s", "decode_tok_s", "acceptance", "accepted_per_round", "tokens_per_forward",
                  "greedy_tok_s", "speedup"):
            d[k] = getattr(self, k)
        return d

    def __repr__(self):
        return "Stats(%r)" % self.as_dict()

    def __str__(self):
        def fig(fmt, x):
            return "n/a" if x is None else fmt % x

        s = "prefill %s (%d tokens) | decode %s (%d tokens) | spec %s" % (
            fig("%.1f tok/s", self.prefill_tok_s), self.n_prompt, fig("%.2f tok/s", self.decode_tok_s), self.n_gen,
            self.drafter)
        if self.n_rounds or self.n_drafted or self.gate_closed_steps:
            s += " | rounds %d | α %s (%d/%d) | accepted/round %s" % (
                self.n_rounds, fig("%.3f", self.acceptance), self.n_accepted, self.n_drafted,
                fig("%.2f", self.accepted_per_round))
        s += " | tokens/forward %s" % fig("%.2f", self.tokens_per_forward)
        if self.lossless_checked:
            s += " | greedy %s | speedup %s" % (fig("%.2f tok/s", self.greedy_tok_s), fig("%.2fx", self.speedup))
            s += (" | LOSSLESS %d/%d" % (self.n_gen, self.plain_n_gen) if self.lossless
                  else " | MISMATCH at token %d" % self.lossless_first_diff)
        return s


class Result:
    """A finished generation: text (str), tokens (the generated ids, list of
    int; an ending end-of-generation token included), stats (Stats) and
    logprobs (with the logprobs option: one dict {token, logprob, top} per
    delivered token; else None)."""

    def __init__(self, text, tokens, stats, logprobs=None):
        self.text, self.tokens, self.stats, self.logprobs = text, tokens, stats, logprobs

    def __repr__(self):
        return "Result(text=%r, tokens=%d, stop=%s)" % (self.text, len(self.tokens), self.stats.stop_reason)


class Context(_Owned):
    """A KV cache for generating with model (specdec_context_init), with an
    optional draft model (a Model: a draft model, an EAGLE-3 head or an MTP
    sidecar, a DFlash draft) for spec "draft" / "eagle3" / "mtp" / "dflash" / "auto". n_ctx, n_batch,
    n_threads <= 0 take the library's defaults. cache_type_k / cache_type_v:
    the KV cache's element types by llama.cpp's names ("f16" default, "q8_0",
    "q4_0", ...; specdec_cache_type). The models must stay open
    while the context lives (the context keeps them referenced). One
    generation at a time: the history of the last one is kept and its longest
    common prefix with the next prompt is reused (stats.n_cached)."""
    _free, _what = "specdec_context_free", "context"

    def __init__(self, model, draft=None, n_ctx=0, n_batch=0, n_threads=0, cache_type_k="f16", cache_type_v="f16"):
        L = _c.lib()
        cp = L.specdec_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_threads = n_ctx, n_batch, n_threads
        cp.cache_type_k = _named_enum("cache_type", cache_type_k)
        cp.cache_type_v = _named_enum("cache_type", cache_type_v)
        cp.draft = draft._handle() if draft is not None else None
        err, handle = _c.Error(), ctypes.c_void_p()
        _check(L.specdec_context_init(model._handle(), ctypes.byref(cp), ctypes.byref(handle), ctypes.byref(err)), err)
        self._h, self.model, self.draft = handle, model, draft
        self._busy = threading.Lock()
        self.stats = None  # the Stats of the last generation that finished

    n_ctx = property(lambda self: _c.lib().specdec_context_n_ctx(self._handle()))

    @property
    def tokens(self):
        """The history: the last prompt and every token generated after it."""
        n = ctypes.c_size_t()
        p = _c.lib().specdec_context_tokens(self._handle(), ctypes.byref(n))
        return p[:n.value] if n.value else []

    def reset(self):
        """Forget the history: the next generation prefills its whole prompt."""
        self._with_idle(lambda: _c.lib().specdec_context_reset(self._handle()))

    def check(self, **options):
        """Raise SpecdecError if options can never run on this context (the
        checks generate makes first: the spec mode fits, every field in range)."""
        params, err = _Params(options), _c.Error()
        _check(_c.lib().specdec_generate_params_check(self._handle(), ctypes.byref(params.c), ctypes.byref(err)), err)

    def tokenize(self, text, add_special=True, parse_special=False):
        return self.model.tokenize(text, add_special, parse_special)

    def detokenize(self, tokens, show_special=False):
        return self.model.detokenize(tokens, show_special)

    def _prompt(self, prompt):
        """A str / bytes prompt is tokenized as `specdec generate -p` does (BOS
        as the model asks, control texts not parsed); a list is token ids."""
        if isinstance(prompt, (str, bytes, bytearray)):
            return self.model.tokenize(prompt)
        return list(prompt)

    def _with_idle(self, fn):
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("the context is generating (an unfinished stream?): finish or close it first")
        try:
            return fn()
        finally:
            self._busy.release()

    def generate(self, prompt, on_piece=None, **options):
        """Generates after prompt (str, bytes, or a list of token ids) and
        returns a Result. on_piece(text) is called with each piece of text as
        it is generated (whole UTF-8 characters); returning False stops there
        (stop_reason "cancelled"); an exception it raises stops the
        generation and is raised here. options: see OPTIONS."""
        tokens, params = self._prompt(prompt), _Params(options)
        return self._with_idle(lambda: self._run(tokens, params, on_piece, None))

    def stream(self, prompt, **options):
        """Like generate, as an iterator of the text pieces (str), generated on
        a worker thread while the caller consumes them. After the last piece
        the Stream's .result (and this context's .stats) hold the outcome;
        closing it early (close(), a with block, break + garbage collection)
        stops the generation at the next piece or prefill chunk (a dropped stream
        is collected at once: its worker thread holds no reference to it)."""
        tokens, params = self._prompt(prompt), _Params(options)
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("the context is generating (an unfinished stream?): finish or close it first")
        return Stream(self, tokens, params)

    def _stream_raw(self, tokens, params):
        """A Stream of (bytes, logprobs of the piece or None, n_tokens) per
        piece (the Llama door formats chunks from these)."""
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("the context is generating (an unfinished stream?): finish or close it first")
        return Stream(self, tokens, params, raw=True)

    def _run(self, tokens, params, on_piece, cancel, raw=False):
        """One specdec_generate call on this thread; the context is held.
        raw: on_piece receives (bytes, the piece's logprobs or None, n_tokens)."""
        L, pieces, raised = _c.lib(), [], []
        lps = [] if params.c.logprobs >= 0 else None

        def piece_cb(piece_p, _user):
            try:
                p = piece_p.contents
                data = ctypes.string_at(p.text, p.len)
                text = data.decode("utf-8", "replace")
                pieces.append(text)
                mine = [] if lps is not None else None
                for i in range(p.n_logprobs if lps is not None else 0):
                    r = p.logprobs[i]
                    mine.append({"token": r.token, "logprob": r.logprob,
                                 "top": [(r.top_token[k], r.top_logprob[k]) for k in range(r.n_top)]})
                if mine:
                    lps.extend(mine)
                if raw:
                    go_on = on_piece((data, mine, p.n_tokens))
                else:
                    go_on = on_piece(text) if on_piece is not None else True
                return go_on is not False and not (cancel is not None and cancel.is_set())
            except BaseException as e:  # a callback must not unwind through C: stop, raise after
                raised.append(e)
                return False

        cb = _c.PIECE_FN(piece_cb)
        abort = _c.ABORT_FN(lambda _user: cancel.is_set()) if cancel is not None else _c.ABORT_FN()
        params.c.abort = abort
        arr, st, err = _token_array(tokens), _c.Stats(), _c.Error()
        status = L.specdec_generate(self._handle(), arr, len(tokens), ctypes.byref(params.c), cb, None,
                                    ctypes.byref(st), ctypes.byref(err))
        if raised:
            raise raised[0]
        _check(status, err)
        stats = Stats(st)
        history = self.tokens
        self.stats = stats
        return Result("".join(pieces), history[len(tokens):len(tokens) + stats.n_gen], stats, lps)


class _Done:
    def __init__(self, result=None, error=None):
        self.result, self.error = result, error


def _stream_work(ctx, tokens, params, pieces, cancel, raw):
    """A Stream's worker thread: the generation, then its _Done into pieces."""
    try:
        pieces.put(_Done(result=ctx._run(tokens, params, pieces.put, cancel, raw)))
    except BaseException as e:
        pieces.put(_Done(error=e))
    finally:
        ctx._busy.release()


class Stream:
    """The pieces of one generation (str), in order, as they are generated.
    .result: the Result once the iteration ended (None before). Errors of the
    generation are raised by the iteration after the pieces that came first."""

    def __init__(self, ctx, tokens, params, raw=False):
        self.result = None
        self._ctx, self._queue, self._cancel, self._done = ctx, queue.SimpleQueue(), threading.Event(), False
        # The worker holds no reference to the Stream, so a stream dropped
        # unfinished is collected, and its __del__ cancels the generation.
        self._thread = threading.Thread(target=_stream_work, args=(ctx, tokens, params, self._queue, self._cancel, raw),
                                        daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        item = self._queue.get()
        if not isinstance(item, _Done):
            return item
        self._done = True
        self._thread.join()
        if item.error is not None:
            raise item.error
        self.result = item.result
        raise StopIteration

    @property
    def stats(self):
        return self.result.stats if self.result is not None else None

    def close(self):
        """Stops the generation (if still running) and waits for it to end."""
        if self._done:
            return
        self._cancel.set()
        try:
            for _ in self:
                pass
        except SpecdecError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if not getattr(self, "_done", True):
            self.close()


class LLM(Context):
    """A Context that loads its model (and draft, from draft_path) itself and
    frees them with close(): the one-object way, as llama-cpp-python's Llama.
    .model and .draft are the Model objects."""

    def __init__(self, model_path, draft_path=None, n_ctx=0, n_batch=0, n_threads=0, cache_type_k="f16",
                 cache_type_v="f16"):
        model = Model(model_path)
        draft = None
        try:
            draft = Model(draft_path) if draft_path is not None else None
            super().__init__(model, draft, n_ctx, n_batch, n_threads, cache_type_k, cache_type_v)
        except BaseException:
            if draft is not None:
                draft.close()
            model.close()
            raise

    def close(self):
        super().close()
        for m in (getattr(self, "draft", None), getattr(self, "model", None)):
            if m is not None:
                m.close()


# llama-cpp-python's high-level API (specdec/llama.py): `from specdec import
# Llama, LlamaGrammar` in place of `from llama_cpp import ...`.
from .llama import Llama, LLAMA_DEFAULT_SEED  # noqa: E402
from .llama_grammar import LlamaGrammar  # noqa: E402
from .llama_speculative import LlamaPromptLookupDecoding  # noqa: E402
