#!/bin/sh
# tests/run.sh - runs build/g4-test and every tests/sh/*.sh, sums "N passed, M failed" lines.
# Each shell test prints its own "N passed, M failed" as its last line; the oracle tests' "pair: ..."
# (what they gate on) and "report: ..." lines (what they only report) are shown under their count.
B=${B:-build}
export B
total_p=0; total_f=0
run_one() {
    name=$1; shift
    out=$("$@" 2>"$B/test-$name.err"); rc=$?
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -E 's/^([0-9]+) passed.*/\1/'); f=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    [ -n "$p" ] || { p=0; f=1; }
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    printf '%-24s %s passed, %s failed\n' "$name" "$p" "$f"
    printf '%s\n' "$out" | grep -E '^(pair|report): ' | sed 's/^/    /'
    if [ "$f" -ne 0 ]; then sed 's/^/    /' "$B/test-$name.err" | tail -n 40; fi
    total_p=$((total_p + p)); total_f=$((total_f + f))
}
mkdir -p "$B"
run_one g4-test "$B/g4-test"
for t in tests/sh/*.sh; do
    [ -f "$t" ] || continue
    run_one "$(basename "$t" .sh)" sh "$t"
done
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
