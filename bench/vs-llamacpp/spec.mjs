// The speculative decoding loop on llama.cpp's side of the race, and the
// drafters it runs. Why not node-llama-cpp's own token-predictor loop
// (LlamaContextSequence._speculativeEvaluate)? In node-llama-cpp 3.22.1 that
// loop checks draft token i >= 2 against `validatedTokens.at(-1)`, an array
// it never fills, so every round accepts at most ONE draft token and refutes
// the rest: at alpha = 0.7, K = 8 it accepts ~0.7 tokens per round instead of
// alpha(1 - alpha^K)/(1 - alpha) ~ 2.2. A speedup measured through it says
// nothing about llama.cpp. (`--spec-loop node-llama-cpp` still runs it, to
// show the cap.)
//
// So this file drives llama.cpp the way llama.cpp's own speculative examples
// do (examples/speculative-simple: one batched decode of [a0, d1..dK] with
// logits on every row, greedy pick per row, keep the longest agreeing prefix,
// remove the rest from the KV cache), through node-llama-cpp's
// controlledEvaluate + eraseContextTokenRanges. The rounds are those of our
// src/decode/spec.c (ARCHITECTURE.md §1): commit a0, draft past it, verify.
import { nowS } from "./lib.mjs";

// Greedy generation of n tokens after prompt ids on seq, with drafter (or
// null: plain decoding through the same loop). Prefill = all prompt tokens
// but the last (one batched forward; the drafter's prefill too, if it has
// one); the forward of the last prompt token
// yields the first generated token a0; then rounds of [a0, drafts] until n
// tokens. Timing as in `specdec bench`: decode tok/s = (n - 1) / (time from
// a0 to the n-th token). Returns ids, tok/s and the round counters.
export async function specGenerate(seq, ids, drafter, { n, k }) {
  await seq.clearHistory();
  const t0 = nowS();
  await seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
  await drafter?.prefill?.(ids);
  const t1 = nowS();
  const st = { rounds: 0, drafted: 0, accepted: 0, forwards: 0 };
  const hist = ids.slice();           // committed tokens, a0 included once generated
  let [a0] = await verify(seq, [ids.at(-1)]);
  st.forwards++;
  const tFirst = nowS();
  const out = [a0];
  hist.push(a0);
  drafter?.start?.(hist, ids);
  while (out.length < n) {
    // a round yields up to kk + 1 tokens: never draft past the budget
    const kk = Math.min(k, n - out.length - 1);
    const drafts = drafter && kk > 0 ? (await drafter.propose(hist, kk)).slice(0, kk) : [];
    const next = await verify(seq, [a0, ...drafts]);
    st.forwards++;
    let j = 0;
    while (j < drafts.length && next[j] === drafts[j]) j++;
    if (drafts.length > j)  // the KV cache keeps a0, d1..dj; drop the rest
      await seq.eraseContextTokenRanges([{ start: seq.nextTokenIndex - (drafts.length - j), end: seq.nextTokenIndex }]);
    if (drafts.length > 0) st.rounds++, st.drafted += drafts.length, st.accepted += j;
    const got = [...drafts.slice(0, j), next[j]];
    out.push(...got);
    hist.push(...got);
    drafter?.accepted?.(got);
    a0 = next[j];
  }
  const t2 = nowS();
  return {
    ids: out.slice(0, n),
    prefill_tok_s: (ids.length - 1) / (t1 - t0),
    decode_tok_s: out.length > 1 ? (out.length - 1) / (t2 - tFirst) : null,
    stats: st,
  };
}

// One forward of tokens on seq, appended to its KV cache; returns the greedy
// (temperature 0) next token after each position.
async function verify(seq, tokens) {
  const res = await seq.controlledEvaluate(tokens.map((t) => [t, { generateNext: { token: true } }]));
  return tokens.map((_, i) => {
    const t = res[i]?.next?.token;
    if (t == null) throw new Error(`llama.cpp returned no token for row ${i}`);
    return t;
  });
}

// Synthetic acceptance: the reference greedy continuation, corrupted per
// position (lib.mjs oracleDrafts). hist = prompt + generated tokens including
// a0, so the proposal starts at reference index hist.length - nPrompt.
export class OracleDrafter {
  constructor(drafts, nPrompt) {
    Object.assign(this, { drafts, nPrompt });
  }
  propose(hist, k) {
    const g = hist.length - this.nPrompt;
    return this.drafts.slice(g, g + k);
  }
}

// node-llama-cpp's InputLookupTokenPredictor (prompt lookup) used as a plain
// proposer: its state is the committed tokens (a0 included), its input the
// prompt, and predictTokens() continues past the last state token.
export class LookupDrafter {
  constructor(predictor) {
    this.p = predictor;
  }
  start(hist, prompt) {
    this.p.reset({ stateTokens: hist.slice() });
    this.p.updateInputTokens(prompt);
  }
  propose(hist, k) {
    return this.p.predictTokens().slice(0, k);
  }
  accepted(tokens) {
    this.p.pushTokens(tokens);
  }
}

// A draft model decoding greedily on its own sequence, like our draft-model
// drafter: it prefills the prompt in the prefill (as `specdec bench` does);
// each round its KV cache is rolled back to the common prefix with the
// committed tokens, caught up in one batch, then extended one token a step.
export class DraftModelDrafter {
  constructor(seq) {
    this.seq = seq;
  }
  async prefill(ids) {
    await this.seq.clearHistory();
    await this.seq.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
  }
  async propose(hist, k) {
    const have = this.seq.contextTokens;
    let c = 0;
    while (c < have.length && c < hist.length - 1 && have[c] === hist[c]) c++;
    if (c < have.length) await this.seq.eraseContextTokenRanges([{ start: c, end: have.length }]);
    const out = [];
    let next = (await verify(this.seq, hist.slice(c))).at(-1);
    out.push(next);
    while (out.length < k) {
      [next] = await verify(this.seq, [next]);
      out.push(next);
    }
    return out;
  }
}
