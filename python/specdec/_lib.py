"""ctypes declarations of include/specdec.h and the loading of libspecdec.

The structs below mirror the C structs field for field, in order (the header
only ever appends fields, so a library newer in its patch level still reads
these). Only the functions the package calls are declared.
"""
import ctypes
import ctypes.util
import os

# Major.minor this package was written against (include/specdec.h's
# SPECDEC_VERSION_*): a library of another major.minor may lay its structs out
# differently, so it is refused at load.
API_VERSION = (0, 1)

LIB_ENV = "SPECDEC_LIB"
_LIB_NAMES = ("libspecdec.so", "libspecdec.so.0")

c_token = ctypes.c_int32
c_token_p = ctypes.POINTER(c_token)


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 512)]


class ContextParams(ctypes.Structure):
    _fields_ = [
        ("n_ctx", ctypes.c_int32),
        ("n_batch", ctypes.c_int32),
        ("n_threads", ctypes.c_int32),
        ("draft", ctypes.c_void_p),
        ("cache_type_k", ctypes.c_int),  # specdec_cache_type
        ("cache_type_v", ctypes.c_int),
    ]


# bool (*abort)(void *user)
ABORT_FN = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p)


class GenerateParams(ctypes.Structure):
    _fields_ = [
        ("n_predict", ctypes.c_int32),
        ("spec", ctypes.c_int),
        ("draft_max", ctypes.c_int32),
        ("fixed_k", ctypes.c_bool),
        ("ngram_min", ctypes.c_int32),
        ("ngram_max", ctypes.c_int32),
        ("gate", ctypes.c_int32),
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("seed", ctypes.c_uint64),
        ("draft_sample", ctypes.c_bool),
        ("stop", ctypes.POINTER(ctypes.c_char_p)),
        ("n_stop", ctypes.c_int32),
        ("stop_at_eog", ctypes.c_bool),
        ("check_lossless", ctypes.c_bool),
        ("hybrid_rollback", ctypes.c_int),
        ("hybrid_window", ctypes.c_int32),
        ("tree_nodes", ctypes.c_int32),
        ("tree_width", ctypes.c_int32),
        ("abort", ABORT_FN),
        ("suffix_cache", ctypes.c_void_p),  # a specdec_suffix_cache *; the bindings pass none (NULL)
        ("grammar", ctypes.c_void_p),  # a specdec_grammar * (specdec.Grammar), or NULL
        ("presence_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("repeat_last_n", ctypes.c_int32),
        ("logit_bias", ctypes.c_void_p),  # a specdec_logit_bias array (LogitBias), or NULL
        ("n_logit_bias", ctypes.c_int32),
        ("logprobs", ctypes.c_int32),
    ]


MAX_TOP_LOGPROBS = 20


class TokenLogprob(ctypes.Structure):
    _fields_ = [("token", ctypes.c_int32), ("logprob", ctypes.c_float), ("n_top", ctypes.c_int32),
                ("top_token", ctypes.c_int32 * MAX_TOP_LOGPROBS), ("top_logprob", ctypes.c_float * MAX_TOP_LOGPROBS)]


class LogitBias(ctypes.Structure):
    _fields_ = [("token", ctypes.c_int32), ("bias", ctypes.c_float)]


GATE_N = 17  # SPECDEC_GATE_N


class Stats(ctypes.Structure):
    _fields_ = [
        ("n_prompt", ctypes.c_int32),
        ("n_cached", ctypes.c_int32),
        ("n_gen", ctypes.c_int32),
        ("t_prefill_ms", ctypes.c_double),
        ("t_decode_ms", ctypes.c_double),
        ("n_drafted", ctypes.c_int64),
        ("n_accepted", ctypes.c_int64),
        ("n_rounds", ctypes.c_int64),
        ("n_target_forwards", ctypes.c_int64),
        ("n_draft_forwards", ctypes.c_int64),
        ("gate_closed_steps", ctypes.c_int64),
        ("n_probes", ctypes.c_int64),
        ("n_probe_hits", ctypes.c_int64),
        ("gate_open", ctypes.c_bool),
        ("drafter", ctypes.c_char_p),
        ("stop_reason", ctypes.c_int),
        ("stop_index", ctypes.c_int32),
        ("lossless_checked", ctypes.c_bool),
        ("lossless", ctypes.c_bool),
        ("lossless_first_diff", ctypes.c_int32),
        ("plain_n_gen", ctypes.c_int32),
        ("plain_decode_ms", ctypes.c_double),
        ("rollback", ctypes.c_char_p),
        ("n_rollbacks", ctypes.c_int64),
        ("n_redecoded", ctypes.c_int64),
        ("rollback_ms", ctypes.c_double),
        ("rollback_bytes_moved", ctypes.c_uint64),
        ("rollback_bytes_held", ctypes.c_uint64),
        ("grammar_ms", ctypes.c_double),
        ("grammar_rounds_ms", ctypes.c_double),
        ("n_grammar_masks", ctypes.c_int64),
        ("gate_k", ctypes.c_int32),
        ("gate_r", ctypes.c_double),
        ("gate_cv", ctypes.c_double * GATE_N),
        ("gate_accept", ctypes.c_double * GATE_N),
    ]


class Piece(ctypes.Structure):
    _fields_ = [
        ("text", ctypes.POINTER(ctypes.c_char)),
        ("len", ctypes.c_size_t),
        ("n_tokens", ctypes.c_int32),
        ("n_drafted", ctypes.c_int32),
        ("stats", ctypes.POINTER(Stats)),
        ("logprobs", ctypes.POINTER(TokenLogprob)),
        ("n_logprobs", ctypes.c_int32),
    ]


class ModelMemory(ctypes.Structure):
    _fields_ = [
        ("packed_bytes", ctypes.c_uint64),
        ("f32_bytes", ctypes.c_uint64),
        ("file_bytes", ctypes.c_uint64),
        ("file_measured", ctypes.c_bool),
        ("load_ms", ctypes.c_double),
    ]


class Option(ctypes.Structure):
    """specdec_option: one entry of the front ends' option table."""
    _fields_ = [
        ("flag", ctypes.c_char_p),
        ("alias", ctypes.c_char_p),
        ("http_field", ctypes.c_char_p),
        ("type", ctypes.c_int),
        ("lo", ctypes.c_double),
        ("hi", ctypes.c_double),
        ("lo_open", ctypes.c_bool),
        ("hi_open", ctypes.c_bool),
        ("names", ctypes.c_char_p),
        ("value_name", ctypes.c_char_p),
        ("help", ctypes.c_char_p),
    ]


OPTION_INT, OPTION_UINT64, OPTION_FLOAT = 0, 1, 2

class ChatMessage(ctypes.Structure):
    """specdec_chat_message: borrowed NUL-terminated UTF-8 strings (or NULL)."""
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p), ("reasoning_content", ctypes.c_char_p),
                ("tool_calls_json", ctypes.c_char_p), ("tool_call_id", ctypes.c_char_p), ("name", ctypes.c_char_p)]


