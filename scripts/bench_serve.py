#!/usr/bin/env python3
"""bench_serve.py - time to first token and aggregate decode speed of an OpenAI-compatible
server at several client counts, plus the second-turn TTFT of a resent long conversation.
Loopback only; used by scripts/bench_serve for g4 serve and llama-server side by side.

    python3 scripts/bench_serve.py PORT [--clients 1,4,8] [--reps 2] [--n 64] [--turn-tokens 2000]

Each client sends streaming chat requests (ignore_eos, max_tokens n, distinct prompts) back
to back; TTFT is the time from sending to the first content chunk; agg_tps is all generated
tokens over the wall time of the round (prompts included); decode_tps counts the content
chunks (one per token on both servers) that arrive while every client of the round is
decoding (from the last first chunk to the first last chunk) over that window: the aggregate
decode speed at that many concurrent streams. Prints one JSON object per line."""
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


def stream(messages, n, times=None):
    """-> (ttft s, tokens, total s); times gets the arrival time of every content chunk"""
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
        if ch and (ch[0].get("delta", {}).get("content") or ch[0].get("delta", {}).get("reasoning_content")):
            if ttft is None:
                ttft = time.time() - t0
            if times is not None:
                times.append(time.time())
    c.close()
    return ttft if ttft is not None else time.time() - t0, toks, time.time() - t0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


for nc in CLIENTS:
    ttfts, tok_total, wall, dec_n, dec_s = [], 0, 0.0, 0, 0.0
    for rep in range(REPS):
        res = [None] * nc
        tms = [[] for _ in range(nc)]
        def run(i):
            res[i] = stream([{"role": "user", "content": f"Client {i} round {rep}: write a long story about the sea."}], N, tms[i])
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
        if all(tms):
            a, b = max(t[0] for t in tms), min(t[-1] for t in tms)
            if b > a:
                dec_n += sum(1 for t in tms for x in t if a < x <= b)
                dec_s += b - a
    print(json.dumps({"label": opt["--label"], "clients": nc, "ttft_p50_s": round(statistics.median(ttfts), 3),
                      "ttft_p99_s": round(pct(ttfts, 99), 3), "agg_tps": round(tok_total / wall, 2),
                      "decode_tps": round(dec_n / dec_s, 2) if dec_s > 0 else None, "tokens": tok_total}), flush=True)

def n_tokens(text):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)
    c.request("POST", "/tokenize", json.dumps({"content": text}), {"Content-Type": "application/json"})
    n = len(json.loads(c.getresponse().read())["tokens"])
    c.close()
    return n


if TURN:
    # about TURN tokens of text in this server's vocabulary (random test vocabularies split
    # words far more finely than a real one)
    per = n_tokens(" ".join(f"word{i % 97}" for i in range(200))) / 200
    words = " ".join(f"word{i % 97}" for i in range(max(1, int(TURN / per))))
    conv = [{"role": "user", "content": "Summarise this: " + words}]
    t1, _, _ = stream(conv, 16)
    conv += [{"role": "assistant", "content": "It is a list of words."}, {"role": "user", "content": "And the last one?"}]
    t2, _, _ = stream(conv, 16)
    print(json.dumps({"label": opt["--label"], "turn1_text_tokens": n_tokens(conv[0]["content"]), "turn1_ttft_s": round(t1, 3),
                      "turn2_ttft_s": round(t2, 3), "turn2_over_turn1": round(t2 / t1, 3)}), flush=True)
