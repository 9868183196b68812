#!/bin/sh
# serve.sh - g4 serve end to end on a tiny random model, loopback only: startup line, curl
# for raw SSE framing, /v1/completions equal to `g4 run` (greedy and seeded), stop strings,
# streamed text equal to the non-streamed, API key, 503 with Retry-After, the hostile
# catalogue (tests/serve/hostile.py), the load test (tests/serve/load.py), the openai SDK
# (tests/serve/sdk.mjs, when `make test-deps` installed it), tool calling on a scripted model
# (curl, SSE, tests/serve/sdk_tools.mjs), speculative decoding (tests/serve/spec.py: ngram-simple
# and an assistant, greedy answers equal to plain serving, one and 4 clients at once, draft
# counts), SIGTERM -> exit 0 (under ASan: no leak). Python and
# curl parts report themselves skipped when those are missing.
B=${B:-build}
G4="$B/g4"
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
pass=0; fail=0
check() { if [ "$2" = "$3" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1: expected [$2] got [$3]" >&2; fi; }
ok() { if "$@" >/dev/null 2>&1; then echo 1; else echo 0; fi; }
if ! command -v curl >/dev/null 2>&1; then echo "serve: skipped (no curl)"; echo "0 passed, 0 failed"; exit 0; fi
M="$tmp/m.gguf"
"$B/g4-mkmodel" "$M" --seed 7 --ctx 4096 >/dev/null 2>&1; check mkmodel 0 $?

# start: SERVER_PID and PORT from the "listening on" line (port 0 = any free port)
start() { # log, args...
    log=$1; shift
    : >"$log"
    "$G4" serve -m "${SRV_MODEL:-$M}" --port 0 "$@" 2>"$log" &
    SERVER_PID=$!
    pids="$pids $SERVER_PID"
    PORT=""
    for i in $(seq 1 100); do
        PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log")
        [ -n "$PORT" ] && break
        sleep 0.1
    done
}
stop() { # pid -> STOP_RC
    kill -TERM "$1"; wait "$1"; STOP_RC=$?
}

start "$tmp/s1.log" -np 4 -t 1 --timeout 2 --queue 16 --max-body 65536
check "listening line" 1 "$([ -n "$PORT" ] && echo 1 || echo 0)"
U="http://127.0.0.1:$PORT"
check health '"ok"' "$(curl -s "$U/health" | sed -n 's/.*"status":\("ok"\).*/\1/p')"

# /v1/completions == g4 run, greedy and seeded
for args in "--temp 0" "--temp 0.8 -s 42"; do
    temp=$(echo "$args" | sed -n 's/--temp \([0-9.]*\).*/\1/p'); seed=$(echo "$args" | sed -n 's/.*-s \([0-9]*\).*/\1/p')
    body="{\"prompt\":\"the quick brown fox\",\"max_tokens\":12,\"temperature\":$temp${seed:+,\"seed\":$seed}}"
    want=$("$G4" run -m "$M" -p "the quick brown fox" -n 12 -t 1 $args 2>/dev/null | python3 -c 'import sys,json; print(json.dumps(sys.stdin.read()[:-1]))' 2>/dev/null)
    got=$(curl -s "$U/v1/completions" -d "$body" | python3 -c 'import sys,json; print(json.dumps(json.load(sys.stdin)["choices"][0]["text"]))' 2>/dev/null)
    check "completion equals g4 run ($args)" "$want" "$got"
done

# raw SSE framing: data: lines, blank line after each, [DONE] last, chunked encoding
curl -sN -D "$tmp/h" "$U/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true,"seed":5,"stream_options":{"include_usage":true}}' >"$tmp/sse"
check "sse content-type" 1 "$(ok grep -qi '^content-type: text/event-stream' "$tmp/h")"
check "sse chunked" 1 "$(ok grep -qi '^transfer-encoding: chunked' "$tmp/h")"
check "sse every line data: or blank" 0 "$(grep -cv -e '^data: ' -e '^$' "$tmp/sse")"
check "sse ends with [DONE]" "data: [DONE]" "$(grep -v '^$' "$tmp/sse" | tail -n 1)"
check "sse usage chunk" 1 "$(ok grep -q '"choices":\[\],"usage"' "$tmp/sse")"
if command -v python3 >/dev/null 2>&1; then
    sc=$(python3 -c '
import json,sys
t="".join((json.loads(l[6:])["choices"] or [{"delta":{}}])[0]["delta"].get("content") or "" for l in open(sys.argv[1]) if l.startswith("data: {"))
print(json.dumps(t))' "$tmp/sse")
    nc=$(curl -s "$U/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"seed":5}' |
         python3 -c 'import sys,json; print(json.dumps(json.load(sys.stdin)["choices"][0]["message"]["content"]))')
    check "streamed text equals non-streamed" "$nc" "$sc"
    # a stop string cuts the text before it (and is not part of it); whole characters only
    check "stop string" ok "$(python3 - "$PORT" <<'PY'
import http.client, json, sys
def req(b):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
    c.request("POST", "/v1/completions", json.dumps(b)); r = json.loads(c.getresponse().read()); c.close(); return r["choices"][0]
full = req({"prompt": "a b c", "max_tokens": 16, "temperature": 0})["text"]
stop = full[4:6]
got = req({"prompt": "a b c", "max_tokens": 16, "temperature": 0, "stop": [stop, "zzzz"]})
want = full[:full.find(stop)]
print("ok" if got["finish_reason"] == "stop" and got["text"] == want else "text %r, want %r (stop %r)" % (got["text"], want, stop))
PY
)"
    # prefix reuse: the same prompt again reports cached tokens
    curl -s "$U/v1/completions" -d '{"prompt":"a long shared prefix of several words here","max_tokens":1,"temperature":0}' >/dev/null
    cached=$(curl -s "$U/v1/completions" -d '{"prompt":"a long shared prefix of several words here and more","max_tokens":2,"temperature":0}' |
             python3 -c 'import sys,json; print(json.load(sys.stdin)["usage"]["prompt_tokens_details"]["cached_tokens"] > 0)')
    check "prefix reuse" True "$cached"
    # prefix reuse at depth: a resent conversation after an answer longer than the rings'
    # slack (128) still reuses the first turn (a context checkpoint, or the cache itself)
    check "prefix reuse at depth" ok "$(python3 - "$PORT" <<'PY'
import http.client, json, sys
def req(b):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
    c.request("POST", "/v1/chat/completions", json.dumps(b)); r = json.loads(c.getresponse().read()); c.close(); return r
conv = [{"role": "user", "content": " ".join("w%d" % (i % 50) for i in range(300))}]
r1 = req({"messages": conv, "max_tokens": 200, "ignore_eos": True, "temperature": 0})
n1 = r1["usage"]["prompt_tokens"]
conv += [{"role": "assistant", "content": r1["choices"][0]["message"]["content"]}, {"role": "user", "content": "and then?"}]
r2 = req({"messages": conv, "max_tokens": 4, "temperature": 0})
c2 = r2["usage"]["prompt_tokens_details"]["cached_tokens"]
print("ok" if r1["usage"]["completion_tokens"] == 200 and c2 >= n1 - 3 and r2["usage"]["prompt_tokens"] > n1 else
      "first prompt %d tokens, second %d with %d cached" % (n1, r2["usage"]["prompt_tokens"], c2))
PY
)"
    # a client that goes away during a long prompt frees its slot at once (between steps, or
    # within a step through the abort callback) and the server keeps serving
    check "disconnect during a prompt" ok "$(python3 - "$PORT" <<'PY'
import http.client, json, socket, sys, time
port = int(sys.argv[1])
body = json.dumps({"prompt": " ".join("x%d" % (i % 90) for i in range(1200)), "max_tokens": 2000, "ignore_eos": True}).encode()
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
time.sleep(0.15)
s.close()
def health():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30); c.request("GET", "/health"); h = json.loads(c.getresponse().read()); c.close(); return h
t0 = time.time()
h = health()
while h["slots_processing"] and time.time() - t0 < 5:
    time.sleep(0.05); h = health()
