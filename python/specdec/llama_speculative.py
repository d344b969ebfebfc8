"""LlamaPromptLookupDecoding: llama-cpp-python's prompt-lookup drafter
(llama_cpp.llama_speculative), mapped onto the library's n-gram drafter.

Llama(draft_model=LlamaPromptLookupDecoding(max_ngram_size=2,
num_pred_tokens=10)) runs spec "ngram" with n-grams of 1..max_ngram_size
tokens looked up in the context and at most num_pred_tokens drafted per
verify round. The drafting happens in C inside the verifier, so the object
itself holds only the two numbers; the output is plain decoding's either way.
"""

__all__ = ["LlamaDraftModel", "LlamaPromptLookupDecoding"]


class LlamaDraftModel:
    """llama-cpp-python's base class of drafters. A Python drafter cannot run
    inside the library's verifier: Llama refuses any but LlamaPromptLookupDecoding."""

    def __call__(self, input_ids, **kwargs):
        raise NotImplementedError("drafting runs inside libspecdec; this object only names its settings")


class LlamaPromptLookupDecoding(LlamaDraftModel):
    def __init__(self, max_ngram_size=2, num_pred_tokens=10):
        if not isinstance(max_ngram_size, int) or not 1 <= max_ngram_size <= 8:
            raise ValueError("max_ngram_size must be an integer in [1, 8], got %r" % (max_ngram_size,))
        if not isinstance(num_pred_tokens, int) or not 1 <= num_pred_tokens <= 64:
            raise ValueError("num_pred_tokens must be an integer in [1, 64], got %r" % (num_pred_tokens,))
        self.max_ngram_size = max_ngram_size
        self.num_pred_tokens = num_pred_tokens