class ChatParams(ctypes.Structure):
    _fields_ = [("template_name", ctypes.c_char_p), ("add_generation_prompt", ctypes.c_bool),
                ("enable_thinking", ctypes.c_int32), ("preserve_thinking", ctypes.c_bool),
                ("tools_json", ctypes.c_char_p)]


TOOL_EVENT_CONTENT, TOOL_EVENT_START, TOOL_EVENT_ARGS = 0, 1, 2
TOOL_CHOICE_AUTO, TOOL_CHOICE_NONE, TOOL_CHOICE_REQUIRED, TOOL_CHOICE_NAMED = 0, 1, 2, 3


class ToolEvent(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("index", ctypes.c_int32), ("text", ctypes.POINTER(ctypes.c_char)),
                ("len", ctypes.c_size_t)]


# bool (*specdec_piece_cb)(const specdec_piece *piece, void *user)
PIECE_FN = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.POINTER(Piece), ctypes.c_void_p)

_P = ctypes.c_void_p
_ERR = ctypes.POINTER(Error)
_SIGNATURES = {
    # name: (restype, argtypes)
    "specdec_version": (ctypes.c_char_p, []),
    "specdec_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "specdec_free": (None, [_P]),
    "specdec_model_load": (ctypes.c_int, [ctypes.c_char_p, _P, ctypes.POINTER(_P), _ERR]),
    "specdec_model_free": (None, [_P]),
    "specdec_model_path": (ctypes.c_char_p, [_P]),
    "specdec_model_name": (ctypes.c_char_p, [_P]),
    "specdec_model_arch": (ctypes.c_char_p, [_P]),
    "specdec_model_n_vocab": (ctypes.c_int32, [_P]),
    "specdec_model_n_ctx_train": (ctypes.c_int32, [_P]),
    "specdec_model_n_params": (ctypes.c_uint64, [_P]),
    "specdec_model_memory_get": (ctypes.c_int, [_P, ctypes.POINTER(ModelMemory), _ERR]),
    "specdec_model_chat_template": (ctypes.c_char_p, [_P]),
    "specdec_model_meta_str": (ctypes.c_char_p, [_P, ctypes.c_char_p]),
    "specdec_token_bos": (c_token, [_P]),
    "specdec_token_eos": (c_token, [_P]),
    "specdec_token_eot": (c_token, [_P]),
    "specdec_token_is_eog": (ctypes.c_bool, [_P, c_token]),
    "specdec_token_is_control": (ctypes.c_bool, [_P, c_token]),
    "specdec_token_text": (ctypes.c_char_p, [_P, c_token]),
    "specdec_tokenize": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool, ctypes.c_bool,
                                        ctypes.POINTER(c_token_p), ctypes.POINTER(ctypes.c_size_t), _ERR]),
    "specdec_detokenize": (ctypes.c_int, [_P, c_token_p, ctypes.c_size_t, ctypes.c_bool,
                                          ctypes.POINTER(ctypes.POINTER(ctypes.c_char)),
                                          ctypes.POINTER(ctypes.c_size_t), _ERR]),
    "specdec_token_to_piece": (ctypes.c_int32, [_P, c_token, ctypes.c_bool, ctypes.c_char_p, ctypes.c_size_t]),
    "specdec_context_default_params": (ContextParams, []),
    "specdec_context_init": (ctypes.c_int, [_P, ctypes.POINTER(ContextParams), ctypes.POINTER(_P), _ERR]),
    "specdec_context_free": (None, [_P]),
    "specdec_context_n_ctx": (ctypes.c_int32, [_P]),
    "specdec_context_tokens": (c_token_p, [_P, ctypes.POINTER(ctypes.c_size_t)]),
    "specdec_context_reset": (None, [_P]),
    "specdec_spec_mode_parse": (ctypes.c_bool, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "specdec_rollback_parse": (ctypes.c_bool, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "specdec_cache_type_parse": (ctypes.c_bool, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "specdec_stop_reason_name": (ctypes.c_char_p, [ctypes.c_int]),
    "specdec_grammar_init": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(_P),
                                            _ERR]),
    "specdec_grammar_from_json_schema": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool,
                                                        ctypes.c_bool, ctypes.POINTER(_P), _ERR]),
    "specdec_grammar_free": (None, [_P]),
    "specdec_grammar_accepts": (ctypes.c_bool, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "specdec_json_schema_to_gbnf": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool, ctypes.c_bool,
                                                   ctypes.POINTER(ctypes.POINTER(ctypes.c_char)),
                                                   ctypes.POINTER(ctypes.c_size_t), _ERR]),
    "specdec_chat_default_params": (ChatParams, []),
    "specdec_chat_builtin_templates": (ctypes.c_char_p, []),
    "specdec_chat_template_resolve": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), _ERR]),
    "specdec_chat_tokenize": (ctypes.c_int, [_P, ctypes.POINTER(ChatMessage), ctypes.c_size_t,
                                             ctypes.POINTER(ChatParams), ctypes.POINTER(ctypes.POINTER(ctypes.c_char)),
                                             ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(c_token_p),
                                             ctypes.POINTER(ctypes.c_size_t), _ERR]),
    "specdec_reasoning_init": (ctypes.c_int, [_P, ctypes.POINTER(ChatParams), ctypes.POINTER(_P), _ERR]),
    "specdec_reasoning_feed": (None, [_P, ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.POINTER(ctypes.POINTER(ctypes.c_char)), ctypes.POINTER(ctypes.c_size_t),
                                      ctypes.POINTER(ctypes.POINTER(ctypes.c_char)), ctypes.POINTER(ctypes.c_size_t)]),
    "specdec_reasoning_flush": (None, [_P, ctypes.POINTER(ctypes.POINTER(ctypes.c_char)),
                                       ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.POINTER(ctypes.c_char)),
                                       ctypes.POINTER(ctypes.c_size_t)]),
    "specdec_reasoning_free": (None, [_P]),
    "specdec_tool_syntax": (ctypes.c_char_p, [_P, ctypes.POINTER(ChatParams)]),
    "specdec_tool_grammar": (ctypes.c_int, [_P, ctypes.POINTER(ChatParams), ctypes.c_char_p, ctypes.c_size_t,
                                            ctypes.c_int, ctypes.c_char_p, ctypes.c_bool,
                                            ctypes.POINTER(ctypes.POINTER(ctypes.c_char)),
                                            ctypes.POINTER(ctypes.c_size_t), _ERR]),
    "specdec_tool_parser_init": (ctypes.c_int, [_P, ctypes.POINTER(ChatParams), ctypes.c_char_p, ctypes.c_size_t,
                                                ctypes.POINTER(_P), _ERR]),
    "specdec_tool_parser_feed": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t,
                                                ctypes.POINTER(ctypes.POINTER(ToolEvent)),
                                                ctypes.POINTER(ctypes.c_size_t)]),
    "specdec_tool_parser_flush": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.POINTER(ToolEvent)),
                                                 ctypes.POINTER(ctypes.c_size_t)]),
    "specdec_tool_parser_free": (None, [_P]),
    "specdec_generate_default_params": (GenerateParams, []),
    "specdec_option_find": (ctypes.POINTER(Option), [ctypes.c_char_p]),
    "specdec_option_range": (ctypes.c_int, [ctypes.POINTER(Option), ctypes.c_char_p, ctypes.c_size_t]),
    "specdec_generate_params_check": (ctypes.c_int, [_P, ctypes.POINTER(GenerateParams), _ERR]),
    "specdec_generate": (ctypes.c_int, [_P, c_token_p, ctypes.c_size_t, ctypes.POINTER(GenerateParams), PIECE_FN,
                                        _P, ctypes.POINTER(Stats), _ERR]),
}