print("ok" if not h["slots_processing"] else "a slot still busy after %.1f s: %r" % (time.time() - t0, h))
PY
)"
    python3 tests/serve/hostile.py "$PORT" 2 >"$tmp/hostile.out" 2>&1; rc=$?
    cat "$tmp/hostile.out" | grep -v 'passed, ' >&2
    p=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/hostile.out"); f=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/hostile.out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); [ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
    python3 tests/serve/load.py "$PORT" 16 8 >"$tmp/load.out" 2>&1; rc=$?
    grep -v 'passed, ' "$tmp/load.out" >&2
    p=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/load.out"); f=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/load.out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); [ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
else
    echo "serve: python3 missing: hostile catalogue and load test skipped" >&2
fi
if [ -f tests/serve/node_modules/openai/package.json ] && command -v node >/dev/null 2>&1; then
    node tests/serve/sdk.mjs "$U" >"$tmp/sdk.out" 2>&1; rc=$?
    grep -v 'passed, ' "$tmp/sdk.out" >&2
    p=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/sdk.out"); f=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/sdk.out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); [ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
else
    echo "serve: openai SDK test skipped (make test-deps installs tests/serve)" >&2
fi
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && [ -f tests/serve/node_modules/playwright-core/package.json ] && command -v node >/dev/null 2>&1; then
    node tests/serve/page.mjs "$U" "$B/serve-page.png" >"$tmp/page.out" 2>&1; rc=$?
    grep -a -v 'passed, ' "$tmp/page.out" >&2 # -a: a failure's detail may quote the random model's bytes
    p=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/page.out"); f=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/page.out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); [ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
