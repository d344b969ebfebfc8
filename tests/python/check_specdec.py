"""Checks of the specdec Python package against the command line's output,
run by python.test.sh: argv = target, draft, prompt, n_predict, the directory
holding the CLI's outputs (greedy/sample .txt, .json, .stats; missing.err;
tokenize.txt). Exits with the number of failed checks."""
import json
import os
import sys

import specdec

target, draft, prompt, n_predict, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
fails = 0


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print("FAIL: " + what)


def read(name, mode="r"):
    with open(os.path.join(out, name), mode) as f:
        return f.read()


# The ctypes structs' layout: the library's defaults read through them are the
# documented ones up to the last field (a shifted field reads another's bytes).
d = specdec._c.lib().specdec_generate_default_params()

defaults = dict(n_predict=128, spec=3, draft_max=8, fixed_k=False, ngram_min=1, ngram_max=3, gate=4, temperature=0.0,
                top_k=0, top_p=1.0, min_p=0.0, seed=42, draft_sample=False, n_stop=0, stop_at_eog=True,
                check_lossless=False, hybrid_rollback=0, hybrid_window=9, tree_nodes=0, tree_width=2,
                presence_penalty=0.0, frequency_penalty=0.0, repeat_penalty=1.0, repeat_last_n=64, n_logit_bias=0,
                logprobs=-1)
for k, v in defaults.items():
    check(getattr(d, k) == v, "default %s is %r, the header says %r" % (k, getattr(d, k), v))

