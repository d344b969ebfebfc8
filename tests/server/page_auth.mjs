// The chat page against a server with --api-key, in Debian's headless
// chromium: the first 401 makes the page ask for the key (a prompt dialog),
// the key goes to sessionStorage only (not localStorage, not a cookie), the
// answer streams with it, and a reload in the same tab asks no more.
// usage: node page_auth.mjs BASE_URL KEY
import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [base, key] = process.argv.slice(2);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "specdec-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = context.pages()[0] || await context.newPage();
  let dialogs = 0;
  page.on("dialog", async (d) => { dialogs++; await d.accept(key); });
  await page.goto(base + "/");
  await page.waitForFunction(() => document.getElementById("model").textContent !== "…", null, { timeout: 30000 });
  assert.equal(dialogs, 1, "the page asked for the key " + dialogs + " times");
  await page.fill("#max", "8");
  await page.fill("#prompt", "def add(a, b):");
  await page.keyboard.press("Enter");
  await page.waitForSelector(".msg.assistant .foot", { timeout: 60000 });
  assert.equal(dialogs, 1, "asked again for the chat request");
  const stored = await page.evaluate(() => ({ s: sessionStorage.getItem("specdec-api-key"), l: localStorage.length,
                                               c: document.cookie }));
  assert.equal(stored.s, key, "the key is not in sessionStorage");
  assert.equal(stored.l, 0, "something was put in localStorage");
  assert.equal(stored.c, "", "a cookie was set");
  await page.reload();
  await page.waitForFunction(() => document.getElementById("model").textContent !== "…", null, { timeout: 30000 });
  assert.equal(dialogs, 1, "asked again after a reload in the same tab");
  // A new tab (another page of the context) has its own sessionStorage: it asks.
  const page2 = await context.newPage();
  let dialogs2 = 0;
  page2.on("dialog", async (d) => { dialogs2++; await d.accept(key); });
  await page2.goto(base + "/");
  await page2.waitForFunction(() => document.getElementById("model").textContent !== "…", null, { timeout: 30000 });
  assert.equal(dialogs2, 1, "a new tab did not ask for the key");
  console.log("page: asked once per tab, key in sessionStorage only, answer streamed");
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
