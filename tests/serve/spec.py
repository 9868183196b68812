#!/usr/bin/env python3
"""spec.py - g4 serve with speculative decoding against g4 serve without it (tests/sh/serve.sh).

usage: spec.py PLAIN_PORT SPEC_PORT [SPEC_PORT ...] MODE

Greedy requests (completions and chat, several prompts, some repetitive so the n-gram drafter
finds matches) must give exactly the text of the same request to the plain server. MODE seq:
one request at a time; MODE conc: the spec servers answer 4 clients at once (2+ per slot), the
plain server one at a time (run both on the scalar kernel table, whose results do not depend on
how rows are batched). Every spec answer's timings carry draft_n and draft_n_accepted
(accepted <= drafted), and over all requests something was drafted. Prints one line per
failure and "N passed, M failed"."""
import http.client
import json
import sys
import threading

PROMPTS = [
    "the quick brown fox",
    "a b c a b c a b c a b",
    "one two three one two three one two",
    "hello",
    "x y x y x y x y x y x y",
    "the capital of france is",
]
N = 40


def req(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, json.dumps(body))
    r = c.getresponse()
    d = json.loads(r.read())
    c.close()
    if r.status != 200:
        raise RuntimeError("status %d: %r" % (r.status, d))
    return d


def bodies():
    out = []
    for p in PROMPTS:
        out.append(("/v1/completions", {"prompt": p, "max_tokens": N, "temperature": 0}))
        out.append(("/v1/chat/completions", {"messages": [{"role": "user", "content": p}], "max_tokens": N,
                                              "temperature": 0}))
    return out


def text_of(d):
    c = d["choices"][0]
    return c["text"] if "text" in c else c["message"]["content"]


def main():
    ports = [int(a) for a in sys.argv[1:-1]]
    mode = sys.argv[-1]
    plain, specs = ports[0], ports[1:]
    passed = failed = 0
    want = [text_of(req(plain, p, b)) for p, b in bodies()]
    for sp in specs:
        got = [None] * len(want)
        err = []

        def run(idx):
            try:
                p, b = bodies()[idx]
                got[idx] = req(sp, p, b)
            except Exception as e:  # noqa: BLE001 - reported as a failure
                err.append(repr(e))

        if mode == "conc":
            order = list(range(len(want)))
            for k in range(0, len(order), 4):
                th = [threading.Thread(target=run, args=(i,)) for i in order[k:k + 4]]
                for t in th:
                    t.start()
                for t in th:
                    t.join()
        else:
            for i in range(len(want)):
                run(i)
        if err:
            failed += 1
            print("FAIL port %d: %s" % (sp, err[0]))
            continue
        drafted = 0
        for i, d in enumerate(got):
            t = d.get("timings", {})
            p, b = bodies()[i]
            ok = text_of(d) == want[i]
            ok_t = "draft_n" in t and "draft_n_accepted" in t and 0 <= t["draft_n_accepted"] <= t["draft_n"]
            drafted += t.get("draft_n", 0)
            if ok and ok_t:
                passed += 1
            else:
                failed += 1
                print("FAIL port %d %s %r: %s" % (sp, p, b.get("prompt", b.get("messages")),
                      "timings %r" % t if ok else "text %r, want %r" % (text_of(d), want[i])))
        # streamed: the deltas of several tokens per step add up to the same text
        c = http.client.HTTPConnection("127.0.0.1", sp, timeout=120)
        p, b = bodies()[3]
        c.request("POST", p, json.dumps(dict(b, stream=True)))
        raw = c.getresponse().read().decode()
        c.close()
        st = "".join((json.loads(ln[6:])["choices"] or [{"delta": {}}])[0]["delta"].get("content") or ""
                     for ln in raw.split("\n") if ln.startswith("data: {"))
        if st == want[3] and raw.rstrip().endswith("data: [DONE]"):
            passed += 1
        else:
            failed += 1
            print("FAIL port %d: streamed %r, want %r" % (sp, st, want[3]))
        if drafted > 0:
            passed += 1
        else:
            failed += 1
            print("FAIL port %d: nothing drafted over %d requests" % (sp, len(got)))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
