#!/usr/bin/env node
// llama.cpp's side of the race (through node-llama-cpp's prebuilt CPU build).
// Measures, on one GGUF with a given thread count:
//   prefill tok/s, greedy decode tok/s, c_v(S) (S-token forward with logits
//   for every row, on a warmed KV cache, rolled back after each), and
//   speculative decoding with its InputLookupTokenPredictor (n-gram),
//   DraftSequenceTokenPredictor (draft model) and an oracle predictor of
//   known acceptance alpha (lib.mjs), on the same prompts and token budget.
// Prints JSON (stdout or --json FILE); progress on stderr.
//
// Speculative modes run through spec.mjs's verify loop over llama.cpp (not
// node-llama-cpp's token-predictor loop, which accepts at most one draft
// token per round in 3.22.1; `--spec-loop node-llama-cpp` runs that instead).
//
//   node llamacpp_bench.mjs -m MODEL.gguf [-md DRAFT.gguf] [--prompts DIR] [-n 128]
//        [--reps 3] [-t 2] [-k 8] [--alphas 0.5,0.7,0.9] [--seed 1] [--cv-max 17]
//        [--modes greedy,ngram,draft,oracle,cv[,loop]] [--spec-loop harness|node-llama-cpp]
//
// Timing definitions (the same as `specdec bench`): prefill = n_prompt - 1
// tokens through one batched forward; decode tok/s = (n - 1) / (time from
// the first generated token to the n-th), so the forward that produced the
// first token (the last prompt token) is in neither figure. Speedups are
// over node-llama-cpp's plain greedy evaluate() (mode "greedy"); mode "loop"
// is greedy through the harness loop, to see the loop's own overhead.
import fs from "node:fs";
import { parseArgs } from "node:util";
import { InputLookupTokenPredictor, DraftSequenceTokenPredictor, getModuleVersion } from "node-llama-cpp";
import { loadLlama, loadPrompts, median, nowS, tokenizePrompt, vocabSize, OraclePredictor, oracleDrafts,
  expectedAccepted, alphaGeo } from "./lib.mjs";
import { specGenerate, OracleDrafter, LookupDrafter, DraftModelDrafter } from "./spec.mjs";

