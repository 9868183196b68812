#!/bin/sh
# bench_vs_llama.sh - `make bench-vs-llama`: g4 against llama.cpp v0.5.0 built natively on this
# machine (scripts/llama_native.sh: from the source bundle in the npm package, cmake defaults,
# -march=native; LLAMA_NATIVE=DIR reuses a build), the strongest llama.cpp a user of this host
# runs. Same random E2B-shaped Q4_K_M file, same threads (1 and 2), pp256 and tg64: `g4 bench`
# and llama.cpp's own `llama-bench` in alternating rounds, each -r 3; prints both engines'
# medians over the rounds and the ratios, every round's figures, then peak RSS while generating
# 128 tokens at -c 4096 on 1 thread (g4 run vs llama-batched-bench, both F16 KV), g4's model open
# time and time to first token for a 512-token prompt, and the decode ceilings: the 1- and
# 2-thread DRAM read rates (g4-bench-kern -D, before the first round and after every round:
# the faster of a one-stream load-sum and 8 prefetched streams on huge pages) divided by the
# bytes of weights a decoded token reads (g4 bench's decode_bytes); each engine's decode as a
# share of the mean of all probes, and each round's as a share of the two probes around it.
# The header says which g4 table ran and which llama.cpp (native build, commit, its CPU feature
# line from llama_print_system_info).
# Options (environment): PP, TG, THREADS (1,2); DEPTH=LIST (both engines' -d / --n-depth: each
# test runs after LIST tokens are in the cache, e.g. DEPTH=0,4096; llama.cpp fills the depth
# before every repetition, so this is slow); REPS (3, repetitions per round); LLAMA_NPM=1 adds the npm prebuilt (through
# tests/oracle/bench_llama.mjs) as a third column, for reference only; BATCHED=1 adds
# llama-batched-bench -npp 128 -ntg 32 -npl 1,4,8 -t 2 (llama.cpp's aggregate decode over
# parallel sequences).
# A benchmark, not a test: numbers vary with the machine's load; run it on a quiet machine.
#   sh scripts/bench_vs_llama.sh [BUILD_DIR] [MODEL] [ROUNDS]
B=${1:-build}
M=${2:-$B/bench-e2b-q4_k_m.gguf}
ROUNDS=${3:-3}
PP=${PP:-256}; TG=${TG:-64}; THREADS=${THREADS:-1,2}; REPS=${REPS:-3}
DARG=; [ -n "$DEPTH" ] && DARG="-d $DEPTH"
set -e
command -v python3 >/dev/null 2>&1 || { echo "bench_vs_llama: needs python3" >&2; exit 1; }
LB=$(sh scripts/llama_native.sh "$B")
[ -f "$M" ] || "$B/g4-mkmodel" "$M" --e2b --q4_k_m --fast
out="$B/bench-vs-llama"; rm -rf "$out"; mkdir -p "$out"

