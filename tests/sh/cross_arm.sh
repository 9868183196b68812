#!/bin/sh
# cross_arm.sh - the board build: `make CROSS=aarch64-linux-gnu-` gives static aarch64
# programs (build/aarch64-linux-gnu/g4, simple), and the demo runs on them under qemu-aarch64
# (-cpu cortex-a76: NEON, dotprod, fp16, no SVE; the neon kernel table; and -cpu max, with SVE
# and i8mm, for a Q4_K model on the i8mm table): g4 info, g4 run and
# examples/simple.c on a tiny random model (tools/demo.sh's), and the same run forced onto
# the scalar table. Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user; without
# them (and in the sanitizer run: nothing here is sanitized) it reports a skip.
B=${B:-build}
skip() { echo "cross_arm: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
fail() { echo "cross_arm: $1" >&2; echo "0 passed, 1 failed"; exit 1; }
[ -z "$G4_SANITIZED" ] || skip "sanitizer run"
[ -x "$B/g4-mkmodel" ] || fail "$B/g4-mkmodel missing (run make)"
. tests/sh/cross_arm.inc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 failn=0
check() { if [ "$1" = 0 ]; then pass=$((pass + 1)); else failn=$((failn + 1)); echo "FAIL $2" >&2; fi; }
Q() { "$QEMU" -cpu cortex-a76 "$@"; }

file "$XB/g4" 2>/dev/null | grep -q 'statically linked' || ! command -v file >/dev/null 2>&1
check $? "$XB/g4 is not statically linked"
"$B/g4-mkmodel" "$tmp/demo.gguf" --type q8_0 --ple 32 >/dev/null 2>&1
check $? "g4-mkmodel"
Q "$XB/g4" info -m "$tmp/demo.gguf" >"$tmp/info" 2>&1 && grep -q "gemma4" "$tmp/info"
check $? "g4 info under qemu: $(tail -n 1 "$tmp/info")"
Q "$XB/g4" run -m "$tmp/demo.gguf" -p "The capital of France is" -n 24 --temp 0 -v >"$tmp/run" 2>"$tmp/run.err" && [ -s "$tmp/run" ]
check $? "g4 run under qemu: $(tail -n 1 "$tmp/run.err")"
grep -q "neon" "$tmp/run.err"
check $? "g4 run under qemu did not use the neon table: $(grep -m1 -i kern "$tmp/run.err")"
# a core with SVE and i8mm (qemu -cpu max): the i8mm table, its smmla Q4_K tile in the prompt
"$B/g4-mkmodel" "$tmp/demo4.gguf" --type q4_k --embd 256 --heads 4 --head-dim 64 --head-dim-full 128 --ff 512 --ff-shared 768 --ple 256 >/dev/null 2>&1
check $? "g4-mkmodel q4_k"
"$QEMU" -cpu max "$XB/g4" run -m "$tmp/demo4.gguf" -p "The capital of France is a city" -n 8 --temp 0 -v >"$tmp/run4" 2>"$tmp/run4.err" &&
    [ -s "$tmp/run4" ] && grep -q "kernels i8mm" "$tmp/run4.err"
check $? "g4 run under qemu -cpu max did not run on the i8mm table: $(grep -m1 -i kern "$tmp/run4.err"; tail -n 1 "$tmp/run4.err")"
G4_ISA=scalar Q "$XB/g4" run -m "$tmp/demo.gguf" -p "The capital of France is" -n 8 --temp 0 >"$tmp/runs" 2>&1
check $? "g4 run (scalar table) under qemu: $(tail -n 1 "$tmp/runs")"
Q "$XB/simple" "$tmp/demo.gguf" "hello world" 16 >"$tmp/simple" 2>&1 && [ -s "$tmp/simple" ]
check $? "examples/simple under qemu: $(tail -n 1 "$tmp/simple")"
echo "$pass passed, $failn failed"
[ "$failn" -eq 0 ]