else
    echo "serve: chat page test skipped (needs /usr/bin/chromium and make test-deps)" >&2
fi
curl -s "$U/metrics" >"$tmp/metrics"
check "metrics" 1 "$(grep -c '^g4_tokens_predicted_total ' "$tmp/metrics")"
check "metrics: rates of the last minute" 1 "$(awk '$1 == "g4_generated_tokens_per_second" && $2 > 0' "$tmp/metrics" | wc -l)"
check "metrics: checkpoints" 1 "$(awk '$1 == "g4_checkpoints_saved_total" && $2 > 0' "$tmp/metrics" | wc -l)"
check "metrics: aborted steps" 1 "$(grep -c '^g4_steps_aborted_total ' "$tmp/metrics")"
check "page" 1 "$(curl -s "$U/" | grep -c -i '<!doctype html>')"
stop "$SERVER_PID"; check "sigterm exit 0" 0 "$STOP_RC"
check "shutdown line" 1 "$(grep -c 'shutting down' "$tmp/s1.log")"
grep -q 'ERROR: \(Address\|Leak\)Sanitizer' "$tmp/s1.log" && { fail=$((fail + 1)); echo "FAIL sanitizer report:" >&2; head -n 30 "$tmp/s1.log" >&2; }

# API key from the environment; 401 without it; 503 + Retry-After when the only slot and queue are taken
G4_API_KEY=sekrit start "$tmp/s2.log" -np 1 -t 1 --queue 0
U="http://127.0.0.1:$PORT"
check "401 without key" 401 "$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/models")"
check "401 wrong key" 401 "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' "$U/v1/models")"
check "200 with key" 200 "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sekrit' "$U/v1/models")"
check "health without key" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$U/health")"
curl -sN -H 'Authorization: Bearer sekrit' "$U/v1/completions" -d '{"prompt":"x","max_tokens":3500,"ignore_eos":true,"stream":true}' >/dev/null &
long=$!
sleep 0.3
curl -s -D "$tmp/h503" -o "$tmp/b503" -H 'Authorization: Bearer sekrit' "$U/v1/completions" -d '{"prompt":"y","max_tokens":2}'
check "503 when busy" 1 "$(ok grep -q '^HTTP/1.1 503' "$tmp/h503")"
check "Retry-After" 1 "$(ok grep -qi '^retry-after: 1' "$tmp/h503")"
kill "$long" 2>/dev/null; wait "$long" 2>/dev/null
stop "$SERVER_PID"; check "sigterm exit 0 (2)" 0 "$STOP_RC"
grep -q 'ERROR: \(Address\|Leak\)Sanitizer' "$tmp/s2.log" && { fail=$((fail + 1)); echo "FAIL sanitizer report:" >&2; head -n 30 "$tmp/s2.log" >&2; }

