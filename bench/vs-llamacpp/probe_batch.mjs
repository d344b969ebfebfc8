// probe: argmax of an S-token controlledEvaluate vs S one-token evaluates on the same prefix
import { loadLlama, loadPrompts, tokenizePrompt } from "./lib.mjs";
const [modelPath, promptDir, promptName, nGen = "96", Slist = "1,2,4,8,9"] = process.argv.slice(2);
const llama = await loadLlama(+(process.env.T ?? 1));
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const p = loadPrompts(promptDir).find((x) => x.name === promptName);
const ids = tokenizePrompt(model, p.text);
const ctx = await model.createContext({ contextSize: 1024, threads: { ideal: +(process.env.T ?? 1), min: +(process.env.T ?? 1) }, sequences: 1, batchSize: 512, ...(process.env.FA ? { flashAttention: process.env.FA === "1" } : {}) });
const seq = ctx.getSequence();
const NG = +nGen;
// reference: one-token forwards via controlledEvaluate (greedy chain)
await seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
const base = seq.nextTokenIndex;
const one = []; const oneConf = []; const oneP = [];
let t = ids.at(-1);
for (let i = 0; i < NG; i++) {
  const r = await seq.controlledEvaluate([[t, { generateNext: { token: true, probabilities: true } }]]);
  t = r[0].next.token; one.push(t); oneConf.push(r[0].next.probabilities.get(t)); oneP.push(new Map([...r[0].next.probabilities].filter(([, p]) => p > 1e-4)));
}
console.error("one-token greedy:", one.join(" "));
if (process.env.MARGINS) console.error("min top-2 logit gaps:", oneP.map((m, i) => { const v = [...m.values()].sort((x, y) => y - x); return [i, Math.log(v[0] / (v[1] ?? 1e-4))]; }).sort((x, y) => x[1] - y[1]).slice(0, 5).map(([i, g]) => `${i}:${g.toExponential(2)}`).join(" "));
if (0) console.error("conf<0.6:", oneConf.map((c,i)=>[i,c]).filter(([i,c])=>c<0.6).map(([i,c])=>`${i}:${c.toFixed(3)}`).join(" "));
// also evaluate() greedy for comparison
await seq.eraseContextTokenRanges([{ start: base, end: seq.nextTokenIndex }]);
const ev = [];
for await (const tok of seq.evaluate(ids.slice(-1), { temperature: 0 })) { ev.push(tok); if (ev.length >= NG) break; }
let d = ev.findIndex((x, i) => x !== one[i]);
console.log("evaluate() vs one-token controlledEvaluate first diff:", d);
await seq.clearHistory();
await seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
const chain = [ids.at(-1), ...one]; // input tokens; row i should predict one[i]
for (const S of Slist.split(",").map(Number)) {
  let mism = 0, rows = 0, maxrel = 0, maxAt = -1; const ex = [];
  // windows starting at positions 0, S, 2S ... each batched on a prefix that is exact
  for (let st = 0; st + S <= NG; st += S) {
    // KV must hold prompt[:-1] + chain[0..st-1]
    const r = await seq.controlledEvaluate(chain.slice(st, st + S).map((x) => [x, { generateNext: { token: true, probabilities: true } }]));
    for (let i = 0; i < S; i++) {
      rows++;
      if ((process.env.POS ?? '').split(',').includes(String(st + i))) { const f = (m) => [...m.entries()].sort((x, y) => y[1] - x[1]).slice(0, 3).map(([t, p]) => `${t}:${p.toExponential(5)}`).join(' '); console.log(`  S=${S} pos${st + i} one-token: ${f(oneP[st + i])} | batched row ${i}: ${f(r[i].next.probabilities)}`); }
      { const po = oneP[st + i], pb = r[i].next.probabilities; for (const [tok, pr] of po) { if (pr < 1e-3) continue; const rel = Math.abs(Math.log(pb.get(tok) / pr)); if (rel > maxrel) maxrel = rel, maxAt = st + i; } }
      if (r[i].next.token !== one[st + i]) { mism++; if (ex.length < 6) { const a = r[i].next.token, b = one[st + i], pb = r[i].next.probabilities, po = oneP[st + i]; ex.push(`pos${st + i}: batched ${a}:${(pb.get(a) ?? 0).toExponential(6)} ${b}:${(pb.get(b) ?? 0).toExponential(6)} logit gap ${Math.log(pb.get(a) / pb.get(b)).toExponential(3)} | one-token ${a}:${(po.get(a) ?? 0).toExponential(6)} ${b}:${(po.get(b) ?? 0).toExponential(6)} logit gap ${Math.log(po.get(b) / po.get(a)).toExponential(3)}`); }; }
    }
  }
  console.log(`S=${S}: ${mism}/${rows} rows differ; max |log p_batched - log p_one| over tokens with p>1e-3: ${maxrel.toExponential(2)} (pos ${maxAt})`, ex.join("; "));
  await seq.eraseContextTokenRanges([{ start: base, end: seq.nextTokenIndex }]);
}
await llama.dispose();
