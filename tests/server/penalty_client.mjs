// Penalties and logit bias through the official openai npm client (v6)
// against a running `specdec serve`: presence_penalty, frequency_penalty
// (OpenAI's), repeat_penalty with repeat_last_n (llama-server's) and
// logit_bias, each alone and all together, on /v1/chat/completions and
// /v1/completions, greedy and seeded sampling: streamed and not, speculation
// on and off, all byte-equal; each changes the text; out-of-range values are
// 400s naming the field.
// usage: node penalty_client.mjs BASE_URL
import OpenAI from "openai";
import assert from "node:assert/strict";

const base = process.argv[2];
const client = new OpenAI({ apiKey: "none", baseURL: base + "/v1", maxRetries: 0 });
const log = (...a) => console.log(...a);

const messages = [{ role: "user", content: "Write a short story about a lighthouse keeper and the sea." }];
const prompt = "The lighthouse keeper looked at the sea and said";

async function tokenize(text) {
  const r = await fetch(base + "/tokenize", { method: "POST", body: JSON.stringify({ content: text }) });
  return (await r.json()).tokens;
}

async function chat(extra, stream) {
  const req = { model: "fixture", max_tokens: 48, messages, ...extra };
  if (!stream) {
    const r = await client.chat.completions.create(req);
    return { text: r.choices[0].message.content, finish: r.choices[0].finish_reason };
  }
  const s = await client.chat.completions.create({ ...req, stream: true });
  let text = "", finish = null;
  for await (const c of s) {
    if (!c.choices.length) continue;
    text += c.choices[0].delta?.content ?? "";
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  return { text, finish };
}

async function complete(extra, stream) {
  const req = { model: "fixture", max_tokens: 48, prompt, ...extra };
  if (!stream) {
    const r = await client.completions.create(req);
    return { text: r.choices[0].text, finish: r.choices[0].finish_reason };
  }
  const s = await client.completions.create({ ...req, stream: true });
  let text = "", finish = null;
  for await (const c of s) {
    if (!c.choices.length) continue;
    text += c.choices[0].text ?? "";
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  return { text, finish };
}

// One request four ways: streamed or not, speculation on or off; all equal.
async function fourWays(call, extra, name) {
  const on = await call(extra, false);
  const off = await call({ ...extra, speculative: false }, false);
  const son = await call(extra, true);
  const soff = await call({ ...extra, speculative: false }, true);
  assert.equal(off.text, on.text, `${name}: speculation on/off differ`);
  assert.equal(son.text, on.text, `${name}: stream differs from non-stream`);
  assert.equal(soff.text, on.text, `${name}: stream without speculation differs`);
  assert.equal(son.finish, on.finish, `${name}: finish_reason differs`);
  return on.text;
}

for (const [ep, call] of [["chat", chat], ["completions", complete]]) {
  for (const sampling of [{ temperature: 0 }, { temperature: 0.8, seed: 11 }]) {
    const tag = `${ep} ${sampling.temperature ? "temp 0.8" : "greedy"}`;
    const plain = await fourWays(call, sampling, `${tag} unpenalised`);
    const first = (await tokenize(plain))[0];
    const cases = [
      ["presence_penalty", { presence_penalty: 1.5 }],
      ["frequency_penalty", { frequency_penalty: 1.2 }],
      ["repeat_penalty", { repeat_penalty: 1.8, repeat_last_n: 32 }],
      ["logit_bias", { logit_bias: { [String(first)]: -100 } }],
      ["all", { presence_penalty: 0.5, frequency_penalty: 0.5, repeat_penalty: 1.3, repeat_last_n: -1,
                logit_bias: { [String(first)]: -100 } }],
    ];
    let changed = 0;
    for (const [name, extra] of cases) {
      const text = await fourWays(call, { ...sampling, ...extra }, `${tag} ${name}`);
      changed += text !== plain;
      if (name === "logit_bias") assert.notEqual(text, plain, `${tag}: banning the first token changed nothing`);
      log(`${tag} ${name}: ${JSON.stringify(text.slice(0, 60))}`);
    }
    assert.ok(changed >= 4, `${tag}: only ${changed} of ${cases.length} penalties changed the text`);
  }
}

// Bad values: 400 naming the field.
async function bad(extra, param, needle) {
  try {
    await client.chat.completions.create({ model: "fixture", max_tokens: 4, messages, ...extra });
  } catch (e) {
    assert.equal(e.status, 400, `${param}: status ${e.status}`);
    assert.equal(e.param, param);
    assert.ok(e.message.includes(needle), `400 message "${e.message}" lacks "${needle}"`);
    log("400:", e.message);
    return;
  }
  assert.fail(`no error for ${JSON.stringify(extra)}`);
}
await bad({ presence_penalty: 2.5 }, "presence_penalty", "presence_penalty");
await bad({ frequency_penalty: -3 }, "frequency_penalty", "frequency_penalty");
await bad({ repeat_penalty: 0 }, "repeat_penalty", "repeat_penalty");
await bad({ repeat_last_n: -2 }, "repeat_last_n", "repeat_last_n");
await bad({ presence_penalty: "high" }, "presence_penalty", "number");
await bad({ logit_bias: { "12": 101 } }, "logit_bias", "[-100, 100]");
await bad({ logit_bias: { abc: 1 } }, "logit_bias", "token id");
await bad({ logit_bias: { "99999999": 1 } }, "logit_bias", "not in");
await bad({ logit_bias: { "12": "x" } }, "logit_bias", "number");
await bad({ logit_bias: 5 }, "logit_bias", "object");
log("penalty client: ok");
