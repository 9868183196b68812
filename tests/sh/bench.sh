#!/bin/sh
# bench.sh - `g4 bench` on tiny random models: -o json parses and holds the fields automated
# checks read (n_prompt, n_gen, n_threads, avg_ts, stddev_ts; a pp row has n_gen 0, a tg row
# n_prompt 0), every combination of the comma lists runs, the rates are positive and finite,
# the Markdown table has llama-bench's columns, and bad flags exit 2 / bad files exit 1.
# The JSON check uses python3 (or node); without either only the shell checks run.
B=${B:-build}
G4=${G4:-$B/g4}
MK=$B/g4-mkmodel
pass=0; fail=0
ok() { pass=$((pass + 1)); [ -n "$VERBOSE" ] && echo "ok   $*"; return 0; }
bad() { fail=$((fail + 1)); echo "FAIL $*" >&2; }
if [ ! -x "$G4" ] || [ ! -x "$MK" ]; then echo "bench: $G4 or $MK missing (run make)" >&2; echo "0 passed, 1 failed"; exit 1; fi
tmp=$(mktemp -d)
[ -z "$KEEP" ] && trap 'rm -rf "$tmp"' EXIT

"$MK" "$tmp/m.gguf" --layers 4 --full-every 2 --shared 2 --embd 64 --heads 2 --head-dim 32 --head-dim-full 64 \
    --ff 64 --ple 32 --vocab 400 || { echo "0 passed, 1 failed"; exit 1; }
"$MK" "$tmp/q.gguf" --layers 4 --full-every 2 --shared 2 --embd 64 --heads 2 --head-dim 32 --head-dim-full 64 \
    --ff 64 --ple 32 --vocab 400 --type q8_0 || { echo "0 passed, 1 failed"; exit 1; }

# JSON: 2 models x 2 thread counts x (2 pp + 1 tg) = 12 rows
if "$G4" bench -m "$tmp/m.gguf" -m "$tmp/q.gguf" -t 1,2 -p 16,32 -n 8 -r 3 -o json >"$tmp/b.json" 2>"$tmp/b.err"; then
    ok "bench -o json runs"
else bad "bench -o json: exit $?: $(tail -n 2 "$tmp/b.err")"; fi
grep -q "g4 bench: loaded" "$tmp/b.err" && grep -q "g4 bench: 12 tests" "$tmp/b.err" && ok "load timing and summary on stderr" \
    || bad "stderr lacks load timing / summary: $(tail -n 3 "$tmp/b.err")"

CHECK='
import json, math, sys
rows = json.load(open(sys.argv[1]))
assert isinstance(rows, list) and len(rows) == 12, "want 12 rows, got %d" % len(rows)
for r in rows:
    for k in ("n_prompt", "n_gen", "n_threads", "avg_ts", "stddev_ts", "model_filename", "test"):
        assert k in r, "missing " + k
    assert (r["n_prompt"] > 0) != (r["n_gen"] > 0), "a row is pp or tg: %r" % r
    assert r["n_gen"] == 0 if r["n_prompt"] else r["n_prompt"] == 0
    assert r["avg_ts"] > 0 and math.isfinite(r["avg_ts"]), r
    assert r["stddev_ts"] >= 0 and math.isfinite(r["stddev_ts"]), r
    assert len(r["samples_ts"]) == 3 and all(x > 0 for x in r["samples_ts"])
    assert r["n_threads"] in (1, 2)
combos = sorted((r["model_filename"][-6:], r["n_threads"], r["n_prompt"], r["n_gen"]) for r in rows)
assert len(set(combos)) == 12, combos
print("ok")
'
if command -v python3 >/dev/null 2>&1; then
    if python3 -c "$CHECK" "$tmp/b.json" >"$tmp/c.out" 2>&1; then ok "json fields, values, combinations"
    else bad "json check: $(tail -n 3 "$tmp/c.out")"; fi
elif command -v node >/dev/null 2>&1; then
    cat >"$tmp/c.mjs" <<'EOF'