# which engines: g4's table (g4 bench names it), the native llama.cpp's commit and CPU features
LIBLLAMA=$(ls "$LB"/libllama.so "$LB"/../lib/libllama.so 2>/dev/null | head -n 1 || true)
sysinfo=$(python3 -c 'import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); l.llama_print_system_info.restype = ctypes.c_char_p
print(l.llama_print_system_info().decode().strip())' "$LIBLLAMA" 2>/dev/null || echo "unknown")
version=$("$LB/llama-bench" --version 2>&1 | head -n 1)
echo "model: $M ($(du -h "$M" | cut -f1)), pp$PP tg$TG${DEPTH:+ at depths $DEPTH}, threads $THREADS, $ROUNDS alternating rounds of -r $REPS"
echo "llama.cpp: native build in $LB ($version); $sysinfo"
cpu() { sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo | head -n 1; }
isa=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|avx_vnni' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "host: $(cpu 'model name') (family $(cpu 'cpu family') model $(cpu model)), $(nproc) CPUs, ${isa% }"

cat "$M" >/dev/null # page the file in once for both engines
"$B/g4-bench-kern" -D -r 5 >"$out/dram-0.txt" || true
r=1
while [ $r -le "$ROUNDS" ]; do
    echo "round $r: g4" >&2
    "$B/g4" bench -m "$M" -t "$THREADS" -p "$PP" -n "$TG" $DARG -r "$REPS" -o json >"$out/g4-$r.json" 2>"$out/g4-$r.err"
    echo "round $r: llama.cpp (native llama-bench)" >&2
    "$LB/llama-bench" -m "$M" -t "$THREADS" -p "$PP" -n "$TG" $DARG -r "$REPS" -o json >"$out/llama-$r.json" 2>"$out/llama-$r.err"
    if [ -n "$LLAMA_NPM" ]; then
        echo "round $r: llama.cpp (npm prebuilt)" >&2
        node tests/oracle/bench_llama.mjs -m "$M" -t "$THREADS" -p "$PP" -n "$TG" -r 3 >"$out/npm-$r.json" 2>"$out/npm-$r.err"
    fi
    "$B/g4-bench-kern" -D -r 5 >"$out/dram-$r.txt" || true # after each round: its ceiling is that of the probes around it
    r=$((r + 1))
done
# peak RSS, 64-token prompt + 128 generated at -c 4096, 1 thread; g4 open time and time to first token
python3 scripts/rss.py "$B/g4" run -m "$M" -p "$(seq -s, 100 163)" --ids -n 128 -c 4096 -t 1 --temp 0 2>"$out/g4-rss.txt" >/dev/null || true
python3 scripts/rss.py "$LB/llama-batched-bench" -m "$M" -c 4096 -npp 64 -ntg 128 -npl 1 -t 1 2>"$out/llama-rss.txt" >/dev/null || true
"$B/g4" run -m "$M" -p "$(seq -s, 100 611)" --ids -n 1 -c 4096 -t 1 --temp 0 -v >/dev/null 2>"$out/g4-ttft.txt" || true
if [ -n "$BATCHED" ]; then
    "$LB/llama-batched-bench" -m "$M" -c 4096 -npp 128 -ntg 32 -npl 1,4,8 -t 2 >"$out/batched.txt" 2>"$out/batched.err" || true
fi

python3 - "$out" <<'PY'
import glob, json, os, re, statistics, sys
d = sys.argv[1]
def rows(pre):
    out = []
    for f in sorted(glob.glob(os.path.join(d, pre + "-*.json"))):
        try: out += [dict(r, _round=int(re.search(r"-(\d+)\.json$", f).group(1))) for r in json.load(open(f))]
        except Exception: pass
    return out
eng = {"g4": rows("g4"), "llama": rows("llama"), "npm": rows("npm")}
key = lambda r: (r["n_threads"], ("pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]) +
                 (" @ d%d" % r["n_depth"] if r.get("n_depth") else ""))
tables = sorted({r.get("kernels", "?") for r in eng["g4"]})
print("g4: kernel table %s" % ", ".join(tables))
groups = {}
for e, rs in eng.items():
    for r in rs: groups.setdefault(key(r), {}).setdefault(e, []).append(r)
npm = bool(eng["npm"])
print("\n| threads | test | g4 t/s | llama.cpp native t/s | g4 / native |" + (" npm prebuilt t/s | g4 / npm |" if npm else ""))
print("|---:|---|---:|---:|---:|" + ("---:|---:|" if npm else ""))
med = lambda v: statistics.median(v) if v else float("nan")
for k in sorted(groups):
    g = med([r["avg_ts"] for r in groups[k].get("g4", [])]); l = med([r["avg_ts"] for r in groups[k].get("llama", [])])
    line = "| %d | %s | %.2f | %.2f | %.2fx |" % (k[0], k[1], g, l, g / l if l else float("nan"))
    if npm:
        n = med([r["avg_ts"] for r in groups[k].get("npm", [])])
        line += " %.2f | %.2fx |" % (n, g / n if n else float("nan"))
    print(line)
print("\nper round (g4 / llama.cpp native):")
for k in sorted(groups):
    g = {r["_round"]: r["avg_ts"] for r in groups[k].get("g4", [])}; l = {r["_round"]: r["avg_ts"] for r in groups[k].get("llama", [])}
    print("  %d thread%s %s: %s" % (k[0], "" if k[0] == 1 else "s", k[1],
          ", ".join("%.2f/%.2f" % (g.get(i, float("nan")), l.get(i, float("nan"))) for i in sorted(set(g) | set(l)))))
def rd(f):
    try: return open(os.path.join(d, f)).read()
    except OSError: return ""
dbytes = eng["g4"][0].get("decode_bytes", 0) if eng["g4"] else 0
n_rounds = max([r["_round"] for r in eng["g4"]] or [0])
for t, label in ((1, "1 thread"), (2, "2 threads")):
    probe = {}
    for i in range(n_rounds + 1):
        m = re.search(r"DRAM read, %s[^:]*: ([\d.]+) GB/s median" % label, rd("dram-%d.txt" % i))
        if m: probe[i] = float(m.group(1))
    bw = [probe[i] for i in sorted(probe)]
    if not bw or dbytes <= 0: continue
    ceil = statistics.mean(bw) * 1e9 / dbytes
    tg = [med([r["avg_ts"] for r in groups[k].get(e, [])]) for k in groups if k[0] == t and k[1].startswith("tg") and "@" not in k[1] for e in ("g4", "llama")]
    share = "" if len(tg) < 2 else "; tg at %s: g4 %.0f%%, llama.cpp native %.0f%% of it" % (label, 100 * tg[0] / ceil, 100 * tg[1] / ceil)
    print("\ndecode ceiling, %s: DRAM read %s GB/s (before round 1, after each round) / %.3f GB of weights per token = %.2f t/s%s" %
          (label, " / ".join("%.1f" % x for x in bw), dbytes / 1e9, ceil, share))
    # each round against the probes just before and after it (the host's DRAM rate drifts by
    # tens of percent within minutes: the nearest probes are the fairest ceiling for a round)
    per = {"g4": [], "llama": []}
    for k in groups:
        if k[0] != t or not k[1].startswith("tg") or "@" in k[1]: continue
        for e in per:
            for r in groups[k].get(e, []):
                i = r["_round"]
                if i - 1 in probe and i in probe:
                    per[e].append(100 * r["avg_ts"] * dbytes / 1e9 / ((probe[i - 1] + probe[i]) / 2))
    if per["g4"] and per["llama"]:
        print("  each round against its own probes: g4 %s%% (median %.0f%%), llama.cpp native %s%% (median %.0f%%)" %
              (" / ".join("%.0f" % x for x in per["g4"]), med(per["g4"]), " / ".join("%.0f" % x for x in per["llama"]), med(per["llama"])))
rss = lambda f: (lambda m: int(m.group(1)) / 1048576 if m else float("nan"))(re.search(r"peak_rss_kib (\d+)", rd(f)))
print("\npeak RSS, 64 + 128 tokens at -c 4096, 1 thread, F16 KV: g4 %.2f GiB, llama.cpp native (llama-batched-bench) %.2f GiB" %
      (rss("g4-rss.txt"), rss("llama-rss.txt")))
t = rd("g4-ttft.txt")
m = re.search(r"load ([\d.]+) s", t)
if m: print("g4 model open: %s s" % m.group(1))
m = re.search(r"prompt (\d+) tokens in ([\d.]+) s", t)
if m: print("g4 time to first token, %s-token prompt: %s s" % (m.group(1), m.group(2)))
b = rd("batched.txt")
if b: print("\nllama-batched-bench -npp 128 -ntg 32 -npl 1,4,8 -t 2 (native):\n" + b.strip())
PY
date -u +"measured %Y-%m-%d %H:%M UTC"
