#!/usr/bin/env python3
"""hostile.py - the hostile HTTP and JSON catalogue against a running g4 serve (loopback only).

    python3 tests/serve/hostile.py PORT TIMEOUT_S

Every case sends raw bytes on its own connection and checks the status and that the body is
OpenAI's error shape with a one-line message naming the problem; after all of them the server
must still answer /health. Prints one line per failure and ends with "N passed, M failed".
Standard library only; every socket has a timeout, so nothing hangs."""
import json
import socket
import sys
import time

PORT = int(sys.argv[1])
TMO = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
passed = failed = 0


def ok(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=TMO + 10)
    return s


def read_response(s):
    """one HTTP response: (status, headers dict, body bytes); handles Content-Length and chunked"""
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(65536)
        if not c:
            break
        data += c
    if b"\r\n\r\n" not in data:
        return None, {}, data, b""
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdr = {}
    for ln in lines[1:]:
        k, v = ln.split(":", 1)
        hdr[k.strip().lower()] = v.strip()
    if status == 100:
        return status, hdr, b"", rest
    if "content-length" in hdr:
        n = int(hdr["content-length"])
        while len(rest) < n:
            c = s.recv(65536)
            if not c:
                break
            rest += c
        return status, hdr, rest[:n], rest[n:]
    if hdr.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                c = s.recv(65536)
                if not c:
                    return status, hdr, body, b""
                rest += c
            line, rest = rest.split(b"\r\n", 1)
            n = int(line.split(b";")[0], 16)
            while len(rest) < n + 2:
                c = s.recv(65536)
                if not c:
                    return status, hdr, body, b""
                rest += c
            body += rest[:n]
            rest = rest[n + 2:]
            if n == 0:
                return status, hdr, body, rest
    while True:
        c = s.recv(65536)
        if not c:
            break
        rest += c
    return status, hdr, rest, b""


def error_shape(body):
    try:
        e = json.loads(body)["error"]
        return isinstance(e["message"], str) and e["message"] and "\n" not in e["message"] and \
            isinstance(e["type"], str) and "param" in e and "code" in e, e
    except Exception as x:  # noqa: BLE001
        return False, str(x)


def raw(name, data, want, needle=None, param=None):
    s = connect()
    try:
        s.sendall(data)
        st, hdr, body, _ = read_response(s)
    except OSError as x:
        ok(name, False, f"socket error {x}")
        return
    finally:
        s.close()
    good, e = error_shape(body) if st and st >= 400 else (True, None)
    detail = f"status {st} (want {want}), body {body[:300]!r}"
    ok(name, st == want and good and (needle is None or needle in e.get("message", "")) and
       (param is None or e.get("param") == param), detail)


def post(path, body, ctype=b"application/json"):
    b = body if isinstance(body, bytes) else body.encode()
    return b"POST " + path.encode() + b" HTTP/1.1\r\nHost: t\r\nContent-Type: " + ctype + \
        b"\r\nContent-Length: " + str(len(b)).encode() + b"\r\nConnection: close\r\n\r\n" + b


CHAT = "/v1/chat/completions"
MSG = '"messages":[{"role":"user","content":"Hi"}]'

