// page.mjs - the built-in chat page (GET /) in headless Chromium, driven by playwright-core
// (which downloads no browser: it runs Debian's /usr/bin/chromium). Checks: the page loads
// with no external requests, a message streams an answer with tokens/s, the thinking toggle
// reaches the request, the stop button cuts a long answer, and a screenshot is written.
//   node tests/serve/page.mjs http://127.0.0.1:PORT SCREENSHOT.png
import { chromium } from "playwright-core";

const base = process.argv[2], shot = process.argv[3];
let passed = 0, failed = 0;
const ok = (name, cond, detail = "") => { if (cond) passed++; else { failed++; console.error(`FAIL ${name}: ${detail}`); } };
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
    const page = await browser.newPage();
    const foreign = [], bodies = [];
    page.on("request", r => {
        if (!r.url().startsWith(base)) foreign.push(r.url());
        if (r.method() === "POST") bodies.push(r.postData() || "");
    });
    const errors = [];
    page.on("pageerror", e => errors.push(e.message));
    await page.goto(base + "/", { timeout: 30000 });
    ok("title", (await page.title()) === "gemma4.c chat");
    await page.waitForFunction(() => document.getElementById("model").textContent.length > 0, null, { timeout: 10000 });
    await page.fill("#maxtok", "12");
    await page.fill("#q", "Hello page");
    await page.press("#q", "Enter");
    await page.waitForFunction(() => /tokens\/s/.test(document.querySelector(".assistant .stats")?.textContent || ""), null, { timeout: 60000 });
    const ans = await page.textContent(".assistant .answer");
    ok("streamed answer", typeof ans === "string" && ans.length > 0, JSON.stringify(ans));
    ok("user message shown", (await page.textContent(".user")) === "Hello page");
    /* the random model may end early on its own: make the second answer long (ignore_eos);
     * `sent` resolves once that request has left the interception for the server */
    let sentNow;
    const sent = new Promise(r => { sentNow = r; });
    await page.route("**/v1/chat/completions", async route => {
        const b = JSON.parse(route.request().postData() || "{}");
        const second = b.messages && b.messages.length > 1;
        if (second) b.ignore_eos = true;
        await route.continue({ postData: JSON.stringify(b) });
        if (second) sentNow();
    });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: 16384, uploadThroughput: -1 });
    await page.check("#think");
    await page.fill("#maxtok", "4000");
    await page.fill("#q", "Second message");
    await page.press("#q", "Enter");
    await page.waitForFunction(() => document.getElementById("send").textContent === "Stop", null, { timeout: 10000 });
    /* click Stop once the request is on its way (an abort while it was still held by the
     * interception above went unheard once: the answer ran to its 4000 tokens) and its first
     * text has arrived. The page reads the stream through a throttled network (Chromium's
     * DevTools emulation, 16 KB/s: the ~4000 events take minutes to arrive), so the click lands
     * mid-answer however fast the host generates: unthrottled, a Zen 5 streamed all 4000 tokens
     * in 1-1.6 s and the click came after the end in 4 of 11 runs. */
    await sent;
    await page.waitForFunction(() => { const a = document.querySelectorAll(".assistant"); const b = a[a.length - 1];
        return a.length === 2 && (b.querySelector("pre").textContent.length > 0 || b.querySelector(".answer").textContent.length > 0); },
        null, { timeout: 30000 });
    await page.click("#send");
    await page.waitForFunction(() => document.getElementById("send").textContent === "Send", null, { timeout: 10000 });
    const stats2 = await page.evaluate(() => { const a = document.querySelectorAll(".assistant .stats"); return a.length === 2 ? a[1].textContent : `${a.length} answers`; });
    ok("stop button", /stopped/.test(stats2), JSON.stringify(stats2));
    const last = JSON.parse(bodies[bodies.length - 1] || "{}");
    ok("thinking toggle sent", last.chat_template_kwargs && last.chat_template_kwargs.enable_thinking === true, bodies[bodies.length - 1]);
    ok("history resent", last.messages && last.messages.length === 3 && last.messages[1].role === "assistant", JSON.stringify(last.messages));
    ok("no external requests", foreign.length === 0, foreign.join(" "));
    ok("no page errors", errors.length === 0, errors.join("; "));
    if (shot) await page.screenshot({ path: shot, fullPage: true });
} catch (e) {
    ok("page run", false, e.message);
} finally {
    await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
