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
//   node llamacpp_bench.mjs -m MODEL.gguf [-md DRAFT.gguf] [--prompts DIR] [-n 128]
//        [--reps 3] [-t 2] [-k 8] [--alphas 0.5,0.7,0.9] [--cv-max 17] [--modes ...]
//
// Timing definitions (the same as `specdec bench`): prefill = n_prompt - 1
// tokens through one batched forward; decode tok/s = (n - 1) / (time from
// the first generated token to the n-th), so the forward that produced the
// first token (the last prompt token) is in neither figure.
import fs from "node:fs";
import { parseArgs } from "node:util";
import { InputLookupTokenPredictor, DraftSequenceTokenPredictor, getModuleVersion } from "node-llama-cpp";
import { loadLlama, loadPrompts, median, nowS, tokenizePrompt, vocabSize, OraclePredictor } from "./lib.mjs";

const { values: opt } = parseArgs({
  options: {
    m: { type: "string" },
    md: { type: "string" },
    prompts: { type: "string", default: new URL("../prompts", import.meta.url).pathname },
    n: { type: "string", default: "128" },
    reps: { type: "string", default: "3" },
    t: { type: "string", default: "2" },
    k: { type: "string", default: "8" },
    alphas: { type: "string", default: "0.5,0.7,0.9" },
    "cv-max": { type: "string", default: "17" },
    modes: { type: "string", default: "greedy,ngram,draft,oracle,cv" },
    "oracle-prompt": { type: "string", default: "" },
    json: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (opt.help || !opt.m) {
  console.error("usage: node llamacpp_bench.mjs -m MODEL.gguf [-md DRAFT.gguf] [--prompts DIR] [-n N] [--reps R] [-t T] [-k K] [--alphas a,b] [--cv-max S] [--modes greedy,ngram,draft,oracle,cv] [--json OUT]");
  process.exit(opt.help ? 0 : 2);
}
const N = +opt.n, REPS = +opt.reps, T = +opt.t, K = +opt.k, CV_MAX = +opt["cv-max"];
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

function sameIds(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
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
  prompts: [],
};

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
  const specModes = [];
  if (MODES.has("ngram"))
    specModes.push(["ngram", async () => ({ predictor: new InputLookupTokenPredictor({ patternLength: { min: 1, max: 3 }, predictionLength: { min: 1, max: K } }) })]);
  if (draftModel)
    specModes.push(["draft", async () => {
      const dctx = await newContext(draftModel);
      return { predictor: new DraftSequenceTokenPredictor(dctx.getSequence(), { minTokens: 0, maxTokens: K, minConfidence: 0 }), dispose: () => dctx.dispose() };
    }]);
  for (const [mode, make] of specModes) {
    const runs = [];
    let stats = null, lossless = 0;
    for (let r = 0; r < REPS; r++) {
      progress(`${p.name} ${mode} rep ${r + 1}/${REPS}`);
      const { predictor, dispose } = await make();
      const sctx = await newContext();
      const seq = sctx.getSequence({ tokenPredictor: predictor });
      if (predictor.updateInputTokens) predictor.updateInputTokens(p.ids);
      const g = await generate(seq, p.ids);
      runs.push(g);
      lossless += sameIds(g.ids, ref) ? 1 : 0;
      stats = seq.tokenPredictions;
      await sctx.dispose();
      if (dispose) await dispose();
    }
    rec.modes[mode] = {
      decode_tok_s: median(runs.map((x) => x.decode_tok_s)),
      runs_tok_s: runs.map((x) => x.decode_tok_s),
      speedup: median(runs.map((x) => x.decode_tok_s)) / rec.modes.greedy.decode_tok_s,
      lossless: `${lossless}/${REPS}`,
      predictions: stats,
      alpha: stats ? stats.validated / Math.max(1, stats.validated + stats.refuted) : null,
    };
  }
  result.prompts.push(rec);
}

// ---- synthetic acceptance: the oracle predictor at known alpha ----
if (MODES.has("oracle")) {
  const p = prompts.find((x) => x.name === opt["oracle-prompt"]) ?? prompts[0];
  const ref = result.prompts.find((x) => x.name === p.name).greedy_ids;
  const greedyTokS = result.prompts.find((x) => x.name === p.name).modes.greedy.decode_tok_s;
  result.oracle = { prompt: p.name, k: K, greedy_tok_s: greedyTokS, alphas: [] };
  for (const alpha of ALPHAS) {
    const runs = [];
    let lossless = 0, acc = 0, prop = 0, rounds = 0;
    for (let r = 0; r < REPS; r++) {
      progress(`oracle alpha ${alpha} rep ${r + 1}/${REPS}`);
      const predictor = new OraclePredictor({ greedy: ref, nPrompt: p.ids.length, alpha, k: K, seed: 1234 + r, nVocab });
      const sctx = await newContext();
      const seq = sctx.getSequence({ tokenPredictor: predictor });
      const g = await generate(seq, p.ids);
      runs.push(g);
      lossless += sameIds(g.ids, ref) ? 1 : 0;
      acc += seq.tokenPredictions.validated;
      prop += predictor.proposed;
      rounds += predictor.rounds;
      await sctx.dispose();
    }
    const tokS = median(runs.map((x) => x.decode_tok_s));
    result.oracle.alphas.push({
      alpha, decode_tok_s: tokS, runs_tok_s: runs.map((x) => x.decode_tok_s), speedup: tokS / greedyTokS,
      measured_alpha: acc / Math.max(1, prop), accepted_per_round: acc / Math.max(1, rounds), lossless: `${lossless}/${REPS}`,
    });
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