# ---- HTTP framing ----
raw("garbage request line", b"HELLO\r\n\r\n", 400)
raw("bad version", b"GET / HTTP/3.0\r\nHost: t\r\n\r\n", 505)
raw("missing host", b"GET /health HTTP/1.1\r\n\r\n", 400, "Host")
raw("bare LF", b"GET /health HTTP/1.1\nHost: t\n\n", 400, "bare LF")
raw("space before colon", b"GET /health HTTP/1.1\r\nHost : t\r\n\r\n", 400, "whitespace")
raw("obs-fold", b"GET /health HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n", 400, "folding")
raw("CL and TE", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
raw("gzip TE", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501)
raw("bad CL", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 12a\r\n\r\n", 400, "Content-Length")
raw("long request line", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414)
raw("huge headers", b"GET /health HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 100) for i in range(200)) + b"\r\n", 431)
raw("body too large", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n", 413)
raw("chunked too large", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
    b"".join(b"1000\r\n" + b"x" * 4096 + b"\r\n" for _ in range(20)), 413)
raw("bad chunk size", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400, "chunk")
raw("expect 200", b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nExpect: nonsense\r\nContent-Length: 2\r\n\r\n{}", 417)
raw("not found", b"GET /v2/nothing HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 404, "no route")
raw("method", b"DELETE /v1/models HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 405, "not allowed")

# ---- JSON bodies ----
raw("empty body", post(CHAT, ""), 400, "empty")
raw("not JSON", post(CHAT, "hello"), 400, "JSON")
raw("truncated JSON", post(CHAT, '{"messages": ['), 400, "end of input")
raw("not an object", post(CHAT, "[1,2]"), 400, "JSON object")
raw("duplicate key", post(CHAT, '{"messages":[],"messages":[]}'), 400, "duplicate key")
raw("lone surrogate", post(CHAT, '{"messages":[{"role":"user","content":"\\ud800"}]}'), 400, "surrogate")
raw("invalid UTF-8", post(CHAT, b'{"messages":[{"role":"user","content":"\xff\xfe"}]}'), 400, "UTF-8")
raw("deep nesting", post(CHAT, "[" * 60000), 400, "nesting")
raw("huge number", post(CHAT, '{' + MSG + ',"max_tokens":1e400}'), 400, "out of range")
raw("BOM", post(CHAT, b"\xef\xbb\xbf{}"), 400)
raw("trailing garbage", post(CHAT, '{' + MSG + '} x'), 400, "trailing")
raw("messages missing", post(CHAT, '{"model":"x"}'), 400, "messages", "messages")
raw("messages wrong type", post(CHAT, '{"messages":"hi"}'), 400, "expected an array", "messages")
raw("message not object", post(CHAT, '{"messages":[1]}'), 400, "messages[0]", "messages")
raw("bad role", post(CHAT, '{"messages":[{"role":"wizard","content":"x"}]}'), 400, "wizard", "messages")
raw("content wrong type", post(CHAT, '{"messages":[{"role":"user","content":5}]}'), 400, "content", "messages")
raw("image part", post(CHAT, '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}'), 400, "not supported", "messages")
raw("max_tokens negative", post(CHAT, '{' + MSG + ',"max_tokens":-5}'), 400, "max_tokens", "max_tokens")
raw("max_tokens fraction", post(CHAT, '{' + MSG + ',"max_tokens":1.5}'), 400, "integer", "max_tokens")
raw("max_tokens string", post(CHAT, '{' + MSG + ',"max_tokens":"10"}'), 400, "integer", "max_tokens")
raw("temperature range", post(CHAT, '{' + MSG + ',"temperature":3}'), 400, "temperature", "temperature")
raw("temperature type", post(CHAT, '{' + MSG + ',"temperature":"hot"}'), 400, "number", "temperature")
raw("top_p range", post(CHAT, '{' + MSG + ',"top_p":1.5}'), 400, "top_p", "top_p")
raw("top_k negative", post(CHAT, '{' + MSG + ',"top_k":-1}'), 400, "top_k", "top_k")
raw("min_p range", post(CHAT, '{' + MSG + ',"min_p":-0.1}'), 400, "min_p", "min_p")
raw("presence range", post(CHAT, '{' + MSG + ',"presence_penalty":9}'), 400, "presence_penalty", "presence_penalty")
raw("seed fraction", post(CHAT, '{' + MSG + ',"seed":1.5}'), 400, "seed", "seed")
raw("seed string", post(CHAT, '{' + MSG + ',"seed":"x"}'), 400, "seed", "seed")
raw("stop type", post(CHAT, '{' + MSG + ',"stop":5}'), 400, "stop", "stop")
raw("stop too many", post(CHAT, '{' + MSG + ',"stop":[' + ",".join('"s%d"' % i for i in range(40)) + ']}'), 400, "stop", "stop")
raw("stop too long", post(CHAT, '{' + MSG + ',"stop":"' + "x" * 1000 + '"}'), 400, "stop", "stop")
raw("n=2", post(CHAT, '{' + MSG + ',"n":2}'), 400, "only 1", "n")
raw("response_format json", post(CHAT, '{' + MSG + ',"response_format":{"type":"json_object"}}'), 400, "not supported", "response_format")
raw("top_logprobs without logprobs", post(CHAT, '{' + MSG + ',"top_logprobs":3}'), 400, "logprobs", "top_logprobs")
raw("top_logprobs range", post(CHAT, '{' + MSG + ',"logprobs":true,"top_logprobs":50}'), 400, "top_logprobs", "top_logprobs")
raw("stream type", post(CHAT, '{' + MSG + ',"stream":"yes"}'), 400, "boolean", "stream")
raw("reasoning_effort", post(CHAT, '{' + MSG + ',"reasoning_effort":"extreme"}'), 400, "reasoning_effort", "reasoning_effort")
raw("thinking type", post(CHAT, '{' + MSG + ',"chat_template_kwargs":{"enable_thinking":1}}'), 400, "boolean", "chat_template_kwargs.enable_thinking")
raw("prompt too long", post("/v1/completions", '{"prompt":"' + "word " * 9000 + '"}'), 400, "context", "prompt")
raw("prompt ids out of range", post("/v1/completions", '{"prompt":[1,2,99999999]}'), 400, "token id", "prompt")
raw("prompt wrong type", post("/v1/completions", '{"prompt":{"a":1}}'), 400, "prompt", "prompt")
raw("tokenize type", post("/tokenize", '{"content":5}'), 400, "content", "content")
raw("detokenize range", post("/detokenize", '{"tokens":[-1]}'), 400, "token id", "tokens")

# ---- slow and odd clients ----
s = connect()
s.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n")  # slowloris: never finishes the head
t0 = time.time()
st, _, body, _ = read_response(s)
s.close()
ok("slowloris 408", st == 408 and time.time() - t0 < TMO + 5, f"status {st} after {time.time() - t0:.1f} s")
s = connect()
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc")  # truncated chunk
st, _, body, _ = read_response(s)
s.close()
ok("truncated chunked body 408", st == 408, f"status {st}")
s = connect()
s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 19\r\n\r\n")
st, _, _, rest = read_response(s)
ok("100-continue", st == 100, f"status {st}")
s.sendall(b'{"content":"hello"}')
st, _, body, _ = read_response(s) if not rest else (None, None, rest, None)
ok("100-continue then 200", st == 200 and b'"tokens"' in body, f"status {st} {body[:100]!r}")
s.close()
s = connect()  # pipelining: three requests in one write, three answers in order
s.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n" + post("/tokenize", '{"content":"a b"}').replace(b"Connection: close\r\n", b"") +
          b"GET /v1/models HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
answers = []
try:
    data = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        data += c
    answers = [int(p[:3]) for p in data.split(b"HTTP/1.1 ")[1:]]
    ok("pipelining", answers == [200, 200, 200] and data.index(b'"status"') < data.index(b'"tokens"') < data.index(b'"object":"list"'),
       f"statuses {answers}")
except (OSError, ValueError) as x:
    ok("pipelining", False, str(x))
s.close()
s = connect()  # a client that disconnects in the middle of a body
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"pro")
s.close()

# ---- the server is still serving ----
s = connect()
s.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
st, _, body, _ = read_response(s)
s.close()
ok("still serving", st == 200 and b'"ok"' in body, f"status {st}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
