// sdk.mjs - the official openai npm SDK (v7) as a client of a running g4 serve (loopback).
//   node tests/serve/sdk.mjs http://127.0.0.1:PORT
// Models, chat (non-streaming, streaming with usage, logprobs, thinking flags), completions,
// the SDK's error classes for 400 / 404 statuses. Ends with "N passed, M failed".
import OpenAI from "openai";

const base = process.argv[2];
const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 60000 });
let passed = 0, failed = 0;
const ok = (name, cond, detail = "") => {
    if (cond) passed++;
    else { failed++; console.error(`FAIL ${name}: ${detail}`); }
};
const msgs = [{ role: "system", content: "Be terse." }, { role: "user", content: "Hello there" }];

try {
    const models = await client.models.list();
    const list = [];
    for await (const m of models) list.push(m);
    ok("models.list", list.length === 1 && typeof list[0].id === "string" && list[0].object === "model", JSON.stringify(list));

    const r = await client.chat.completions.create({ model: list[0].id, messages: msgs, max_tokens: 10, seed: 11, temperature: 0.7 });
    const c = r.choices[0];
    ok("chat", r.object === "chat.completion" && c.message.role === "assistant" && typeof c.message.content === "string" &&
       ["stop", "length"].includes(c.finish_reason) && r.usage.completion_tokens <= 10 && r.usage.prompt_tokens > 0, JSON.stringify(r));

    const s = await client.chat.completions.create({ model: "x", messages: msgs, max_tokens: 10, seed: 11, temperature: 0.7,
                                                     stream: true, stream_options: { include_usage: true } });
    let text = "", fin = null, usage = null, role = null;
    for await (const ch of s) {
        if (ch.usage) usage = ch.usage;
        if (!ch.choices.length) continue;
        if (ch.choices[0].delta.role) role = ch.choices[0].delta.role;
        text += ch.choices[0].delta.content || "";
        if (ch.choices[0].finish_reason) fin = ch.choices[0].finish_reason;
    }
    ok("chat stream equals non-stream", text === c.message.content && fin === c.finish_reason && role === "assistant",
       `${JSON.stringify(text)} vs ${JSON.stringify(c.message.content)}`);
    ok("stream usage", usage && usage.completion_tokens === r.usage.completion_tokens, JSON.stringify(usage));

    const lp = await client.chat.completions.create({ model: "x", messages: msgs, max_tokens: 4, logprobs: true, top_logprobs: 3 });
    const lc = lp.choices[0].logprobs?.content || [];
    ok("logprobs", lc.length === lp.usage.completion_tokens && lc.every(t => t.logprob <= 0 && t.top_logprobs.length === 3 &&
       t.top_logprobs[0].logprob >= t.top_logprobs[2].logprob), JSON.stringify(lc[0]));

    const th = await client.chat.completions.create({ model: "x", messages: msgs, max_tokens: 4, reasoning_effort: "high" });
    ok("reasoning_effort accepted", th.choices.length === 1, JSON.stringify(th));
    const th2 = await client.chat.completions.create({ model: "x", messages: msgs, max_tokens: 4, chat_template_kwargs: { enable_thinking: true } });
    ok("enable_thinking accepted", th2.choices.length === 1, JSON.stringify(th2));

    const cp = await client.completions.create({ model: "x", prompt: "The capital of France is", max_tokens: 6, temperature: 0 });
    ok("completions", cp.object === "text_completion" && typeof cp.choices[0].text === "string" && cp.usage.completion_tokens <= 6, JSON.stringify(cp));
    const cs = await client.completions.create({ model: "x", prompt: "The capital of France is", max_tokens: 6, temperature: 0, stream: true });
    let ct = "";
    for await (const ch of cs) ct += ch.choices[0]?.text || "";
    ok("completions stream", ct === cp.choices[0].text, `${JSON.stringify(ct)} vs ${JSON.stringify(cp.choices[0].text)}`);

    for (const [name, body, param] of [["n=2", { n: 2 }, "n"], ["temperature 5", { temperature: 5 }, "temperature"],
                                        ["json mode", { response_format: { type: "json_object" } }, "response_format"]]) {
        try {
            await client.chat.completions.create({ model: "x", messages: msgs, max_tokens: 2, ...body });
            ok(`error ${name}`, false, "no error");
        } catch (e) {
            ok(`error ${name}`, e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param && e.message.length > 0,
               `${e.constructor.name} ${e.status} ${e.param} ${e.message}`);
        }
    }
    try {
        await fetch(base + "/v1/nothing").then(async r2 => { if (r2.status !== 404) throw new Error(`status ${r2.status}`); });
        ok("404", true);
    } catch (e) { ok("404", false, e.message); }
} catch (e) {
    ok("sdk run", false, `${e.constructor.name}: ${e.message}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
