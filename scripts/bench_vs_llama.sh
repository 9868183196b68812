#!/bin/sh
# bench_vs_llama.sh - `make bench-vs-llama`: g4 and llama.cpp (v0.5.0, the npm prebuilt) on the
# same random E2B-shaped Q4_K_M file, alternately, 1 and 2 threads, pp256 and tg64; prints
# both engines' medians and the ratios, then peak RSS while generating 128 tokens at -c 4096
# (1 thread), model open time and time to first token for a 512-token prompt, and the decode
# ceiling: the single-thread DRAM read rate (g4-bench-kern -D, before and after the rounds)
# divided by the bytes of weights a decoded token reads (g4 bench's decode_bytes).
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
"$B/g4-bench-kern" -D -r 5 >"$out/dram-0.txt" || true
r=1
while [ $r -le "$ROUNDS" ]; do
    echo "round $r: g4" >&2
    "$B/g4" bench -m "$M" -t "$THREADS" -p "$PP" -n "$TG" -r 3 -o json >"$out/g4-$r.json"
    echo "round $r: llama.cpp" >&2
    node tests/oracle/bench_llama.mjs -m "$M" -t "$THREADS" -p "$PP" -n "$TG" -r 3 >"$out/llama-$r.json"
    r=$((r + 1))
done
"$B/g4-bench-kern" -D -r 5 >"$out/dram-1.txt" || true
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
// decode ceiling: DRAM read rate (mean of the runs before and after) / weight bytes per token
const dram = ["dram-0.txt", "dram-1.txt"].map(f => rd(f).match(/DRAM read[^:]*: ([\d.]+) GB\/s median/)).filter(Boolean).map(m => Number(m[1]));
const dbytes = g4.length ? g4[0].decode_bytes : NaN;
if (dram.length && dbytes > 0) {
    const bw = dram.reduce((a, b) => a + b, 0) / dram.length, ceil = bw * 1e9 / dbytes;
    const tg1 = med(g4.filter(r => r.n_threads === 1 && r.n_gen > 0).map(r => r.avg_ts));
    console.log(`\ndecode ceiling, 1 thread: DRAM read ${dram.map(x => x.toFixed(1)).join(" / ")} GB/s (before / after) / ` +
        `${(dbytes / 1e9).toFixed(3)} GB of weights per token = ${ceil.toFixed(2)} t/s; g4 tg at 1 thread: ` +
        `${isNaN(tg1) ? "not run" : (100 * tg1 / ceil).toFixed(0) + "% of it"}`);
}
const rss = f => { const m = rd(f).match(/peak_rss_kib (\d+)/); return m ? Number(m[1]) / 1048576 : NaN; };
console.log(`\npeak RSS, 128 tokens at -c 4096, 1 thread: g4 ${rss("g4-rss.txt").toFixed(2)} GiB, llama.cpp (node process) ${rss("llama-rss.txt").toFixed(2)} GiB`);
const t = rd("g4-ttft.txt");
const load = t.match(/load ([\d.]+) s/), pp = t.match(/prompt (\d+) tokens in ([\d.]+) s/);
if (load) console.log(`g4 model open: ${load[1]} s`);
if (pp) console.log(`g4 time to first token, ${pp[1]}-token prompt: ${pp[2]} s`);
JS
date -u +"measured %Y-%m-%d %H:%M UTC"
