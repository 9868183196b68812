#!/usr/bin/env python3
"""bench_serve.py - time to first token and aggregate decode speed of an OpenAI-compatible
server at several client counts, plus the second-turn TTFT of a resent long conversation.
Loopback only; used by scripts/bench_serve for g4 serve and llama-server side by side.

    python3 scripts/bench_serve.py PORT [--clients 1,4,8] [--reps 2] [--n 64] [--turn-tokens 2000]

Each client sends streaming chat requests (ignore_eos, max_tokens n, distinct prompts) back
to back; TTFT is the time from sending to the first content chunk; aggregate t/s is all
generated tokens over the wall time of the round. Prints one JSON object per line."""
import http.client
import json
import statistics
import sys
import threading
import time

args = sys.argv[1:]
PORT = int(args[0])
opt = {"--clients": "1,4,8", "--reps": "2", "--n": "64", "--turn-tokens": "2000", "--label": "server"}
for i in range(1, len(args) - 1, 2):
    opt[args[i]] = args[i + 1]
CLIENTS = [int(x) for x in opt["--clients"].split(",") if x]
REPS, N, TURN = int(opt["--reps"]), int(opt["--n"]), int(opt["--turn-tokens"])


def stream(messages, n):
    """-> (ttft s, tokens, total s)"""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=3600)
    body = {"messages": messages, "max_tokens": n, "stream": True, "temperature": 0.8, "seed": 1,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    t0 = time.time()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    ttft, toks = None, 0
    for line in r:
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        d = json.loads(line[6:])
        if d.get("usage"):
            toks = d["usage"]["completion_tokens"]
        ch = d.get("choices") or []
        if ch and ttft is None and (ch[0].get("delta", {}).get("content") or ch[0].get("delta", {}).get("reasoning_content")):
            ttft = time.time() - t0
    c.close()
    return ttft if ttft is not None else time.time() - t0, toks, time.time() - t0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


for nc in CLIENTS:
    ttfts, tok_total, wall = [], 0, 0.0
    for rep in range(REPS):
        res = [None] * nc
        def run(i):
            res[i] = stream([{"role": "user", "content": f"Client {i} round {rep}: write a long story about the sea."}], N)
        th = [threading.Thread(target=run, args=(i,)) for i in range(nc)]
        t0 = time.time()
        for t in th:
            t.start()
        for t in th:
            t.join()
        wall += time.time() - t0
        for r in res:
            ttfts.append(r[0])
            tok_total += r[1]
    print(json.dumps({"label": opt["--label"], "clients": nc, "ttft_p50_s": round(statistics.median(ttfts), 3),
                      "ttft_p99_s": round(pct(ttfts, 99), 3), "agg_tps": round(tok_total / wall, 2), "tokens": tok_total}), flush=True)

if TURN:
    words = " ".join(f"word{i % 97}" for i in range(TURN * 2 // 3))  # about TURN tokens of text
    conv = [{"role": "user", "content": "Summarise this: " + words}]
    t1, _, _ = stream(conv, 16)
    conv += [{"role": "assistant", "content": "It is a list of words."}, {"role": "user", "content": "And the last one?"}]
    t2, _, _ = stream(conv, 16)
    print(json.dumps({"label": opt["--label"], "turn1_ttft_s": round(t1, 3), "turn2_ttft_s": round(t2, 3),
                      "turn2_over_turn1": round(t2 / t1, 3)}), flush=True)