# The OpenMP wait settings are in the environment before the library loaded
# (python.test.sh runs this with neither set): libgomp reads them only then.
check(os.environ.get("OMP_WAIT_POLICY") == "active" and os.environ.get("GOMP_SPINCOUNT") == "1000",
      "after loading the library OMP_WAIT_POLICY=%r GOMP_SPINCOUNT=%r, not active and 1000"
      % (os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT")))
check(not d.abort and not d.stop and not d.suffix_cache and not d.grammar and not d.logit_bias,
      "default abort/stop/suffix_cache/grammar/logit_bias are not NULL")
check(specdec.version() == specdec.__version__, "library %s, package %s" % (specdec.version(), specdec.__version__))

llm = specdec.LLM(target, draft_path=draft)
settings = {"greedy": dict(temperature=0.0, seed=7), "sample": dict(temperature=0.8, seed=7),
            "penal": dict(temperature=0.8, seed=7, presence_penalty=0.7, frequency_penalty=0.4, repeat_penalty=1.3,
                          repeat_last_n=32)}
for name, opts in settings.items():
    cli_text, cli = read(name + ".txt", "rb"), json.loads(read(name + ".json"))
    stream = llm.stream(prompt, n_predict=n_predict, **opts)
    pieces = list(stream)
    r = stream.result
    check(len(pieces) > 1, "%s: the text came in %d piece(s), not streamed" % (name, len(pieces)))
    check("".join(pieces).encode() == cli_text, "%s: streamed text %r != the CLI's %r" % (name, "".join(pieces), cli_text))
    check(r.text.encode() == cli_text, "%s: Result.text differs from the CLI's" % name)
    check(r.tokens == cli["tokens"], "%s: tokens %s != the CLI's %s" % (name, r.tokens, cli["tokens"]))
    check((r.stats.n_prompt, r.stats.n_gen, r.stats.drafter) == (cli["n_prompt"], cli["n_gen"], cli["spec"]),
          "%s: stats (n_prompt, n_gen, drafter) %r != the CLI's" % (name, (r.stats.n_prompt, r.stats.n_gen, r.stats.drafter)))
    check(llm.stats is r.stats and r.stats.lossless is None and "LOSSLESS" not in str(r.stats),
          "%s: an unchecked run's stats: %s" % (name, r.stats))
    # The callback form, and again on a fresh context (no prefix reuse): the same bytes.
    got = []
    again = llm.generate(prompt, on_piece=got.append, n_predict=n_predict, **opts)
    check("".join(got) == again.text == r.text, "%s: generate(on_piece) differs from stream" % name)
    check(again.stats.n_cached == again.stats.n_prompt - 1, "%s: the second call reused %d of %d prompt tokens"
          % (name, again.stats.n_cached, again.stats.n_prompt))
    with specdec.Context(llm.model, llm.draft) as fresh:
        check(fresh.generate(prompt, n_predict=n_predict, **opts).text == r.text, "%s: a fresh context differs" % name)
    # The lossless check: reported as the CLI reports it on the same run.
    checked = llm.generate(prompt, n_predict=n_predict, check_lossless=True, **opts).stats
    line = "LOSSLESS %d/%d" % (checked.n_gen, checked.plain_n_gen)
    check(checked.lossless is True and checked.lossless_checked and checked.plain_n_gen == checked.n_gen,
          "%s: lossless check: %r" % (name, checked))
    check(line in str(checked) and line in read(name + ".stats"), "%s: '%s' not in both stats lines:\n  %s\n  %s"
          % (name, line, checked, read(name + ".stats")))
    check(checked.speedup is not None and checked.greedy_tok_s is not None and checked.acceptance is not None,
          "%s: a checked run lacks speedup/greedy tok/s/α: %s" % (name, checked))
    check(checked.acceptance == checked.n_accepted / checked.n_drafted and
          checked.accepted_per_round == checked.n_accepted / checked.n_rounds, "%s: α or accepted/round wrong" % name)

# A quantized KV cache: the CLI's -ctk q8_0 -ctv q4_0 bytes, lossless against plain decoding over the same
# cache; a name that is no cache type raises before anything loads.
with specdec.Context(llm.model, llm.draft, cache_type_k="q8_0", cache_type_v="q4_0") as kvq:
    r = kvq.generate(prompt, n_predict=n_predict, temperature=0.0, seed=7, check_lossless=True)
    check(r.text.encode() == read("kvq.txt", "rb"), "KV q8_0/q4_0: text %r != the CLI's" % r.text)
    check(r.stats.lossless is True, "KV q8_0/q4_0: not lossless: %s" % r.stats)
try:
    specdec.Context(llm.model, cache_type_k="q8_1")
    check(False, "cache_type_k='q8_1' was accepted")
except specdec.SpecdecError as e:
    check("cache_type must be f16" in str(e) and "q8_1" in str(e), "cache_type_k='q8_1': %s" % e)

# A missing model: the package's exception with the library's message, the one the CLI prints.
cli_msg = read("missing.err").strip()
for call in (lambda: specdec.Model("models/missing.gguf"),
             lambda: specdec.LLM(target, draft_path="models/missing.gguf")):
    try:
        call()
        check(False, "a missing model loaded")
    except specdec.SpecdecError as e:
        check("specdec: " + str(e) == cli_msg and e.message == str(e),
              "missing model: %r, the CLI says %r" % (str(e), cli_msg))
        check(e.code == specdec.ERR_IO and e.status == "i/o error", "missing model: code %r (%s)" % (e.code, e.status))

# Errors of options: the library's ERR_ARG, and Python's TypeError for a name that is no option.
plain = specdec.Context(llm.model)
for opts, words in ((dict(spec="draft"), "draft"), (dict(spec="bogus"), "spec must be"),
                    (dict(draft_max=0), "draft_max"), (dict(n_predict=2 ** 40), "n_predict"),
                    (dict(stop=[""]), "stop"),
                    # the command line's ranges (`specdec generate --temp -1` is refused the same way)
                    (dict(temperature=-1), "temperature -1: out of range [0, 100]"),
                    (dict(temperature=101.0), "out of range [0, 100]"), (dict(top_p=0.0), "top_p"),
                    (dict(min_p=1.0), "min_p"), (dict(n_predict=-2), "n_predict")):
    try:
        plain.generate(prompt, **dict(dict(n_predict=4), **opts))
        check(False, "%r was accepted" % opts)
    except specdec.SpecdecError as e:
        check(e.code == specdec.ERR_ARG and words in str(e), "%r: %s (%s)" % (opts, e, e.status))
try:
    plain.generate(prompt, temprature=1)
    check(False, "an unknown option was accepted")
except TypeError:
    pass

# Stopping: on_piece returning False, a stream closed early, an exception in
# the callback; the context generates the same text afterwards.
ref = plain.generate(prompt, n_predict=n_predict)
r = plain.generate(prompt, on_piece=lambda t: False, n_predict=n_predict)
check(r.stats.stop_reason == "cancelled" and r.stats.n_gen < ref.stats.n_gen, "on_piece False: %r" % r.stats.stop_reason)
s = plain.stream(prompt, n_predict=n_predict)
first = next(s)
try:
    plain.generate(prompt)
    check(False, "a second generation ran during a stream")
except RuntimeError:
    pass
s.close()
check(s.result is not None and s.result.stats.stop_reason == "cancelled" and ref.text.startswith(first),
      "stream closed early: %r" % (s.result and s.result.stats.stop_reason))

for _ in plain.stream(prompt, n_predict=4000, stop_at_eog=False):
    break  # the dropped stream is collected: it cancels and frees the context
check(plain.generate(prompt, n_predict=n_predict).text == ref.text, "the context differs after a dropped stream")


class Boom(Exception):
    pass


def boom(text):
    raise Boom(text)


try:
    plain.generate(prompt, on_piece=boom)
    check(False, "the callback's exception was lost")
except Boom:
    pass
check(plain.generate(prompt, n_predict=n_predict).text == ref.text, "the context differs after the stops")
stopped = plain.generate(prompt, n_predict=n_predict, stop=[ref.text[5:9]])
check(stopped.stats.stop_reason == "stop" and stopped.text == ref.text[:5], "stop string: %r" % stopped.text)

# Tokenize: the CLI's ids; detokenize its byte-exact inverse (invalid UTF-8 too).
ids = llm.tokenize(prompt, add_special=False)
check(ids == [int(x) for x in read("tokenize.txt").split()], "tokenize %s != specdec tokenize" % ids)
for text in (prompt, "", "x", "  spaces\tand\nnewlines\n", "ünïcödé ∑ 漢字 🙂", b"\xff\xfe bytes \xc3"):
    data = text if isinstance(text, bytes) else text.encode()
    got = llm.detokenize(llm.tokenize(text, add_special=False))
    check(got == data, "round trip of %r gave %r" % (data, got))
    with_bos = llm.tokenize(text)
    check(llm.detokenize(with_bos) == data, "round trip with add_special of %r" % data)
check(b"".join(llm.model.token_to_piece(t) for t in ids) == prompt.encode(), "token_to_piece pieces != the prompt")
try:
    llm.detokenize([llm.model.n_vocab])
    check(False, "an id out of range was detokenized")
except specdec.SpecdecError as e:
    check(e.code == specdec.ERR_ARG, "id out of range: %s" % e)

# Grammars: the output is kept to the grammar, speculative == constrained plain
# decoding; a bad grammar raises with line:col; a schema becomes a grammar.
g = specdec.Grammar(llm.model, 'root ::= [a-z]{1,8} (" " [a-z]{1,8}){0,6} "."')
con = llm.generate(prompt, n_predict=n_predict, grammar=g, check_lossless=True)
check(con.stats.lossless is True, "constrained generation not lossless: %s" % con.stats)
check(g.accepts(con.text) if con.stats.stop_reason in ("eog", "grammar") else not g.accepts(con.text + "!"),
      "constrained output %r (%s) is not a sentence" % (con.text, con.stats.stop_reason))
check(con.text != ref.text, "the grammar changed nothing")
try:
    specdec.Grammar(llm.model, 'root ::= ("a"')
    check(False, "a bad grammar compiled")
except specdec.SpecdecError as e:
    check(e.code == specdec.ERR_FORMAT and "1:10" in str(e), "bad grammar: %s" % e)
js = specdec.Grammar.from_json_schema(llm.model, {"type": "object", "properties": {"a": {"type": "integer"}},
                                                  "required": ["a"]}, strict=True)
check(js.accepts('{"a": 12}') and not js.accepts('{"a": "x"}'), "schema grammar accepts the wrong documents")
check(specdec.Grammar.from_json_schema(llm.model, None).accepts('{"any": [1, true]}'), "json_object grammar")
js.close()
g.close()

# Penalties and logit bias: the CLI's text above ("penal"); a banned token never
# comes, speculation lossless; out-of-range values refused as the CLI refuses them.
banned = llm.generate(prompt, n_predict=n_predict).tokens[0]
lb = llm.generate(prompt, n_predict=n_predict, logit_bias={banned: -100, str(ids[0]): 2.5}, presence_penalty=0.5,
                  check_lossless=True)
check(banned not in lb.tokens, "logit_bias -100: token %d still generated" % banned)
check(lb.stats.lossless is True, "penalised generation not lossless: %s" % lb.stats)
# Log-probabilities: one per delivered token, the same with speculation on and off.
spec_lp = llm.generate(prompt, n_predict=n_predict, logprobs=3, presence_penalty=0.5)
plain_lp = plain.generate(prompt, n_predict=n_predict, logprobs=3, presence_penalty=0.5)
check(spec_lp.logprobs == plain_lp.logprobs and len(spec_lp.logprobs) > 0,
      "log-probabilities differ with speculation on and off")
check([d["token"] for d in spec_lp.logprobs] == spec_lp.tokens[:len(spec_lp.logprobs)], "logprobs' tokens != tokens")
check(all(d["top"][0][0] == d["token"] and len(d["top"]) == 3 and d["logprob"] <= 0 for d in spec_lp.logprobs),
      "greedy: the chosen token is not the best alternative")
check(llm.generate(prompt, n_predict=2).logprobs is None, "logprobs without asking")
for bad in (dict(presence_penalty=3.0), dict(logprobs=21), dict(repeat_last_n=-2), dict(logit_bias={banned: 101}),
            dict(logit_bias={llm.model.n_vocab: 1})):
    try:
        llm.generate(prompt, n_predict=2, **bad)
        check(False, "%s was accepted" % bad)
    except specdec.SpecdecError as e:
        check(e.code == specdec.ERR_ARG and list(bad)[0] in str(e), "%s: %s" % (bad, e))

plain.close()
llm.close()
print("check_specdec.py: %d failed" % fails if fails else "check_specdec.py: all checks passed")
sys.exit(fails)
