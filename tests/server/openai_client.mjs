// The official openai npm client (v6) against a running `specdec serve`:
// streaming and non-streaming chat, completions, usage, timings, lossless
// speculation (speculative true/false give identical bytes at temperature 0),
// stream == non-stream, prompt-prefix reuse across turns, 8 concurrent streams.
// usage: node openai_client.mjs BASE_URL
import OpenAI from "openai";
import assert from "node:assert/strict";

const base = process.argv[2];
const client = new OpenAI({ apiKey: "none", baseURL: base + "/v1", maxRetries: 0 });
const log = (...a) => console.log(...a);

const messages = [
  { role: "system", content: "You write Python." },
  { role: "user", content: "class Parser:\n    def __init__(self, text):" },
];
const greedy = { model: "fixture", temperature: 0, max_tokens: 48 };

async function chat(extra, msgs = messages) {
  return client.chat.completions.create({ ...greedy, messages: msgs, ...extra });
}

async function collect(stream) {
  let text = "", role = null, finish = null, usage = null, timings = null, chunks = 0, ids = new Set(), accepted = 0;
  let first = null;
  for await (const c of stream) {
    chunks++;
    if (!first) first = c;
    ids.add(c.id);
    if (c.usage) usage = c.usage;
    if (c.timings) timings = c.timings;
    if (c.x_spec) accepted += c.x_spec.drafted;
    if (!c.choices.length) continue;
    const ch = c.choices[0];
    if (ch.delta?.role) role = ch.delta.role;
    if (ch.delta?.content) text += ch.delta.content;
    if (ch.text) text += ch.text;
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { text, role, finish, usage, timings, chunks, ids, accepted, first };
}

function checkTimings(t, what) {
  for (const k of ["prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_second", "draft_n",
                   "draft_n_accepted", "cache_n", "accepted_per_round", "spec_mode", "gate"])
    assert.ok(k in t, `${what}: timings.${k} missing`);
}

// 1. Non-streaming chat: shape, usage, timings.
const a = await chat({});
assert.equal(a.object, "chat.completion");
assert.equal(a.choices[0].message.role, "assistant");
assert.ok(a.choices[0].message.content.length > 0, "empty answer");
assert.ok(["stop", "length"].includes(a.choices[0].finish_reason));
assert.equal(a.usage.completion_tokens, a.timings.predicted_n);
assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
checkTimings(a.timings, "non-stream");
log("non-stream chat:", JSON.stringify(a.choices[0].message.content.slice(0, 60)), a.usage, "draft", a.timings.draft_n, "accepted", a.timings.draft_n_accepted);
assert.ok(a.timings.draft_n > 0, "the fixture with its draft model drafted nothing");

// 2. Lossless: speculative false gives the same bytes; timings say no drafting.
const off = await chat({ speculative: false });
assert.equal(off.choices[0].message.content, a.choices[0].message.content, "speculative false changed the text");
assert.equal(off.timings.draft_n, 0);
assert.equal(off.timings.speculative, false);
const on = await chat({ speculative: true });
assert.equal(on.choices[0].message.content, a.choices[0].message.content, "speculative true changed the text");
log("speculative true/false: identical,", a.choices[0].message.content.length, "bytes");

// 3. Streaming chat equals the non-streaming answer; usage chunk; timings on the last chunks.
const s = await collect(await chat({ stream: true, stream_options: { include_usage: true } }));
assert.equal(s.text, a.choices[0].message.content, "stream differs from non-stream");
assert.equal(s.role, "assistant");
assert.strictEqual(s.first.choices[0].delta.content, "", "the first chunk's content is not \"\" (OpenAI's)");
assert.equal(s.finish, a.choices[0].finish_reason);
assert.equal(s.ids.size, 1, "chunks with different ids");
assert.ok(s.usage && s.usage.completion_tokens === a.usage.completion_tokens, "usage chunk missing or wrong");
checkTimings(s.timings, "stream");
assert.ok(s.accepted > 0 && s.accepted === s.timings.draft_n_accepted,
          `x_spec drafted counts (${s.accepted}) != draft_n_accepted (${s.timings.draft_n_accepted})`);
const soff = await collect(await chat({ stream: true, speculative: false }));
assert.equal(soff.text, a.choices[0].message.content, "stream without speculation differs");
assert.equal(soff.accepted, 0);
log("stream == non-stream:", s.chunks, "chunks; accepted drafts marked:", s.accepted);

// 4. Completions, streaming and not.
const prompt = "def fibonacci(n):\n    ";
const c1 = await client.completions.create({ model: "fixture", prompt, max_tokens: 32, temperature: 0 });
assert.equal(c1.object, "text_completion");
assert.ok(c1.choices[0].text.length > 0);
checkTimings(c1.timings, "completion");
const c2 = await collect(await client.completions.create({ model: "fixture", prompt, max_tokens: 32, temperature: 0, stream: true }));
assert.equal(c2.text, c1.choices[0].text, "completion stream differs");
const c3 = await client.completions.create({ model: "fixture", prompt, max_tokens: 32, temperature: 0, speculative: false });
assert.equal(c3.choices[0].text, c1.choices[0].text, "completion without speculation differs");
log("completions:", JSON.stringify(c1.choices[0].text.slice(0, 40)), c1.usage);

// 5. Stop strings: the answer ends before the stop string, finish_reason stop.
const full = a.choices[0].message.content;
const stopAt = full.slice(10, 14);
const st = await chat({ stop: [stopAt] });
assert.equal(st.choices[0].message.content, full.slice(0, full.indexOf(stopAt)));
assert.equal(st.choices[0].finish_reason, "stop");
const sst = await collect(await chat({ stop: stopAt, stream: true }));
assert.equal(sst.text, st.choices[0].message.content, "streamed stop text differs");

// 6. Sampling at temperature > 0: the same seed gives the same text. Plain sampling only: speculative
// sampling draws its randomness per drafted token, and how many tokens are drafted depends on the gate's
// measured timings, so two speculative runs with one seed may differ (both distributed as plain sampling).
const t1 = await chat({ temperature: 0.8, seed: 7, speculative: false });
const t2 = await chat({ temperature: 0.8, seed: 7, speculative: false });
assert.equal(t1.choices[0].message.content, t2.choices[0].message.content, "same seed, different text");

// 7. Prompt-prefix reuse: the second turn prefills only its new tokens.
const turn1 = [{ role: "user", content: "import os\nimport sys\n\ndef main():" }];
const r1 = await chat({ max_tokens: 24 }, turn1);
const turn2 = [...turn1, { role: "assistant", content: r1.choices[0].message.content },
               { role: "user", content: "Now add argument parsing." }];
const r2 = await chat({ max_tokens: 24 }, turn2);
log("turn 1: prompt_tokens", r1.usage.prompt_tokens, "prompt_n", r1.timings.prompt_n, "cache_n", r1.timings.cache_n);
log("turn 2: prompt_tokens", r2.usage.prompt_tokens, "prompt_n", r2.timings.prompt_n, "cache_n", r2.timings.cache_n);
assert.equal(r2.timings.cache_n + r2.timings.prompt_n, r2.usage.prompt_tokens);
assert.equal(r2.usage.prompt_tokens_details.cached_tokens, r2.timings.cache_n);
assert.ok(r2.timings.cache_n >= r1.usage.prompt_tokens, "turn 2 did not reuse turn 1's prompt");
assert.ok(r2.timings.prompt_n < r2.usage.prompt_tokens - r1.usage.prompt_tokens + 8,
          "turn 2 prefilled more than its new tokens");

// 8. Eight concurrent streaming clients, each with its own prompt: every answer
// equals that prompt's answer computed alone (nothing mixed), or a 503.
const prompts = Array.from({ length: 8 }, (_, i) => [{ role: "user", content: `Request ${i}: def f${i}(x):` }]);
const alone = [];
for (const p of prompts) alone.push((await chat({ max_tokens: 24 }, p)).choices[0].message.content);
const results = await Promise.allSettled(prompts.map(async (p) => collect(await chat({ max_tokens: 24, stream: true }, p))));
let ok = 0, busy = 0;
results.forEach((r, i) => {
  if (r.status === "fulfilled") { assert.equal(r.value.text, alone[i], `client ${i} got another answer`); ok++; }
  else { assert.equal(r.reason.status, 503, `client ${i}: ${r.reason}`); busy++; }
});
assert.ok(ok >= 1);
log(`8 concurrent streams: ${ok} correct, ${busy} got 503`);

// 9. Models and errors through the SDK.
const models = await client.models.list();
assert.ok(models.data.length === 1 && models.data[0].id);
assert.ok(!/\s/.test(models.data[0].id), `model id ${JSON.stringify(models.data[0].id)} has spaces`);
await assert.rejects(chat({ temperature: 101 }), (e) => e.status === 400 && e.error?.param === "temperature");
await assert.rejects(chat({}, []), (e) => e.status === 400);
await assert.rejects(chat({ n: 2 }), (e) => e.status === 400 && e.error?.param === "n" && /must be 1/.test(e.message));
await assert.rejects(chat({ temperature: 101 }), (e) => e.error?.code === null || typeof e.error?.code === "string");
log("openai client: all checks passed");