# tool calling on a scripted model (g4-mkmodel --script: a test device that answers every
# prompt ending in a newline with the call below): a real tool_calls answer, raw SSE framing
# of the streamed call, tool_choice none, the openai SDK (tests/serve/sdk_tools.mjs)
MT="$tmp/tools.gguf"
"$B/g4-mkmodel" "$MT" --seed 7 --ctx 4096 --script '<|tool_call>call:sum{x:1}<tool_call|>' >/dev/null 2>&1; check "mkmodel --script" 0 $?
SRV_MODEL="$MT" start "$tmp/s3.log" -np 2 -t 1
U="http://127.0.0.1:$PORT"
TB='"tools":[{"type":"function","function":{"name":"sum","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}]'
if command -v python3 >/dev/null 2>&1; then
    got=$(curl -s "$U/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"add\"}],$TB,\"temperature\":0}" |
          python3 -c 'import sys,json; c=json.load(sys.stdin)["choices"][0]; t=c["message"]["tool_calls"][0]["function"]; print(c["finish_reason"], t["name"], json.loads(t["arguments"]), c["message"]["content"])')
    check "tool call" "tool_calls sum {'x': 1} None" "$got"
    curl -sN "$U/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"add\"}],$TB,\"temperature\":0,\"stream\":true}" >"$tmp/tsse"
    check "tool sse: data: lines" 0 "$(grep -cv -e '^data: ' -e '^$' "$tmp/tsse")"
    got=$(python3 -c '
import json,sys
ev=[json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {")]
calls=[t for e in ev for t in (e["choices"][0]["delta"].get("tool_calls") or [])]
fin=[e["choices"][0]["finish_reason"] for e in ev if e["choices"][0]["finish_reason"]]
print(len(calls), calls[0]["index"], calls[0]["function"]["name"], calls[0]["function"]["arguments"], fin)' "$tmp/tsse")
    check "tool sse: one call delta" "1 0 sum {\"x\":1} ['tool_calls']" "$got"
    check "tool sse ends with [DONE]" "data: [DONE]" "$(grep -v '^$' "$tmp/tsse" | tail -n 1)"
    got=$(curl -s "$U/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"add\"}],$TB,\"tool_choice\":\"none\",\"temperature\":0}" |
          python3 -c 'import sys,json; c=json.load(sys.stdin)["choices"][0]; print(c["finish_reason"], "tool_calls" in c["message"], c["message"]["content"])')
    check "tool_choice none" "stop False <|tool_call>call:sum{x:1}<tool_call|>" "$got"
fi
if [ -f tests/serve/node_modules/openai/package.json ] && command -v node >/dev/null 2>&1; then
    node tests/serve/sdk_tools.mjs "$U" >"$tmp/sdkt.out" 2>&1; rc=$?
    grep -v 'passed, ' "$tmp/sdkt.out" >&2
    p=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/sdkt.out"); f=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/sdkt.out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); [ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
else
    echo "serve: openai SDK tool test skipped (make test-deps installs tests/serve)" >&2
fi
stop "$SERVER_PID"; check "sigterm exit 0 (3)" 0 "$STOP_RC"
grep -q 'ERROR: \(Address\|Leak\)Sanitizer' "$tmp/s3.log" && { fail=$((fail + 1)); echo "FAIL sanitizer report:" >&2; head -n 30 "$tmp/s3.log" >&2; }

# speculative decoding: greedy answers equal the plain server's, for ngram-simple and the
# assistant (draft-mtp), one client at a time on the default kernels and 4 clients at once on
# 2 slots on the scalar table (batch-invariant: exact on every host); timings and /metrics
# report drafted and accepted tokens; a sampled request; a bad assistant and bad flags
MA="$tmp/a.gguf"
"$B/g4-mkmodel" "$MA" --assistant >/dev/null 2>&1; check "mkmodel --assistant" 0 $?
"$B/g4-mkmodel" "$tmp/a96.gguf" --assistant --embd 96 >/dev/null 2>&1
if command -v python3 >/dev/null 2>&1; then
    for isa in default scalar; do
        if [ "$isa" = scalar ]; then export G4_ISA=scalar; mode=conc; else mode=seq; fi
        start "$tmp/sp0.log" -np 2 -t 1; P0=$PORT; S0=$SERVER_PID
        start "$tmp/sp1.log" -np 2 -t 1 --spec-type ngram-simple --spec-ngram-simple-size-n 1 --spec-ngram-simple-size-m 4; P1=$PORT; S1=$SERVER_PID
        start "$tmp/sp2.log" -np 2 -t 1 -md "$MA" --draft-max 3; P2=$PORT; S2=$SERVER_PID
        unset G4_ISA
        check "spec startup line ($isa)" 1 "$(grep -c 'speculative draft-mtp' "$tmp/sp2.log")"
        python3 tests/serve/spec.py "$P0" "$P1" "$P2" "$mode" >"$tmp/spec.out" 2>&1; rc=$?
        grep -v 'passed, ' "$tmp/spec.out" >&2
        p=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/spec.out"); f=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/spec.out")
        pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); [ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
        for sp in "$P1" "$P2"; do
            curl -s "http://127.0.0.1:$sp/metrics" >"$tmp/smetrics"
            check "spec metrics: drafted > 0 ($isa)" 1 "$(awk '$1 == "g4_draft_tokens_total" && $2 > 0' "$tmp/smetrics" | wc -l)"
            check "spec metrics: accepted <= drafted ($isa)" 1 "$(awk '$1 == "g4_draft_tokens_total" {d=$2} $1 == "g4_draft_tokens_accepted_total" {a=$2} END {print (a <= d && a != "") ? 1 : 0}' "$tmp/smetrics")"
            got=$(curl -s "http://127.0.0.1:$sp/v1/completions" -d '{"prompt":"a b a b a b","max_tokens":24,"temperature":0.9,"seed":3,"ignore_eos":true}' |
                  python3 -c 'import sys,json; d=json.load(sys.stdin); print(d["usage"]["completion_tokens"], d["choices"][0]["finish_reason"])')
            check "spec sampled request ($isa)" "24 length" "$got"
        done
        for p in $S0 $S1 $S2; do stop "$p"; check "spec server sigterm exit 0 ($isa)" 0 "$STOP_RC"; done
        grep -q 'ERROR: \(Address\|Leak\)Sanitizer' "$tmp/sp0.log" "$tmp/sp1.log" "$tmp/sp2.log" &&
            { fail=$((fail + 1)); echo "FAIL sanitizer report:" >&2; cat "$tmp/sp1.log" "$tmp/sp2.log" | head -n 30 >&2; }
    done
fi
"$G4" serve -m "$M" -md "$tmp/a96.gguf" --port 0 >/dev/null 2>"$tmp/bad_md"; check "bad assistant: exit 1" 1 $?
check "bad assistant: one line" 1 "$(wc -l <"$tmp/bad_md" | tr -d ' ')"
check "bad assistant: names it" 1 "$(grep -c '^g4 serve: .*a96.gguf' "$tmp/bad_md")"
"$G4" serve -m "$M" --spec-type draft-mtp --port 0 >/dev/null 2>&1; check "draft-mtp without -md: exit 2" 2 $?
"$G4" serve -m "$M" --spec-type bogus --port 0 >/dev/null 2>&1; check "bad --spec-type: exit 2" 2 $?
"$G4" serve -m "$M" --draft-max 0 --port 0 >/dev/null 2>&1; check "bad --draft-max: exit 2" 2 $?
check "help lists the speculative flags" 1 "$("$G4" serve --help | grep -c -e '--spec-type')"

# usage errors
"$G4" serve >/dev/null 2>&1; check "no -m: exit 2" 2 $?
"$G4" serve -m "$M" --api-key x >/dev/null 2>&1; check "--api-key refused: exit 2" 2 $?
"$G4" serve -m "$tmp/none.gguf" --port 0 >/dev/null 2>&1; check "missing model: exit 1" 1 $?
"$G4" serve --help >/dev/null; check "help: exit 0" 0 $?
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
