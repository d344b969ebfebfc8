// Constrained output through the official openai npm client (v6) against a
// running `specdec serve`: response_format json_schema (strict) and
// json_object, llama-server's `grammar` and `json_schema` fields; streaming
// and not, speculation on and off: byte-equal; every answer that finished
// ("stop") parses as JSON and fits its schema; bad schemas and grammars are
// 400s naming the problem.
// usage: node grammar_client.mjs BASE_URL
import OpenAI from "openai";
import assert from "node:assert/strict";

const base = process.argv[2];
const client = new OpenAI({ apiKey: "none", baseURL: base + "/v1", maxRetries: 0 });
const log = (...a) => console.log(...a);

const messages = [{ role: "user", content: "Give the town and its population as JSON." }];
const greedy = { model: "fixture", temperature: 0, max_tokens: 120, messages };

const schema = {
  type: "object",
  properties: {
    town: { type: "string", maxLength: 16 },
    population: { type: "integer", minimum: 0, maximum: 99999 },
    big: { type: "boolean" },
  },
  required: ["town", "population", "big"],
  additionalProperties: false,
};

function fits(obj) {
  assert.equal(typeof obj, "object");
  assert.deepEqual(Object.keys(obj).sort(), ["big", "population", "town"]);
  assert.equal(typeof obj.town, "string");
  assert.ok(obj.town.length <= 16);
  assert.ok(Number.isInteger(obj.population) && obj.population >= 0 && obj.population <= 99999);
  assert.equal(typeof obj.big, "boolean");
}

async function streamed(extra) {
  const s = await client.chat.completions.create({ ...greedy, ...extra, stream: true });
  let text = "", finish = null;
  for await (const c of s) {
    if (!c.choices.length) continue;
    text += c.choices[0].delta?.content ?? "";
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  return { text, finish };
}

// Four ways of asking, each: non-stream spec on / off, stream spec on / off, all byte-equal.
const cases = [
  ["json_schema strict", { response_format: { type: "json_schema", json_schema: { name: "t", schema, strict: true } } }, fits],
  ["json_object", { response_format: { type: "json_object" } }, (o) => assert.equal(typeof o, "object")],
  ["llama-server json_schema", { json_schema: schema }, fits],
  ["llama-server json_object with a schema", { response_format: { type: "json_object", schema } }, fits],
  ["llama-server grammar", { grammar: 'root ::= "{\\"ok\\": " ("true" | "false") "}"' }, (o) => assert.equal(typeof o.ok, "boolean")],
];
let finished = 0;
for (const [name, extra, check] of cases) {
  const on = await client.chat.completions.create({ ...greedy, ...extra });
  const off = await client.chat.completions.create({ ...greedy, ...extra, speculative: false });
  const son = await streamed(extra);
  const soff = await streamed({ ...extra, speculative: false });
  const text = on.choices[0].message.content;
  assert.equal(off.choices[0].message.content, text, `${name}: speculation on/off differ`);
  assert.equal(son.text, text, `${name}: stream differs from non-stream`);
  assert.equal(soff.text, text, `${name}: stream without speculation differs`);
  assert.equal(on.choices[0].finish_reason, son.finish);
  if (on.choices[0].finish_reason === "stop") {
    check(JSON.parse(text)); // a strict parser: JSON.parse refuses NaN, trailing commas, ...
    finished++;
  }
  log(`${name}: ${JSON.stringify(text)} (${on.choices[0].finish_reason}; drafted ${on.timings.draft_n}, accepted ${on.timings.draft_n_accepted})`);
}
assert.ok(finished >= 2, "too few constrained answers finished");

// Bad input: 400 naming the problem.
async function bad(extra, param, needle) {
  try {
    await client.chat.completions.create({ ...greedy, ...extra });
  } catch (e) {
    assert.equal(e.status, 400, `${needle}: status ${e.status}`);
    assert.ok(e.message.includes(needle), `400 message "${e.message}" lacks "${needle}"`);
    if (param) assert.equal(e.param, param);
    log("400:", e.message);
    return;
  }
  assert.fail(`no error for ${JSON.stringify(extra)}`);
}
await bad({ grammar: 'root ::= ("a"' }, "grammar", "1:10");
await bad({ grammar: "root ::= undefined-rule" }, "grammar", "undefined rule");
await bad({ response_format: { type: "json_schema", json_schema: { name: "t", schema: { type: "strng" } } } }, "response_format", "type");
await bad({ response_format: { type: "xml" } }, "response_format", "json_schema");
await bad({ json_schema: 42 }, "json_schema", "JSON Schema");
// keywords the converter refuses, named in the answer
const strict = (sch) => ({ response_format: { type: "json_schema", json_schema: { name: "t", schema: sch, strict: true } } });
await bad(strict({ not: { type: "string" } }), "response_format", '"not"');
await bad(strict({ type: "string", format: "email" }), "response_format", "email");
await bad(strict({ $ref: "#/$defs/nowhere" }), "response_format", "$ref");
await bad(strict({ type: "object", properties: { n: { type: "integer", minimum: 5, maximum: 2 } } }), "response_format",
  "#/properties/n");
await bad({ json_schema: { type: "array", minItems: 3, maxItems: 1 } }, "json_schema", "minItems");
await bad({ grammar: "root ::= [a-" }, "grammar", "unterminated character class");
await bad({ grammar: 'root ::= "a"', json_schema: schema }, null, "at most one");
log("grammar client: ok");
