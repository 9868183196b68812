#!/bin/sh
# serve.sh - g4 serve end to end on a tiny random model, loopback only: startup line, curl
# for raw SSE framing, /v1/completions equal to `g4 run` (greedy and seeded), stop strings,
# streamed text equal to the non-streamed, API key, 503 with Retry-After, the hostile
# catalogue (tests/serve/hostile.py), the load test (tests/serve/load.py), the openai SDK
# (tests/serve/sdk.mjs, when `make test-deps` installed it), SIGTERM -> exit 0 (under ASan:
# no leak). Python and curl parts report themselves skipped when those are missing.
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
    "$G4" serve -m "$M" --port 0 "$@" 2>"$log" &
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
    grep -v 'passed, ' "$tmp/page.out" >&2
    p=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/page.out"); f=$(sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/page.out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); [ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
else
    echo "serve: chat page test skipped (needs /usr/bin/chromium and make test-deps)" >&2
fi
check "metrics" 1 "$(curl -s "$U/metrics" | grep -c '^g4_tokens_predicted_total ')"
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

# usage errors
"$G4" serve >/dev/null 2>&1; check "no -m: exit 2" 2 $?
"$G4" serve -m "$M" --api-key x >/dev/null 2>&1; check "--api-key refused: exit 2" 2 $?
"$G4" serve -m "$tmp/none.gguf" --port 0 >/dev/null 2>&1; check "missing model: exit 1" 1 $?
"$G4" serve --help >/dev/null; check "help: exit 0" 0 $?
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
