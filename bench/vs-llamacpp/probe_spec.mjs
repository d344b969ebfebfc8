// probe: the harness loop (spec.mjs) against a greedy reference, with a thread count
import { InputLookupTokenPredictor } from "node-llama-cpp";
import { loadLlama, loadPrompts, tokenizePrompt, oracleDrafts, vocabSize } from "./lib.mjs";
import { specGenerate, LookupDrafter, OracleDrafter, DraftModelDrafter } from "./spec.mjs";
const [modelPath, promptDir, promptName, nGen = "128", T = "1", modes = "ngram,oracle", draftPath = ""] = process.argv.slice(2);
const llama = await loadLlama(+T);
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const p = loadPrompts(promptDir).find((x) => x.name === promptName);
const ids = tokenizePrompt(model, p.text);
const mk = () => model.createContext({ contextSize: +(process.env.CTX ?? 1024), threads: { ideal: +T, min: +T }, sequences: 1, batchSize: 512 });
let ctx = await mk();
const N = +nGen;
const seq = ctx.getSequence();
await seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
const ref = [];
for await (const tok of seq.evaluate(ids.slice(-1), { temperature: 0, yieldEogToken: true })) { ref.push(tok); if (ref.length >= N) break; }
await ctx.dispose();
const fd = (a) => a.findIndex((x, i) => x !== ref[i]);
for (const m of modes.split(",")) {
  ctx = await mk();
  let drafter = null;
  if (m === "ngram") drafter = new LookupDrafter(new InputLookupTokenPredictor({ patternLength: { min: 1, max: 3 }, predictionLength: { min: 1, max: 8 } }));
  if (m.startsWith("oracle")) drafter = new OracleDrafter(oracleDrafts(ref, +(m.slice(6) || 0.7), 1, vocabSize(model)), ids.length);
  let dctx = null;
  if (m === "draft") { const dm = await llama.loadModel({ modelPath: draftPath, gpuLayers: 0 }); dctx = await dm.createContext({ contextSize: +(process.env.CTX ?? 1024), threads: { ideal: +T, min: +T }, sequences: 1, batchSize: 512 }); drafter = new DraftModelDrafter(dctx.getSequence()); }
  const r = await specGenerate(ctx.getSequence(), ids, drafter, { n: N, k: 8 });
  console.log(`T=${T} ${promptName} ${m}: first diff ${fd(r.ids)}`, JSON.stringify(r.stats));
  await ctx.dispose(); if (dctx) await dctx.dispose();
}
await llama.dispose();
