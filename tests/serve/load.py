#!/usr/bin/env python3
"""load.py - bounded loopback load test for g4 serve: CLIENTS threads x REQS requests, mixed
streaming and non-streaming chat and completions, every fifth stream disconnecting after its
first chunk. Checks every completed response is whole and valid (JSON, finish_reason, the
stream's [DONE]), 503s carry Retry-After and are retried, nothing hangs (socket timeouts and
a wall-clock bound), and afterwards the slots and queue return to idle.

    python3 tests/serve/load.py PORT [CLIENTS REQS]

Ends with "N passed, M failed". Standard library only."""
import http.client
import json
import sys
import threading
import time

PORT = int(sys.argv[1])
CLIENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 16
REQS = int(sys.argv[3]) if len(sys.argv) > 3 else 8
lock = threading.Lock()
stats = {"ok": 0, "bad": 0, "cut": 0, "busy": 0}
errors = []


def note(kind, msg=None):
    with lock:
        stats[kind] += 1
        if msg and len(errors) < 20:
            errors.append(msg)


def one(cid, k):
    chat = (cid + k) % 2 == 0
    stream = (cid + k) % 3 != 0
    cut = stream and (cid * REQS + k) % 5 == 0
    body = {"max_tokens": 6 + (cid + k) % 10, "seed": cid * 100 + k, "stream": stream}
    if chat:
        body["messages"] = [{"role": "user", "content": f"client {cid} request {k}"}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = f"client {cid} says {k}"
        path = "/v1/completions"
    for attempt in range(50):
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
        try:
            c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status == 503:
                if not r.getheader("Retry-After"):
                    note("bad", "503 without Retry-After")
                r.read()
                note("busy")
                time.sleep(0.05)
                continue
            if r.status != 200:
                note("bad", f"status {r.status}: {r.read()[:200]!r}")
                return
            if not stream:
                d = json.loads(r.read())
                ch = d["choices"][0]
                text = ch["message"]["content"] if chat else ch["text"]
                if ch["finish_reason"] not in ("stop", "length") or not isinstance(text, str) or \
                        d["usage"]["completion_tokens"] > body["max_tokens"]:
                    note("bad", f"incomplete: {d}")
                else:
                    note("ok")
                return
            events = 0
            done = False
            fin = None
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                if not line.startswith(b"data: "):
                    note("bad", f"not an SSE data line: {line[:80]!r}")
                    return
                payload = line[6:]
                if payload == b"[DONE]":
                    done = True
                    break
                d = json.loads(payload)
                if d["choices"] and d["choices"][0].get("finish_reason"):
                    fin = d["choices"][0]["finish_reason"]
                events += 1
                if cut and events == 1:
                    c.sock.close()  # disconnect mid-stream
                    note("cut")
                    return
            if done and fin in ("stop", "length"):
                note("ok")
            else:
                note("bad", f"stream ended without [DONE] or finish_reason ({done}, {fin})")
            return
        except Exception as x:  # noqa: BLE001
            note("bad", f"{type(x).__name__}: {x}")
            return
        finally:
            c.close()
    note("bad", "still busy after 50 tries")


def client(cid):
    for k in range(REQS):
        one(cid, k)


t0 = time.time()
th = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
for t in th:
    t.start()
for t in th:
    t.join(timeout=max(0.0, 240 - (time.time() - t0)))
hung = sum(t.is_alive() for t in th)
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}", file=sys.stderr)


total = CLIENTS * REQS
check("no client hung", hung == 0, f"{hung} threads still running")
check("every response whole", stats["bad"] == 0, "; ".join(errors))
check("all requests accounted", stats["ok"] + stats["cut"] == total, str(stats))
idle = False
for _ in range(100):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request("GET", "/health")
    h = json.loads(c.getresponse().read())
    c.close()
    if h["slots_processing"] == 0 and h["queued"] == 0:
        idle = True
        break
    time.sleep(0.1)
check("slots and queue back to idle", idle, str(h))
print(f"load: {total} requests from {CLIENTS} clients in {time.time() - t0:.1f} s: {stats}", file=sys.stderr)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
