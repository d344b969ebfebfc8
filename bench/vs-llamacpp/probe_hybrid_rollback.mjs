#!/usr/bin/env node
// What llama.cpp (through node-llama-cpp) does when a speculative round's
// rejected drafts are removed from a hybrid (qwen35) model's sequence
// (issue 12): evaluate a prompt, then a round of [a0, d1..dK], then ask
// llama.cpp itself to drop the last `drop` positions (llama_memory_seq_rm
// through node-llama-cpp's removeTokenCellsFromSequence) and print its answer;
// then the same through node-llama-cpp's eraseContextTokenRanges, timed, with
// how it recovered (a checkpoint restore plus re-evaluation, or the whole
// sequence re-evaluated), and whether the next token after the rollback is
// the one a fresh evaluation of the kept tokens gives.
//
//   node probe_hybrid_rollback.mjs MODEL.gguf [THREADS=2] [K=8] [DROP=5]
import { loadLlama, nowS, tokenizePrompt } from "./lib.mjs";

const [path, tArg = "2", kArg = "8", dArg = "5"] = process.argv.slice(2);
if (!path) {
  console.error("usage: node probe_hybrid_rollback.mjs MODEL.gguf [THREADS] [K] [DROP]");
  process.exit(2);
}
const T = +tArg, K = +kArg, DROP = +dArg;
const llama = await loadLlama(T);
const model = await llama.loadModel({ modelPath: path });
const ctx = await model.createContext({ contextSize: 512, threads: T, sequences: 1 });
const seq = ctx.getSequence();
const ids = tokenizePrompt(model, "int main(void) {\n    int x = 0;\n    for (int i = 0; i < 10; i++) x += i;\n    return x;\n}\n");

async function greedyNext(tokens) {
  const res = await seq.controlledEvaluate(tokens.map((t) => [t, { generateNext: { token: true } }]));
  return res.map((r) => r?.next?.token);
}

await seq.clearHistory();
await seq.evaluateWithoutGeneratingNewTokens(ids);
const round = [ids.at(-1), ...Array.from({ length: K }, (_, i) => 100 + i)];
await greedyNext(round.slice(1));
const n = seq.nextTokenIndex;
const out = {
  model: path, threads: T, n_prompt: ids.length, round: K, drop: DROP, n_before: n,
  needsCheckpoints: seq.needsCheckpoints, checkpoints: seq._checkpoints?.lastCheckpointIndex ?? null,
};
// llama.cpp's own answer: llama_memory_seq_rm(seq, n - DROP, n)
out.llama_seq_rm_returned = ctx._ctx.removeTokenCellsFromSequence(seq._sequenceId, n - DROP, n);
// node-llama-cpp's path (its own bookkeeping did not see the call above: redo from a clean state)
await seq.clearHistory();
await seq.evaluateWithoutGeneratingNewTokens(ids);
await greedyNext(round.slice(1));
let evaluated = 0;
const orig = seq.evaluateWithoutGeneratingNewTokens.bind(seq);
seq.evaluateWithoutGeneratingNewTokens = (toks, o) => ((evaluated += toks.length), orig(toks, o));
const t0 = nowS();
await seq.eraseContextTokenRanges([{ start: n - DROP, end: n }]);
out.erase_ms = (nowS() - t0) * 1e3;
seq.evaluateWithoutGeneratingNewTokens = orig;
out.erase_reevaluated_tokens = evaluated;
out.n_after = seq.nextTokenIndex;
const [afterErase] = await greedyNext([7]);
// reference: the kept tokens evaluated from scratch, then the same next token
const kept = [...ids, ...round.slice(1)].slice(0, n - DROP);
await seq.clearHistory();
await seq.evaluateWithoutGeneratingNewTokens(kept);
const [fresh] = await greedyNext([7]);
out.next_after_erase = afterErase;
out.next_fresh = fresh;
out.same = afterErase === fresh;
console.log(JSON.stringify(out));
await ctx.dispose();
await model.dispose();
