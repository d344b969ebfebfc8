// Log-probabilities through the official openai npm client (v6) against a
// running `specdec serve`: chat `logprobs` + `top_logprobs` (OpenAI's
// choices[].logprobs.content[] of {token, logprob, bytes, top_logprobs}) and
// /v1/completions' legacy integer `logprobs` ({tokens, token_logprobs,
// top_logprobs, text_offset}); greedy and seeded sampling, with penalties
// and with a JSON grammar: streamed and not, speculation on and off, all
// equal value for value; the tokens spell the text; greedy picks are the
// best alternative; bad values are 400s naming the field.
// usage: node logprobs_client.mjs BASE_URL
import OpenAI from "openai";
import assert from "node:assert/strict";

const base = process.argv[2];
const client = new OpenAI({ apiKey: "none", baseURL: base + "/v1", maxRetries: 0 });
const log = (...a) => console.log(...a);
const messages = [{ role: "user", content: "Tell me about the sea and its lighthouses." }];
const prompt = "The lighthouse keeper looked at the sea and said";

async function chat(extra, stream) {
  const req = { model: "fixture", max_tokens: 40, messages, logprobs: true, top_logprobs: 3, ...extra };
  if (!stream) {
    const r = await client.chat.completions.create(req);
    return { text: r.choices[0].message.content, lp: r.choices[0].logprobs.content };
  }
  const s = await client.chat.completions.create({ ...req, stream: true });
  let text = "", lp = [];
  for await (const c of s) {
    if (!c.choices.length) continue;
    const ch = c.choices[0];
    text += ch.delta?.content ?? "";
    if (ch.logprobs) lp = lp.concat(ch.logprobs.content);
    else assert.ok(!ch.delta?.content, "a chunk with content and no logprobs");
  }
  return { text, lp };
}

async function complete(extra, stream) {
  const req = { model: "fixture", max_tokens: 40, prompt, logprobs: 3, ...extra };
  const merge = (a, b) => ({ tokens: a.tokens.concat(b.tokens), token_logprobs: a.token_logprobs.concat(b.token_logprobs),
                             top_logprobs: a.top_logprobs.concat(b.top_logprobs), text_offset: a.text_offset.concat(b.text_offset) });
  if (!stream) {
    const r = await client.completions.create(req);
    return { text: r.choices[0].text, lp: r.choices[0].logprobs };
  }
  const s = await client.completions.create({ ...req, stream: true });
  let text = "", lp = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  for await (const c of s) {
    if (!c.choices.length) continue;
    text += c.choices[0].text ?? "";
    if (c.choices[0].logprobs) lp = merge(lp, c.choices[0].logprobs);
  }
  return { text, lp };
}

async function fourWays(call, extra, name) {
  const on = await call(extra, false);
  const off = await call({ ...extra, speculative: false }, false);
  const son = await call(extra, true);
  const soff = await call({ ...extra, speculative: false }, true);
  for (const [what, r] of [["speculation off", off], ["streamed", son], ["streamed, speculation off", soff]]) {
    assert.equal(r.text, on.text, `${name}: ${what}: text differs`);
    assert.deepEqual(r.lp, on.lp, `${name}: ${what}: log-probabilities differ`);
  }
  return on;
}

const settings = [
  ["greedy", { temperature: 0 }],
  ["temp 0.8", { temperature: 0.8, seed: 5 }],
  ["penalised", { temperature: 0.8, seed: 5, presence_penalty: 0.8, repeat_penalty: 1.3 }],
  ["json grammar", { temperature: 0, response_format: { type: "json_object" } }],
];
for (const [name, extra] of settings) {
  const c = await fourWays(chat, extra, `chat ${name}`);
  assert.ok(c.lp.length > 0);
  assert.equal(c.lp.map((t) => Buffer.from(t.bytes).toString("latin1")).join(""),
               Buffer.from(c.text, "utf8").toString("latin1"), `chat ${name}: the tokens' bytes do not spell the text`);
  for (const t of c.lp) {
    assert.ok(t.logprob <= 0 && Number.isFinite(t.logprob));
    // under a grammar only the allowed tokens are listed: maybe fewer than asked
    if (extra.response_format) assert.ok(t.top_logprobs.length >= 1 && t.top_logprobs.length <= 3);
    else assert.equal(t.top_logprobs.length, 3);
    for (let k = 1; k < t.top_logprobs.length; k++) assert.ok(t.top_logprobs[k].logprob <= t.top_logprobs[k - 1].logprob);
    if (extra.temperature === 0) {
      assert.equal(t.top_logprobs[0].token, t.token);
      assert.equal(t.top_logprobs[0].logprob, t.logprob);
    }
  }
  const k = await fourWays(complete, extra.response_format ? { temperature: 0 } : extra, `completions ${name}`);
  assert.equal(k.lp.tokens.join(""), k.text, `completions ${name}: tokens do not spell the text`);
  let off = 0;
  k.lp.tokens.forEach((t, i) => { assert.equal(k.lp.text_offset[i], off); off += t.length; });
  assert.ok(k.lp.top_logprobs.every((o) => Object.keys(o).length >= 1 && Object.keys(o).length <= 3));
  log(`${name}: chat ${c.lp.length} tokens, first ${JSON.stringify(c.lp[0].token)} ${c.lp[0].logprob.toFixed(4)}; completions ${k.lp.tokens.length} tokens`);
}

// top_logprobs 0: the chosen token only; 20: twenty alternatives.
const zero = await chat({ temperature: 0, top_logprobs: 0, max_tokens: 4 }, false);
assert.ok(zero.lp.every((t) => t.top_logprobs.length === 0));
const twenty = await chat({ temperature: 0, top_logprobs: 20, max_tokens: 4 }, false);
assert.ok(twenty.lp.every((t) => t.top_logprobs.length === 20));
// Off: null.
const plain = await client.chat.completions.create({ model: "fixture", max_tokens: 4, messages });
assert.equal(plain.choices[0].logprobs, null);

async function bad(fn, extra, param, needle) {
  try {
    await fn({ model: "fixture", max_tokens: 4, ...extra });
  } catch (e) {
    assert.equal(e.status, 400, `${param}: status ${e.status}`);
    assert.equal(e.param, param);
    assert.ok(e.message.includes(needle), `400 message "${e.message}" lacks "${needle}"`);
    log("400:", e.message);
    return;
  }
  assert.fail(`no error for ${JSON.stringify(extra)}`);
}
const chatFn = (r) => client.chat.completions.create({ messages, ...r });
const compFn = (r) => client.completions.create({ prompt, ...r });
await bad(chatFn, { logprobs: true, top_logprobs: 21 }, "top_logprobs", "[0, 20]");
await bad(chatFn, { top_logprobs: 2 }, "top_logprobs", "logprobs");
await bad(chatFn, { logprobs: "yes" }, "logprobs", "boolean");
await bad(compFn, { logprobs: 21 }, "logprobs", "[0, 20]");
await bad(compFn, { logprobs: 1.5 }, "logprobs", "integer");
log("logprobs client: ok");
