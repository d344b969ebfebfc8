"""LlamaGrammar: llama-cpp-python's grammar object (llama_cpp.llama_grammar)
over the library's grammar engine.

A grammar is GBNF text in llama.cpp's dialect (start rule "root"); from a JSON
Schema it is the text the library's converter gives
(specdec_json_schema_to_gbnf). The text is compiled for a model's vocabulary
when a Llama first uses it (specdec_grammar_init needs the vocabulary), so a
syntax error raises SpecdecError ("grammar LINE:COL: ...") at that call; a
schema the converter refuses raises at from_json_schema.
"""
import ctypes
import json

from . import _lib as _c

__all__ = ["LlamaGrammar"]


def _schema_gbnf(schema, any_object=False, strict=False):
    """GBNF text for a JSON Schema (a dict or JSON text; any_object: any JSON
    object, schema ignored), or SpecdecError naming the keyword refused."""
    from . import SpecdecError
    L = _c.lib()
    if any_object:
        data = None
        n = 0
    else:
        text = schema if isinstance(schema, (str, bytes)) else json.dumps(schema)
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        n = len(data)
    out, olen, err = ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t(), _c.Error()
    st = L.specdec_json_schema_to_gbnf(data, n, strict, any_object, ctypes.byref(out), ctypes.byref(olen),
                                       ctypes.byref(err))
    if st != 0:
        raise SpecdecError(st, err.message.decode("utf-8", "replace"))
    try:
        return ctypes.string_at(out, olen.value).decode("utf-8")
    finally:
        L.specdec_free(out)


class LlamaGrammar:
    """GBNF text for Llama's grammar= keyword (llama-cpp-python's class of the
    same name: from_string, from_file, from_json_schema)."""

    def __init__(self, *args, _grammar=None, **kwargs):
        if _grammar is None:
            raise TypeError("make a LlamaGrammar with LlamaGrammar.from_string, from_file or from_json_schema")
        self._grammar = _grammar
        self._compiled = {}  # id(model) -> specdec.Grammar

    @classmethod
    def from_string(cls, grammar, verbose=True):
        """grammar: GBNF text with a rule named root. verbose is accepted (no output either way)."""
        if isinstance(grammar, bytes):
            grammar = grammar.decode("utf-8")
        if not isinstance(grammar, str):
            raise TypeError("grammar must be GBNF text, not %r" % (type(grammar).__name__,))
        return cls(_grammar=grammar)

    @classmethod
    def from_file(cls, file, verbose=True):
        with open(file, encoding="utf-8") as f:
            return cls.from_string(f.read(), verbose)

    @classmethod
    def from_json_schema(cls, json_schema, verbose=True):
        """json_schema: JSON text of a schema (a dict is taken too), converted
        by the library's converter (the server's response_format converter)."""
        return cls(_grammar=_schema_gbnf(json_schema))

    @property
    def grammar(self):
        """The GBNF text."""
        return self._grammar

    def _for(self, model, wrap=None):
        """The grammar compiled for model (a specdec.Model); wrap: extra rules
        and the start rule that replaces root (the reasoning section)."""
        from . import Grammar
        key = (id(model), wrap)
        g = self._compiled.get(key)
        if g is None:
            text, root = (self._grammar, None) if wrap is None else (self._grammar + wrap[0], wrap[1])
            g = Grammar(model, text, root)
            self._compiled[key] = g
        return g

    def __repr__(self):
        return "LlamaGrammar(%d bytes of GBNF)" % len(self._grammar)
