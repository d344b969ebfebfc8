// probe: llama.cpp's next-token distribution along a fixed token chain, for several models
import { loadLlama, tokenizePrompt, loadPrompts } from "./lib.mjs";
const [promptDir, promptName, chainStr, ...models] = process.argv.slice(2);
const llama = await loadLlama(1);
const chain = chainStr.split(/\s+/).filter(Boolean).map(Number);
for (const mp of models) {
  const model = await llama.loadModel({ modelPath: mp, gpuLayers: 0 });
  const p = loadPrompts(promptDir).find((x) => x.name === promptName);
  const ids = tokenizePrompt(model, p.text);
  const ctx = await model.createContext({ contextSize: 1024, threads: { ideal: 1, min: 1 }, sequences: 1, batchSize: 512 });
  const seq = ctx.getSequence();
  await seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
  const toks = [ids.at(-1), ...chain];
  const lines = [];
  for (let i = 0; i < toks.length; i++) {
    const [r] = await seq.controlledEvaluate([[toks[i], { generateNext: { token: true, probabilities: true } }]]);
    const top = [...r.next.probabilities.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4);
    lines.push(`  step${i}: ` + top.map(([t, pr]) => `${t}:${pr.toFixed(4)}`).join(" "));
  }
  console.log(mp.split("/").pop(), "\n" + lines.join("\n"));
  await ctx.dispose(); await model.dispose();
}
await llama.dispose();