def _candidates():
    """Where the library is looked for, in order (see the package docstring)."""
    env = os.environ.get(LIB_ENV)
    if env:
        # An explicit choice is the only one: a wrong path must not fall back silently.
        if os.path.isdir(env):
            return [os.path.join(env, n) for n in _LIB_NAMES]
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, n) for n in _LIB_NAMES]
    # A source checkout: python/specdec/ -> the repository's build/ directory.
    out += [os.path.join(here, os.pardir, os.pardir, "build", n) for n in _LIB_NAMES]
    # Installed (cmake --install) where the dynamic loader looks: LD_LIBRARY_PATH, ld.so.cache.
    out += list(_LIB_NAMES)
    found = ctypes.util.find_library("specdec")
    if found:
        out.append(found)
    return out


def _bound_openmp_spinning():
    """The OpenMP wait settings the specdec program gives itself (src/cli/main.c,
    include/specdec.h at specdec_default_threads): libgomp reads them when it is
    loaded, so they are set before the library is opened, unless the user chose."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "active"
        os.environ["GOMP_SPINCOUNT"] = "1000"


def _open():
    _bound_openmp_spinning()
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise OSError("libspecdec not found; build it (cmake --build build --target specdec_shared) or set %s to "
                  "its path. Tried: %s" % (LIB_ENV, "; ".join(tried)))


def _declare(lib):
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    version = lib.specdec_version().decode()
    major_minor = tuple(int(x) for x in version.split(".")[:2])
    if major_minor != API_VERSION:
        raise OSError("%s is libspecdec %s; this package needs %d.%d.x" %
                      (getattr(lib, "_name", "the library"), version, *API_VERSION))
    return lib


_lib = None


def lib():
    """The loaded library (loaded and checked on first use)."""
    global _lib
    if _lib is None:
        _lib = _declare(_open())
    return _lib
