#!/bin/sh
# bench_vs_llama.sh - `make bench-vs-llama`: g4 and llama.cpp (v0.5.0, the npm prebuilt) on the
# same random E2B-shaped Q4_K_M file, alternately, 1 and 2 threads, pp256 and tg64; prints
# both engines' medians and the ratios, then peak RSS while generating 128 tokens at -c 4096
# (1 thread), model open time and time to first token for a 512-token prompt.
# A benchmark, not a test: numbers vary with the machine's load; run it on a quiet machine.
#   sh scripts/bench_vs_llama.sh [BUILD_DIR] [MODEL] [ROUNDS]
B=${1:-build}
M=${2:-$B/bench-e2b-q4_k_m.gguf}
ROUNDS=${3:-3}
PP=${PP:-256}; TG=${TG:-64}; THREADS=${THREADS:-1,2}
set -e
[ -f "$M" ] || "$B/g4-mkmodel" "$M" --e2b --q4_k_m --fast
[ -d tests/oracle/node_modules/node-llama-cpp ] || { echo "run 'make test-deps' first (llama.cpp from npm)" >&2; exit 1; }
out="$B/bench-vs-llama"; rm -rf "$out"; mkdir -p "$out"
echo "model: $M ($(du -h "$M" | cut -f1)), pp$PP tg$TG, threads $THREADS, $ROUNDS alternating rounds" >&2
cat "$M" >/dev/null # page the file in once for both engines
r=1
while [ $r -le "$ROUNDS" ]; do
    echo "round $r: g4" >&2
    "$B/g4" bench -m "$M" -t "$THREADS" -p "$PP" -n "$TG" -r 3 -o json >"$out/g4-$r.json"
    echo "round $r: llama.cpp" >&2
    node tests/oracle/bench_llama.mjs -m "$M" -t "$THREADS" -p "$PP" -n "$TG" -r 3 >"$out/llama-$r.json"
    r=$((r + 1))
done
# peak RSS, open time, time to first token (512-token prompt), 1 thread
ids=$(seq -s, 100 611)
python3 scripts/rss.py "$B/g4" run -m "$M" -p "$(seq -s, 100 163)" --ids -n 128 -c 4096 -t 1 --temp 0 2>"$out/g4-rss.txt" || true
python3 scripts/rss.py node tests/oracle/oracle.mjs run -m "$M" --ids "$(seq -s, 100 163)" -n 128 -c 4096 -t 1 --kv f16 \
    2>"$out/llama-rss.txt" || true
"$B/g4" run -m "$M" -p "$ids" --ids -n 1 -c 4096 -t 1 --temp 0 -v >/dev/null 2>"$out/g4-ttft.txt" || true
node - "$out" <<'JS'
const fs = require("fs"), dir = process.argv[2];
// one JSON array per round and engine (g4 bench -o json may span several lines)
const rows = pre => fs.readdirSync(dir).filter(f => f.startsWith(pre + "-") && f.endsWith(".json"))
    .flatMap(f => { try { return JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")); } catch { return []; } });
const g4 = rows("g4"), ll = rows("llama");
const med = a => { const s = [...a].sort((x, y) => x - y); return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN; };
const key = r => `${r.n_threads}|${r.n_prompt ? "pp" + r.n_prompt : "tg" + r.n_gen}`;
const groups = {};
for (const [eng, rs] of [["g4", g4], ["llama", ll]]) for (const r of rs) ((groups[key(r)] ??= {g4: [], llama: []})[eng]).push(r.avg_ts);
console.log(`| threads | test | g4 t/s (median) | llama.cpp t/s (median) | ratio |`);
console.log(`|---:|---|---:|---:|---:|`);
for (const [k, v] of Object.entries(groups)) {
    const [t, test] = k.split("|"), a = med(v.g4), b = med(v.llama);
    console.log(`| ${t} | ${test} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(a / b).toFixed(2)}x |`);
}
const rd = f => { try { return fs.readFileSync(`${dir}/${f}`, "utf8"); } catch { return ""; } };
const rss = f => { const m = rd(f).match(/peak_rss_kib (\d+)/); return m ? Number(m[1]) / 1048576 : NaN; };
console.log(`\npeak RSS, 128 tokens at -c 4096, 1 thread: g4 ${rss("g4-rss.txt").toFixed(2)} GiB, llama.cpp (node process) ${rss("llama-rss.txt").toFixed(2)} GiB`);
const t = rd("g4-ttft.txt");
const load = t.match(/load ([\d.]+) s/), pp = t.match(/prompt (\d+) tokens in ([\d.]+) s/);
if (load) console.log(`g4 model open: ${load[1]} s`);
if (pp) console.log(`g4 time to first token, ${pp[1]}-token prompt: ${pp[2]} s`);
JS
date -u +"measured %Y-%m-%d %H:%M UTC"
