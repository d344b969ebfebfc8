// The chat page in Debian's headless chromium (driven by playwright-core, no
// downloaded browser): type a prompt, the answer streams, the status line shows
// acceptance, accepted draft tokens are coloured; a tool call shows apart from
// the answer; saves a screenshot.
// usage: node page.mjs BASE_URL SCREENSHOT.png
import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [base, shot] = process.argv.slice(2);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "specdec-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1100, height: 760 },
});
try {
  const page = context.pages()[0] || await context.newPage();
  await page.goto(base + "/");
  await page.waitForFunction(() => document.getElementById("model").textContent !== "…");
  assert.ok(await page.isChecked("#spec"), "speculation toggle is off by default");
  await page.fill("#max", "96");
  await page.click("#prompt");
  await page.keyboard.type("class Parser:");
  await page.keyboard.press("Enter");
  // Streaming: the answer grows while the status says "generating".
  await page.waitForSelector(".msg.assistant .content");
  await page.waitForFunction(() => /acceptance \d/.test(document.getElementById("status").textContent), null, { timeout: 60000 });
  await page.waitForSelector(".msg.assistant .foot", { timeout: 60000 });
  const status = await page.textContent("#status");
  const answer = await page.textContent(".msg.assistant .content");
  const accepted = await page.locator(".msg.assistant .content .acc").count();
  console.log("status:", status);
  console.log("answer:", JSON.stringify(answer.slice(0, 80)), "accepted-draft spans:", accepted);
  assert.ok(answer.length > 0, "no answer");
  assert.match(status, /tok\/s/);
  assert.match(status, /drafted \d+ \/ accepted \d+/);
  assert.match(status, /acceptance \d+(\.\d)?%/);
  assert.match(status, /accepted\/round \d/);
  assert.ok(accepted > 0, "no accepted draft token coloured");
  // The toggle: with speculation off the same prompt gives the same text (temperature 0), no drafting.
  await page.click("#reset");
  await page.uncheck("#spec");
  await page.fill("#prompt", "class Parser:");
  await page.keyboard.press("Enter");
  await page.waitForSelector(".msg.assistant .foot", { timeout: 60000 });
  const answerOff = await page.textContent(".msg.assistant .content");
  assert.equal(answerOff, answer, "the answer changed with speculation off");
  assert.match(await page.textContent("#status"), /speculation off/);
  // Back on, a second turn (prefix reuse shows as cached prompt tokens), then the screenshot.
  await page.click("#reset");
  await page.check("#spec");
  await page.fill("#prompt", "class Parser:");
  await page.keyboard.press("Enter");
  await page.waitForSelector(".msg.assistant .foot", { timeout: 60000 });
  await page.fill("#prompt", "def parse(self):");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant .foot").length === 2, null, { timeout: 60000 });
  const status2 = await page.textContent("#status");
  console.log("second turn:", status2);
  assert.match(status2, /prompt \d+ new \+ [1-9]\d* cached/);
  fs.mkdirSync(path.dirname(shot), { recursive: true });
  await page.screenshot({ path: shot });
  console.log("screenshot:", shot);
  // Tool calls stream apart from the answer: the page's request gets a tool forced on it
  // (the page has no tool editor; an agent's request looks like this one).
  await page.route("**/v1/chat/completions", (route) => {
    const body = JSON.parse(route.request().postData());
    body.tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object",
      properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false } } }];
    body.tool_choice = { type: "function", function: { name: "get_weather" } };
    body.parallel_tool_calls = false;
    route.continue({ postData: JSON.stringify(body) });
  });
  await page.click("#reset");
  await page.fill("#prompt", "Weather in Paris?");
  await page.keyboard.press("Enter");
  await page.waitForSelector(".msg.assistant .foot", { timeout: 60000 });
  const call = await page.textContent(".msg.assistant .calls .call");
  console.log("tool call:", call);
  assert.match(call, /^→ get_weather\(\{.*\}\)$/s);
  JSON.parse(call.slice("→ get_weather(".length, -1));
  assert.equal(await page.textContent(".msg.assistant .content"), "", "a calls-only answer has no content");
  await page.unroute("**/v1/chat/completions");
} catch (e) {
  const page = context.pages()[0];
  if (page) {
    console.log("status at failure:", await page.textContent("#status").catch(() => "?"));
    console.log("chat at failure:", (await page.textContent("#chat").catch(() => "?")).slice(0, 400));
    await page.screenshot({ path: shot.replace(/\.png$/, "-failure.png") }).catch(() => {});
  }
  throw e;
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
