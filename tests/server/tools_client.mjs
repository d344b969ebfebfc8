// Tool calls through the official openai npm client (v6) against a running
// `specdec serve` on a fixture model. The fixtures never call tools on their
// own, so calls are forced: tool_choice "required" and a named function, with
// parallel calls on and off. For each: non-streamed and streamed, speculation
// on and off, the calls are the same (name and arguments byte-equal); the
// stream's deltas come as OpenAI sends them (index, id, type and name first
// with arguments "", then pieces of arguments) and assemble to the
// non-streamed calls; arguments parse as JSON and fit the tool's schema;
// finish_reason is "tool_calls" and content null. Content never carries call
// markup, also when max_tokens cuts a call (parallel calls cut just after the
// first, finish_reason "length"). Then a round trip (the
// call, the tool's result, an answer with tool_choice "none"), and 400s for
// arguments that are not JSON and for bad tool fields.
// usage: node tools_client.mjs BASE_URL SYNTAX   (SYNTAX: what the template teaches, for the log)
import OpenAI from "openai";
import assert from "node:assert/strict";

const [base, syntax] = process.argv.slice(2);
const client = new OpenAI({ apiKey: "none", baseURL: base + "/v1", maxRetries: 0 });
const log = (...a) => console.log(...a);

const weather = {
  type: "object",
  properties: {
    city: { type: "string", maxLength: 12 },
    days: { type: "integer", minimum: 1, maximum: 14 },
    units: { type: "string", enum: ["c", "f"] },
  },
  required: ["city", "days"],
  additionalProperties: false,
};
const add = {
  type: "object",
  properties: { a: { type: "number" }, ok: { type: "boolean" } },
  required: ["a", "ok"],
  additionalProperties: false,
};
const tools = [
  { type: "function", function: { name: "get_weather", description: "Weather forecast", parameters: weather, strict: true } },
  { type: "function", function: { name: "add", description: "Adds", parameters: add, strict: true } },
];
const messages = [{ role: "user", content: "What is the weather in Paris for the next 3 days?" }];
// Qwen3.5's template opens a reasoning section the fixture never closes: off here.
const base_req = { model: "fixture", temperature: 0, max_tokens: 160, messages, tools,
  ...(syntax === "xml" ? { chat_template_kwargs: { enable_thinking: false } } : {}) };

function fits(name, args) {
  const o = JSON.parse(args); // strict: no NaN, no trailing commas
  if (name === "get_weather") {
    assert.ok(Object.keys(o).every((k) => ["city", "days", "units"].includes(k)), args);
    assert.equal(typeof o.city, "string");
    assert.ok(o.city.length <= 12, args);
    assert.ok(Number.isInteger(o.days) && o.days >= 1 && o.days <= 14, args);
    if ("units" in o) assert.ok(["c", "f"].includes(o.units));
  } else {
    assert.equal(name, "add");
    assert.deepEqual(Object.keys(o).sort(), ["a", "ok"]);
    assert.equal(typeof o.a, "number");
    assert.equal(typeof o.ok, "boolean");
  }
}

