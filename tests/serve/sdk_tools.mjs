// sdk_tools.mjs - tool calling through the official openai npm SDK (v7), against a g4 serve
// running a scripted test model (g4-mkmodel --script, a test device that answers every
// prompt with "<|tool_call>call:sum{x:1}<tool_call|>"), loopback.
//   node tests/serve/sdk_tools.mjs http://127.0.0.1:PORT
// A real tool_calls answer (non-streaming and streamed deltas), finish_reason "tool_calls",
// JSON arguments; tool_choice "none" (the call stays text); the tool result sent back as a
// "tool" message; the SDK's error classes for refused tool fields. Ends with "N passed, M failed".
import OpenAI from "openai";

const base = process.argv[2];
const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 60000 });
let passed = 0, failed = 0;
const ok = (name, cond, detail = "") => {
    if (cond) passed++;
    else { failed++; console.error(`FAIL ${name}: ${detail}`); }
};
const tools = [{ type: "function", function: { name: "sum", description: "Adds numbers.",
    parameters: { type: "object", properties: { x: { type: "integer", description: "a number" } }, required: ["x"] } } }];
const messages = [{ role: "system", content: "Use the tools." }, { role: "user", content: "What is the sum?" }];

try {
    const r = await client.chat.completions.create({ model: "x", messages, tools, temperature: 0 });
    const c = r.choices[0], tc = c.message.tool_calls || [];
    ok("tool call", c.finish_reason === "tool_calls" && tc.length === 1 && tc[0].type === "function" &&
       tc[0].function.name === "sum" && typeof tc[0].id === "string" && tc[0].id.length > 0 && c.message.content === null,
       JSON.stringify(r));
    let args = null;
    try { args = JSON.parse(tc[0]?.function?.arguments); } catch { /* checked below */ }
    ok("tool call arguments are JSON", args && args.x === 1 && Object.keys(args).length === 1, tc[0]?.function?.arguments);

    const s = await client.chat.completions.create({ model: "x", messages, tools, temperature: 0, stream: true });
    const calls = [];
    let fin = null, content = "";
    for await (const ch of s) {
        const d = ch.choices[0]?.delta || {};
        content += d.content || "";
        for (const t of d.tool_calls || []) {
            const k = t.index;
            calls[k] ??= { id: "", name: "", arguments: "" };
            if (t.id) calls[k].id = t.id;
            if (t.function?.name) calls[k].name += t.function.name;
            if (t.function?.arguments) calls[k].arguments += t.function.arguments;
        }
        if (ch.choices[0]?.finish_reason) fin = ch.choices[0].finish_reason;
    }
    ok("streamed tool call", fin === "tool_calls" && calls.length === 1 && calls[0].name === "sum" && content === "" &&
       JSON.stringify(JSON.parse(calls[0].arguments)) === JSON.stringify({ x: 1 }), JSON.stringify({ calls, fin, content }));

    const none = await client.chat.completions.create({ model: "x", messages, tools, tool_choice: "none", temperature: 0 });
    ok("tool_choice none", !none.choices[0].message.tool_calls && none.choices[0].finish_reason !== "tool_calls" &&
       none.choices[0].message.content.includes("<|tool_call>call:sum"), JSON.stringify(none.choices[0]));
    const plain = await client.chat.completions.create({ model: "x", messages, temperature: 0 });
    ok("no tools: the text is content", !plain.choices[0].message.tool_calls &&
       plain.choices[0].message.content.includes("call:sum{x:1}"), JSON.stringify(plain.choices[0]));

    // the result goes back as a "tool" message; the prompt grows by the call and its result
    const back = await client.chat.completions.create({ model: "x", tools, temperature: 0, max_tokens: 4,
        messages: [...messages, c.message, { role: "tool", tool_call_id: tc[0].id, content: JSON.stringify({ result: 1 }) }] });
    ok("tool result accepted", back.choices.length === 1 && back.usage.prompt_tokens > r.usage.prompt_tokens + 10,
       JSON.stringify(back.usage));

    for (const [name, body, param] of [["tool_choice required", { tools, tool_choice: "required" }, "tool_choice"],
                                        ["tool_choice object", { tools, tool_choice: { type: "function", function: { name: "sum" } } }, "tool_choice"],
                                        ["tools not an array", { tools: { sum: 1 } }, "tools"],
                                        ["tool without a name", { tools: [{ type: "function", function: { description: "x" } }] }, "tools"],
                                        ["arguments not JSON", { tools, messages: [...messages, { role: "assistant", content: null,
                                            tool_calls: [{ id: "a", type: "function", function: { name: "sum", arguments: "{x:" } }] }] }, "messages"]]) {
        try {
            await client.chat.completions.create({ model: "x", messages, max_tokens: 2, ...body });
            ok(`error ${name}`, false, "no error");
        } catch (e) {
            ok(`error ${name}`, e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param && e.message.length > 0,
               `${e.constructor.name} ${e.status} ${e.param} ${e.message}`);
        }
    }
} catch (e) {
    ok("sdk run", false, `${e.constructor.name}: ${e.message}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