import fs from "node:fs";
const rows = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
let bad = rows.length !== 12 ? "rows " + rows.length : "";
for (const r of rows) {
    for (const k of ["n_prompt", "n_gen", "n_threads", "avg_ts", "stddev_ts"]) if (!(k in r)) bad = "missing " + k;
    if ((r.n_prompt > 0) === (r.n_gen > 0)) bad = "pp/tg row " + JSON.stringify(r);
    if (!(r.avg_ts > 0) || !(r.stddev_ts >= 0)) bad = "values " + JSON.stringify(r);
}
console.log(bad || "ok");
EOF
    [ "$(node "$tmp/c.mjs" "$tmp/b.json")" = ok ] && ok "json fields, values, combinations (node)" || bad "json check (node): $(node "$tmp/c.mjs" "$tmp/b.json")"
else echo "bench: no python3 or node: JSON parse check skipped" >&2; fi

# Markdown table
if "$G4" bench -m "$tmp/m.gguf" -t 1 -p 16 -n 4 -r 2 >"$tmp/b.md" 2>"$tmp/b.err"; then ok "bench md runs"; else bad "bench md: $(tail -n 2 "$tmp/b.err")"; fi
head -n 1 "$tmp/b.md" | grep -Eq '^\| model +\| +size \| +params \| threads \| +test \| +t/s \|$' && ok "md header" || bad "md header: $(head -n 1 "$tmp/b.md")"
[ "$(grep -c '^| gemma4' "$tmp/b.md")" = 2 ] && ok "md rows" || bad "md rows: $(cat "$tmp/b.md")"
grep -Eq '\| +pp16 \| +[0-9]+\.[0-9]{2} ± [0-9]+\.[0-9]{2} \|$' "$tmp/b.md" && grep -Eq '\| +tg4 \|' "$tmp/b.md" \
    && ok "md pp/tg cells" || bad "md cells: $(cat "$tmp/b.md")"
[ -n "$(grep -v '^|' "$tmp/b.md")" ] && bad "stdout holds more than the table" || ok "stdout is data only"
# -p 0: tg only
"$G4" bench -m "$tmp/m.gguf" -t 1 -p 0 -n 4 -r 1 -o json >"$tmp/tg.json" 2>/dev/null && ! grep -q '"n_prompt": [1-9]' "$tmp/tg.json" \
    && grep -q '"n_gen": 4' "$tmp/tg.json" && ok "-p 0 runs tg only" || bad "-p 0: $(cat "$tmp/tg.json")"

# usage errors exit 2 with one line; file errors exit 1
expect() { # code what args...
    code=$1 what=$2; shift 2
    "$G4" bench "$@" >"$tmp/e.out" 2>"$tmp/e.err"; rc=$?
    if [ "$rc" -eq "$code" ] && [ -s "$tmp/e.err" ] && [ ! -s "$tmp/e.out" -o "$code" = 1 ]; then ok "$what"
    else bad "$what: exit $rc (want $code): $(head -n 2 "$tmp/e.err")"; fi
}
M="-m $tmp/m.gguf"
expect 2 "no model"
expect 2 "unknown flag" $M --bogus
expect 2 "threads 0" $M -t 0
expect 2 "threads negative" $M -t -2
expect 2 "threads NaN" $M -t nan
expect 2 "threads empty item" $M -t 1,,2
expect 2 "threads trailing comma" $M -t 1,
expect 2 "prompt negative" $M -p -5
expect 2 "prompt not a number" $M -p 1e3
expect 2 "gen too large" $M -n 99999999999
expect 2 "reps 0" $M -r 0
expect 2 "reps missing value" $M -r
expect 2 "bad output" $M -o xml
expect 2 "bad cache type" $M -ctk q4_0
expect 2 "nothing to run" $M -p 0 -n 0
expect 1 "missing model" -m "$tmp/none.gguf" -p 8 -n 2 -r 1
printf 'GGUF\003\000\000\000garbage' >"$tmp/bad.gguf"
expect 1 "malformed model" -m "$tmp/bad.gguf" -p 8 -n 2 -r 1
"$G4" bench -h >"$tmp/h.out" 2>&1 && grep -q "usage: g4 bench" "$tmp/h.out" && ok "-h exits 0" || bad "-h"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