// "-md" is one option here, as in `specdec bench`, not the short group -m -d
const { values: opt } = parseArgs({
  args: process.argv.slice(2).map((a) => (a === "-md" ? "--md" : a)),
  options: {
    m: { type: "string" },
    md: { type: "string" },
    prompts: { type: "string", default: new URL("../prompts", import.meta.url).pathname },
    n: { type: "string", default: "128" },
    reps: { type: "string", default: "3" },
    t: { type: "string", default: "2" },
    k: { type: "string", default: "8" },
    alphas: { type: "string", default: "0.5,0.7,0.9" },
    seed: { type: "string", default: "1" },
    "spec-loop": { type: "string", default: "harness" },
    "cv-max": { type: "string", default: "17" },
    modes: { type: "string", default: "greedy,ngram,draft,oracle,cv" },
    "oracle-prompt": { type: "string", default: "" },
    json: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (opt.help || !opt.m) {
  console.error("usage: node llamacpp_bench.mjs -m MODEL.gguf [-md DRAFT.gguf] [--prompts DIR] [-n N] [--reps R] [-t T] [-k K] [--alphas a,b] [--seed S] [--cv-max S] [--modes greedy,ngram,draft,oracle,cv,loop] [--spec-loop harness|node-llama-cpp] [--json OUT]");
  process.exit(opt.help ? 0 : 2);
}
const N = +opt.n, REPS = +opt.reps, T = +opt.t, K = +opt.k, CV_MAX = +opt["cv-max"], SEED = +opt.seed;
const NLC_LOOP = opt["spec-loop"] === "node-llama-cpp";
if (!NLC_LOOP && opt["spec-loop"] !== "harness") {
  console.error("llamacpp_bench: --spec-loop is harness or node-llama-cpp");
  process.exit(2);
}
const ALPHAS = opt.alphas.split(",").filter(Boolean).map(Number);
const MODES = new Set(opt.modes.split(","));
const progress = (s) => process.stderr.write(`\rllama.cpp: ${s}`.padEnd(70) + (s.endsWith("done") ? "\n" : ""));

const llama = await loadLlama(T);
const model = await llama.loadModel({ modelPath: opt.m, gpuLayers: 0 });
const draftModel = opt.md && MODES.has("draft") ? await llama.loadModel({ modelPath: opt.md, gpuLayers: 0 }) : null;
const prompts = loadPrompts(opt.prompts).map((p) => ({ ...p, ids: tokenizePrompt(model, p.text) }));
const nVocab = vocabSize(model);
const maxPrompt = Math.max(...prompts.map((p) => p.ids.length));
const contextSize = Math.max(512, maxPrompt + N + 64 + CV_MAX);

async function newContext(m = model) {
  return m.createContext({ contextSize, threads: { ideal: T, min: T }, sequences: 1, batchSize: Math.max(512, maxPrompt) });
}

// One generation: prefill all but the last prompt token, then generate N
// tokens greedily (temperature 0) through seq's token predictor, if any.
async function generate(seq, ids) {
  await seq.clearHistory();
  const t0 = nowS();
  await seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
  const t1 = nowS();
  const out = [];
  let tFirst = 0;
  for await (const tok of seq.evaluate(ids.slice(-1), { temperature: 0, yieldEogToken: true })) {
    out.push(tok);
    if (out.length === 1) tFirst = nowS();
    if (out.length >= N) break;
  }
  const t2 = nowS();
  return {
    ids: out,
    prefill_tok_s: (ids.length - 1) / (t1 - t0),
    decode_tok_s: out.length > 1 ? (out.length - 1) / (t2 - tFirst) : null,
  };
}

// Index of the first token where a differs from the reference b, or -1.
function firstDiff(a, b) {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return -1;
}

const result = {
  engine: "llama.cpp",
  node_llama_cpp: await getModuleVersion(),
  llama_cpp_release: llama.llamaCppRelease,
  system_info: llama.systemInfo,
  model: opt.m,
  draft: draftModel ? opt.md : null,
  threads: T,
  n_predict: N,
  reps: REPS,
  k: K,
  seed: SEED,
  spec_loop: NLC_LOOP ? "node-llama-cpp" : "harness",
  prompts: [],
};

// One speculative generation of a mode on a fresh context. spec = { drafter,
// predictor, dispose }: a drafter for the harness loop (spec.mjs), a
// TokenPredictor for node-llama-cpp's loop. Returns the run and its counters
// (rounds = verify forwards that carried drafts).
async function specRun(ids, spec) {
  const sctx = await newContext();
  try {
    if (!NLC_LOOP) {
      const run = await specGenerate(sctx.getSequence(), ids, spec.drafter, { n: N, k: K });
      return { ...run, predictions: null };
    }
    const seq = sctx.getSequence({ tokenPredictor: spec.predictor });
    spec.predictor.updateInputTokens?.(ids);
    const run = await generate(seq, ids);
    const { validated, refuted } = seq.tokenPredictions;
    const rounds = spec.predictor.rounds ?? null, drafted = spec.predictor.proposed ?? validated + refuted;
    return { ...run, stats: { rounds, drafted, accepted: validated }, predictions: seq.tokenPredictions };
  } finally {
    await sctx.dispose();
    if (spec.dispose) await spec.dispose();
  }
}

// REPS runs of one mode against the greedy reference ref: median tok/s,
// speedup over greedyTokS, acceptance counters summed over the runs, and
// lossless = runs whose ids equal ref (first_diff: where the others left it).
async function specMode(label, ids, ref, greedyTokS, make) {
  const runs = [];
  const sum = { rounds: 0, drafted: 0, accepted: 0 };
  let lossless = 0;
  const firstDiffs = [];
  for (let r = 0; r < REPS; r++) {
    progress(`${label} rep ${r + 1}/${REPS}`);
    const g = await specRun(ids, await make(r));
    runs.push(g);
    const d = firstDiff(g.ids, ref);
    if (d < 0) lossless++;
    else firstDiffs.push(d);
    for (const key of Object.keys(sum)) sum[key] += g.stats[key] ?? NaN;
  }
  const tokS = median(runs.map((x) => x.decode_tok_s));
  const accPerRound = sum.rounds > 0 ? sum.accepted / sum.rounds : null;
  return {
    decode_tok_s: tokS,
    runs_tok_s: runs.map((x) => x.decode_tok_s),
    speedup: tokS / greedyTokS,
    lossless: `${lossless}/${REPS}`,
    first_diff: firstDiffs,
    ...sum,
    accepted_per_round: accPerRound,
    alpha: sum.drafted > 0 ? sum.accepted / sum.drafted : null,   // accepted / drafted
    alpha_geo: accPerRound == null ? null : alphaGeo(accPerRound, K),  // as ours reports
    predictions: runs.at(-1).predictions,  // node-llama-cpp's own counters (its loop only)
  };
}

// ---- greedy, and the speculative modes beside it, prompt by prompt ----
const ctx = await newContext();
const seqGreedy = ctx.getSequence();
for (const [pi, p] of prompts.entries()) {
  const rec = { name: p.name, class: p.cls, n_prompt: p.ids.length, modes: {} };
  const greedyRuns = [];
  for (let r = 0; r < REPS; r++) {
    progress(`${p.name} greedy rep ${r + 1}/${REPS} (${pi + 1}/${prompts.length})`);
    greedyRuns.push(await generate(seqGreedy, p.ids));
  }
  const ref = greedyRuns[0].ids;
  rec.greedy_ids = ref;
  rec.modes.greedy = {
    prefill_tok_s: median(greedyRuns.map((x) => x.prefill_tok_s)),
    decode_tok_s: median(greedyRuns.map((x) => x.decode_tok_s)),
    runs_tok_s: greedyRuns.map((x) => x.decode_tok_s),
    n_gen: ref.length,
  };
  const gTokS = rec.modes.greedy.decode_tok_s;
  if (MODES.has("loop"))
    rec.modes.loop = await specMode(`${p.name} loop`, p.ids, ref, gTokS, async () => ({ drafter: null }));
  if (MODES.has("ngram")) {
    const lookup = () => new InputLookupTokenPredictor({ patternLength: { min: 1, max: 3 }, predictionLength: { min: 1, max: K } });
    rec.modes.ngram = await specMode(`${p.name} ngram`, p.ids, ref, gTokS, async () =>
      NLC_LOOP ? { predictor: lookup() } : { drafter: new LookupDrafter(lookup()) });
  }
  if (draftModel)
    rec.modes.draft = await specMode(`${p.name} draft`, p.ids, ref, gTokS, async () => {
      const dctx = await newContext(draftModel);
      const dispose = () => dctx.dispose();
      if (!NLC_LOOP) return { drafter: new DraftModelDrafter(dctx.getSequence()), dispose };
      return { predictor: new DraftSequenceTokenPredictor(dctx.getSequence(), { minTokens: 0, maxTokens: K, minConfidence: 0 }), dispose };
    });
  result.prompts.push(rec);
}

// ---- synthetic acceptance: the oracle drafter at known alpha ----
// The same prompt (the first, or --oracle-prompt), K, seeds (SEED + rep) and
// per-position corruption as `specdec bench --tables oracle`.
if (MODES.has("oracle")) {
  const p = prompts.find((x) => x.name === opt["oracle-prompt"]) ?? prompts[0];
  const prec = result.prompts.find((x) => x.name === p.name);
  const ref = prec.greedy_ids, greedyTokS = prec.modes.greedy.decode_tok_s;
  result.oracle = { prompt: p.name, k: K, seed: SEED, greedy_tok_s: greedyTokS, alphas: [] };
  for (const alpha of ALPHAS) {
    const m = await specMode(`oracle alpha ${alpha}`, p.ids, ref, greedyTokS, async (r) => {
      const drafts = oracleDrafts(ref, alpha, SEED + r, nVocab);
      return NLC_LOOP ? { predictor: new OraclePredictor({ drafts, nPrompt: p.ids.length, k: K }) }
        : { drafter: new OracleDrafter(drafts, p.ids.length) };
    });
    result.oracle.alphas.push({ ...m, alpha, accept_rate: m.alpha, measured_alpha: m.alpha_geo,
      expected_accepted_per_round: expectedAccepted(alpha, K) });
  }
}

// ---- c_v(S): an S-token forward with logits on every row, warmed KV ----
if (MODES.has("cv")) {
  const p = prompts[0];
  await seqGreedy.clearHistory();
  await seqGreedy.evaluateWithoutGeneratingNewTokens(p.ids);
  const base = seqGreedy.nextTokenIndex;
  const filler = p.ids.slice(0, CV_MAX);
  while (filler.length < CV_MAX) filler.push(p.ids[filler.length % p.ids.length]);
  const ms = [];
  for (let S = 1; S <= CV_MAX; S++) {
    progress(`c_v(S) S=${S}/${CV_MAX}`);
    const times = [];
    for (let r = 0; r < Math.max(3, REPS); r++) {
      const items = filler.slice(0, S).map((t) => [t, { generateNext: { token: true } }]);
      const t0 = nowS();
      await seqGreedy.controlledEvaluate(items);
      times.push(nowS() - t0);
      await seqGreedy.eraseContextTokenRanges([{ start: base, end: seqGreedy.nextTokenIndex }]);
    }
    ms.push(median(times) * 1e3);
  }
  result.cv = ms.map((m, i) => ({ S: i + 1, ms: m, c_v: m / ms[0] }));
  result.prefill_tok_s = median(result.prompts.map((x) => x.modes.greedy.prefill_tok_s));
}
progress("done");

const text = JSON.stringify(result, null, 1);
if (opt.json) fs.writeFileSync(opt.json, text + "\n");
else process.stdout.write(text + "\n");
await llama.dispose();