// The calls of a streamed answer, assembled as clients do; checks each delta's shape.
async function streamed(extra) {
  const s = await client.chat.completions.create({ ...base_req, ...extra, stream: true });
  const calls = [];
  let content = "", finish = null, pieces = 0;
  for await (const c of s) {
    if (!c.choices.length) continue;
    const d = c.choices[0].delta ?? {};
    content += d.content ?? "";
    for (const tc of d.tool_calls ?? []) {
      assert.equal(typeof tc.index, "number");
      if (!calls[tc.index]) {
        // the first delta of a call: id, type, name, arguments ""
        assert.equal(tc.index, calls.length, "calls start in order");
        assert.match(tc.id, /^call_/);
        assert.equal(tc.type, "function");
        assert.equal(typeof tc.function.name, "string");
        assert.equal(tc.function.arguments, "");
        calls[tc.index] = { id: tc.id, name: tc.function.name, arguments: "" };
      } else {
        assert.equal(tc.id, undefined, "the id comes once");
        assert.equal(tc.function.name, undefined, "the name comes once");
        calls[tc.index].arguments += tc.function.arguments;
        pieces++;
      }
    }
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  return { calls, content, finish, pieces };
}

const plain = (calls) => (calls ?? []).map((c) => ({ name: c.function ? c.function.name : c.name, arguments: c.function ? c.function.arguments : c.arguments }));

const all_cases = [
  ["required", { tool_choice: "required", parallel_tool_calls: false }],
  ["required, parallel", { tool_choice: "required", max_tokens: 200 }],
  ["named get_weather", { tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false }],
  ["named add", { tool_choice: { type: "function", function: { name: "add" } }, parallel_tool_calls: false }],
];
// Under the sanitizers (SD_ASAN, ~100x slower): two of them.
const cases = process.env.SD_ASAN ? [all_cases[0], all_cases[3]] : all_cases;
let finished = 0, firstCall = null, multiPiece = 0;
const answers = {};
for (const [name, extra] of cases) {
  const on = await client.chat.completions.create({ ...base_req, ...extra });
  answers[name] = on;
  const off = await client.chat.completions.create({ ...base_req, ...extra, speculative: false });
  const son = await streamed(extra);
  const soff = await streamed({ ...extra, speculative: false });
  const m = on.choices[0].message;
  const want = plain(m.tool_calls);
  assert.ok(want.length >= 1, `${name}: no call`);
  assert.deepEqual(plain(off.choices[0].message.tool_calls), want, `${name}: speculation on/off differ`);
  assert.deepEqual(plain(son.calls), want, `${name}: stream deltas do not assemble to the calls`);
  assert.deepEqual(plain(soff.calls), want, `${name}: stream without speculation differs`);
  assert.equal(son.finish, on.choices[0].finish_reason);
  for (const c of m.tool_calls) {
    assert.match(c.id, /^call_/);
    assert.equal(c.type, "function");
  }
  // finished or cut off, a forced answer's content never carries call markup
  for (const c of [m.content ?? "", son.content, soff.content])
    assert.doesNotMatch(c, /<tool_call|<function|<parameter/, `${name}: call markup in content`);
  if (extra.parallel_tool_calls === false) assert.equal(want.length, 1, `${name}: one call only`);
  if (extra.tool_choice?.function) for (const c of want) assert.equal(c.name, extra.tool_choice.function.name);
  if (on.choices[0].finish_reason === "tool_calls") {
    assert.equal(m.content, null, `${name}: content of a calls-only answer is null`);
    assert.equal(son.content, "");
    for (const c of want) fits(c.name, c.arguments);
    finished++;
    firstCall ??= m.tool_calls[0];
  }
  multiPiece += son.pieces > want.length;
  log(`${name}: ${JSON.stringify(want)} (${on.choices[0].finish_reason}; ${son.pieces} argument pieces; drafted ${on.timings.draft_n}, accepted ${on.timings.draft_n_accepted})`);
}
assert.ok(finished >= cases.length - 1, "too few forced calls finished");

// max_tokens cutting parallel calls just after the first one ends (where, the
// one-call answer says): the whole call stays, the cut one's markup (an opener,
// a name, JSON) is dropped, never content (null; "" streamed); finish_reason "length".
if (answers["required"] && answers["required, parallel"]) {
  const single = answers["required"];
  assert.equal(single.choices[0].finish_reason, "tool_calls");
  const n1 = single.usage.completion_tokens, first = plain(single.choices[0].message.tool_calls)[0];
  for (const k of [2, 12, 24]) {
    const extra = { tool_choice: "required", max_tokens: n1 + k };
    const r = await client.chat.completions.create({ ...base_req, ...extra });
    const s = await streamed(extra);
    const m = r.choices[0].message, at = `cut at ${n1 + k} tokens`;
    assert.equal(r.choices[0].finish_reason, "length", `${at}: finish_reason`);
    assert.equal(s.finish, "length", `${at}: streamed finish_reason`);
    assert.deepEqual(plain(m.tool_calls)[0], first, `${at}: the whole first call`);
    assert.deepEqual(plain(s.calls), plain(m.tool_calls), `${at}: stream and message differ`);
    assert.equal(m.content, null, `${at}: content ${JSON.stringify(m.content)}`);
    assert.equal(s.content, "", `${at}: streamed content ${JSON.stringify(s.content)}`);
  }
  log(`cut after the first of parallel calls (${n1} + 2, 12, 24 tokens): content null`);
}
if (syntax === "xml") assert.ok(multiPiece > 0, "XML calls stream their arguments parameter by parameter");

// Round trip: the call, the tool's answer, and the model's reply to it.
const turn2 = [
  ...messages,
  { role: "assistant", content: null, tool_calls: [firstCall] },
  { role: "tool", tool_call_id: firstCall.id, content: JSON.stringify({ temperature: 21, sky: "clear" }) },
];
const reply = await client.chat.completions.create({ ...base_req, messages: turn2, tool_choice: "none", max_tokens: 24 });
assert.equal(typeof reply.choices[0].message.content, "string");
assert.equal(reply.choices[0].message.tool_calls, undefined);
assert.ok(["stop", "length"].includes(reply.choices[0].finish_reason));
const reply2 = await client.chat.completions.create({ ...base_req, messages: turn2, tool_choice: "none", max_tokens: 24, speculative: false });
assert.equal(reply2.choices[0].message.content, reply.choices[0].message.content, "round trip: speculation on/off differ");
log(`round trip: ${JSON.stringify(reply.choices[0].message.content)}`);

// Bad input: 400 naming the field.
async function bad(extra, param, needle) {
  try {
    await client.chat.completions.create({ ...base_req, ...extra });
  } catch (e) {
    assert.equal(e.status, 400, `${needle}: status ${e.status}`);
    assert.equal(e.param, param, `${needle}: param ${e.param}`);
    assert.ok(e.message.includes(needle), `${needle}: message ${e.message}`);
    return;
  }
  assert.fail(`${needle}: accepted`);
}
const badCall = { ...firstCall, function: { ...firstCall.function, arguments: "{not json" } };
await bad({ messages: [...messages, { role: "assistant", content: null, tool_calls: [badCall] }, { role: "tool", tool_call_id: firstCall.id, content: "x" }] },
  "messages", "arguments is not JSON");
await bad({ tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice", "nope");
await bad({ tool_choice: "sometimes" }, "tool_choice", "sometimes");
await bad({ tools: [{ type: "function", function: {} }] }, "tools", "name");
await bad({ tools: [{ type: "function", function: { name: "f", parameters: { type: "strng" } } }], tool_choice: "required" }, "tools", "strng");
await bad({ parallel_tool_calls: "yes" }, "parallel_tool_calls", "boolean");
await bad({ tool_choice: "required", response_format: { type: "json_object" } }, "tool_choice", "response_format");
log("tools: ok");
