#!/bin/sh
# oracle_kern_neon.sh - our NEON kernel table against llama.cpp's own arm64 CPU backend, bit
# for bit, under qemu-aarch64 (the arm64 sibling of oracle_kern.sh).
#
# tools/g4-ggml-kern.c is cross-compiled for aarch64 (dynamic: it dlopens node-llama-cpp's
# prebuilt libggml-base.so and libggml-cpu-armv8.2_2.so, the variant llama.cpp loads on a
# dotprod + fp16 core without SVE) and run with `qemu-aarch64 -cpu max -L <arm64 sysroot>`.
# Per weight type it compares our dequantization, our activation quantizer (NEON table) and
# our matmul against ggml's vec_dot, and runs every type through a one-op ggml graph (1, 5 and
# 8 tokens) with the weight in the plain CPU buffer (what ggml does with a weight it does not
# repack, e.g. the tied output embedding: vec_dot, or llamafile's tinyBLAS), and the types
# llama.cpp's ARM build repacks (q4_0, iq4_nl, q8_0 4x4; q4_K, q5_K, q6_K 8x4) with it in the
# CPU_REPACK buffer (gemm for 4 of every 4 columns, gemv for the rest). It also checks the
# tool's emulation of each ARM kernel's float order (arm_vec_dot, arm_tinyblas, arm_repacked)
# against the library: the spec kern_neon*.c follows.
#
# Gated, for the armv8.2_2 library the neon table follows (kern_neon.c): dequantization of
# every type, Q8_0/Q8_1/Q8_K activations, every emulation, and every matmul: one plain column
# against vec_dot, 5 and 8 columns through the plain graph (tinyBLAS or vec_dot) and through the
# repacked one (gemm + gemv), each column with the kernel the table's pick gives for the op;
# lengths include odd block counts (vec_dot's scalar tails) and float rows with vec_dot tails.
#
# Runs in `make test` when its packages are present (.ci/run installs them: qemu-user,
# gcc-aarch64-linux-gnu, and `make test-deps` unpacks the arm64 prebuilt of node-llama-cpp,
# same version as the x64 one in tests/oracle (3.22.1), into build/arm64-llama); without them,
# and in the sanitizer run (it cross-compiles: nothing there is sanitized), it reports a skip.
# About 5 minutes of one core under qemu. By hand:
#   mkdir -p build/arm64-llama && cd build/arm64-llama &&
#   npm pack @node-llama-cpp/linux-arm64@3.22.1 && tar xzf node-llama-cpp-linux-arm64-3.22.1.tgz
# Also needs the arm64 libstdc++/libgcc_s (Debian: libstdc++6-arm64-cross, libgcc-s1-arm64-cross,
# pulled in by gcc-aarch64-linux-gnu; sysroot /usr/aarch64-linux-gnu).
# Three runs by default: the neon table against libggml-cpu-armv8.2_2.so (qemu -cpu max), and
# the i8mm table (kern_i8mm.c) against libggml-cpu-armv8.6_1.so (SVE + i8mm, what llama.cpp
# loads on an SVE core with i8mm) at 128-bit and 256-bit SVE (-cpu
# max,sve-default-vector-length=16 / 32; qemu's default is 512). For armv8.6_1 the tool emulates the i8mm repack kernels (q4_0/q8_0 4x8 or, at
# 256-bit SVE, q4_0 8x8; q4_K/q5_K/q6_K 8x8) and the i8mm table is gated on everything,
# including the SVE vec_dot of q8_0, q4_0 and q2_K and the i8mm vec_dot (2 rows at a time, when
# llama.cpp's row and column chunks are even) of q8_0, q4_0, q4_1 and q4_K (kern_i8mm_vd.c);
# the tool does not emulate those two orders, so its emulation check of them is reported, not
# gated. Its F32 and F16 kernels are that library's SVE vec_dot (no tinyBLAS there), gated.
# At 512 bits (by hand; no SVE core with i8mm is known to us there) the library's own q4_K / q6_K two-row
# vec_dot takes other lanes and differs. G4_ARM64_LIBDIR overrides build/arm64-llama/package/bins/linux-arm64.
# G4_ARM64_CPU_LIB runs one library only, against G4_ARM64_TABLE (default neon) under
# G4_QEMU_CPU (default max): e.g. the i8mm table at 256-bit SVE with
# G4_ARM64_CPU_LIB=libggml-cpu-armv8.6_1.so G4_ARM64_TABLE=i8mm
# G4_QEMU_CPU=max,sve-default-vector-length=32; a pair other than those two is reported, not
# gated.
# G4_GK_ONLY=f32,q4_0 limits the tool to some types (development; the counts then fail).
# Without any of these it prints a reason and "0 passed, 0 failed".
B=${B:-build}
CC_ARM=${CC_ARM:-aarch64-linux-gnu-gcc}
QEMU=${QEMU:-qemu-aarch64}
SYSROOT=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}
LIBDIR=${G4_ARM64_LIBDIR:-$B/arm64-llama/package/bins/linux-arm64}
# the pairs run: table, library, qemu CPU (G4_ARM64_CPU_LIB: that library only, against
# G4_ARM64_TABLE, default neon)
if [ -n "$G4_ARM64_CPU_LIB" ]; then
    CONFIGS="${G4_ARM64_TABLE:-neon}:$G4_ARM64_CPU_LIB:${G4_QEMU_CPU:-max}"
else
    CONFIGS="neon:libggml-cpu-armv8.2_2.so:max i8mm:libggml-cpu-armv8.6_1.so:max,sve-default-vector-length=16 i8mm:libggml-cpu-armv8.6_1.so:max,sve-default-vector-length=32"
fi
skip() { echo "oracle_kern_neon: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
[ -z "$G4_SANITIZED" ] || skip "sanitizer run: nothing here is sanitized, the plain run covers it"
command -v "$CC_ARM" >/dev/null 2>&1 || skip "no $CC_ARM (gcc-aarch64-linux-gnu)"
command -v "$QEMU" >/dev/null 2>&1 || skip "no $QEMU (qemu-user)"
for l in libc.so.6 libstdc++.so.6 libgcc_s.so.1; do
    [ -e "$SYSROOT/lib/$l" ] || skip "no $SYSROOT/lib/$l (libc6-arm64-cross, libstdc++6-arm64-cross, libgcc-s1-arm64-cross)"
done
for c in $CONFIGS; do
    l=$(echo "$c" | cut -d: -f2)
    [ -f "$LIBDIR/libggml-base.so" ] && [ -f "$LIBDIR/$l" ] || skip "no $LIBDIR/$l: see the top of this script"
done

OUT="$B/neon-oracle"
mkdir -p "$OUT"
F="-std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -DG4_BUILD -Iinclude -Isrc"
fail() { echo "oracle_kern_neon: $1" >&2; echo "0 passed, 1 failed"; exit 1; }
. tests/sh/neon_objs.inc
$CC_ARM $F -o "$OUT/g4-ggml-kern" tools/g4-ggml-kern.c "$OUT"/quant_ref.o "$OUT"/types.o "$OUT"/cpu.o \
    "$OUT"/kern_scalar.o "$OUT"/kern_exp.o "$OUT"/kern_tanh.o $NEON_OBJS -ldl -lm || fail "link g4-ggml-kern"

run_one() { # TABLE CPULIB QEMU_CPU: prints "N passed, M failed"
TABLE=$1 CPULIB=$2 QEMU_CPU=$3
case "$CPULIB" in *armv8.2_3*|*armv8.6*|*armv9*) SVE=1 ;; *) SVE=0 ;; esac
# the library each table follows: gated; any other pair: reported
case "$TABLE:$CPULIB" in neon:*armv8.2_2*) EXACT=1 ;; i8mm:*armv8.6_1*) EXACT=2 ;; *) EXACT=0 ;; esac
echo "oracle_kern_neon: table $TABLE against $CPULIB (qemu -cpu $QEMU_CPU)" >&2
"$QEMU" -cpu "$QEMU_CPU" -L "$SYSROOT" "$OUT/g4-ggml-kern" "$LIBDIR" "$TABLE" "$CPULIB" >"$OUT/out" 2>"$OUT/err"
rc=$?
grep -v -e '^check ' -e '^[0-9]* passed, [0-9]* failed$' "$OUT/out" >&2
cat "$OUT/err" >&2
# exit 1 is the tool's "some output differs" (expected: the known differences); more is a crash
[ "$rc" -le 1 ] || { echo "oracle_kern_neon: g4-ggml-kern exited $rc" >&2; echo "0 passed, 1 failed"; return; }

awk '
function gate(ok, what) { if (ok) pass++; else { fail++; print "FAIL " what > "/dev/stderr" } }
function known(n, what) { if (n) print "known difference: " what > "/dev/stderr"; else print "equal (not gated for this library): " what > "/dev/stderr" }
# ours: gated against the library the table follows (neon: armv8.2_2, everything; i8mm:
# armv8.6_1, everything but dk, what the table does not follow: nothing now); any other pair:
# reported
function ours(ok, what, dk) { if (exact == 1 || (exact == 2 && !dk)) gate(ok, what); else known(!ok, what) }
$1 == "check" && $3 == "dequant" {
    # check T dequant D act A dot X of N worst W emu E
    t = $2; nd++
    gate($4 == 0, t " dequantization differs in " $4 " of " $10 " rows")
    ours($6 == 0, t " activations (" (t ~ /_K$/ || t == "iq4_xs" ? "Q8_K" : "Q8_0/Q8_1") ") differ in " $6 " of " $10 " rows", 0)
    if (sve && (t == "q8_0" || t == "q4_0" || t == "q2_K")) known($14, t " SVE vec_dot (not emulated by the tool) vs its NEON emulation: " $14 " of " $10)
    else gate($14 == 0, t " ARM vec_dot emulation differs from ggml_vec_dot in " $14 " of " $10)
    ours($8 == 0, t " matmul (one plain column) differs from ggml vec_dot in " $8 " of " $10 " (worst rel " $12 ")", 0)
}
$1 == "check" && $3 == "plain" {
    # weight in the plain CPU buffer (not repacked): vec_dot for 1 token; tinyBLAS (q8_0, q4_0,
    # f32, fp16 from 8) or vec_dot for 5 and 8. check T plain gemv G1 gemm GM of T1 TM worst W emu E1 EM
    t = $2; np++
    fl = t == "f32" || t == "f16" || t == "bf16"
    sv = sve && (t == "q8_0" || t == "q4_0" || t == "q2_K")   # SVE vec_dot / i8mm tinyBLAS
    mm = sve && (t == "q4_1" || t == "q4_K")                  # i8mm vec_dot with nrc 2
    if (!fl) {
        if (sv) known($14, t " plain 1-token emulation (SVE, not emulated): " $14 " of " $9)
        else gate($14 == 0, t " plain 1-token emulation differs from ggml in " $14 " of " $9)
        if (sv || mm) known($15, t " plain multi-token emulation (SVE/i8mm, not emulated): " $15 " of " $10)
        else gate($15 == 0, t " plain multi-token emulation differs from ggml in " $15 " of " $10)
    }
    ours($5 == 0, t " plain 1-token matmul differs from ggml in " $5 " of " $9, 0)
    ours($7 == 0, t " plain 5/8-token matmul differs from ggml in " $7 " of " $10 " (worst rel " $12 ")", 0)
}
$1 == "check" && $3 == "repacked" {
    # check T repacked gemv G1 gemm GM of T1 TM worst W emu E1 EM
    t = $2; nr++
    gate($14 == 0 && $15 == 0, t " repacked emulation differs from ggml (gemv " $14 ", gemm " $15 ")")
    ours($5 == 0, t " repacked 1-token matmul differs from ggml gemv in " $5 " of " $9, 0)
    ours($7 == 0, t " repacked 5/8-token matmul differs from ggml gemm/gemv in " $7 " of " $10 " (worst rel " $12 ")", 0)
}
END {
    if (nd != 12) { fail++; print "FAIL expected 12 vec_dot types, got " nd > "/dev/stderr" }
    if (np != 15) { fail++; print "FAIL expected 15 plain graph types, got " np > "/dev/stderr" }
    if (nr != 6) { fail++; print "FAIL expected 6 repacked types, got " nr > "/dev/stderr" }
    printf "%d passed, %d failed\n", pass, fail
    exit fail ? 1 : 0
}' sve="$SVE" exact="$EXACT" "$OUT/out"
}

pass=0 failed=0
for c in $CONFIGS; do
    line=$(run_one "$(echo "$c" | cut -d: -f1)" "$(echo "$c" | cut -d: -f2)" "$(echo "$c" | cut -d: -f3-)" | tail -n 1)
    echo "oracle_kern_neon: $line" >&2
    pass=$((pass + $(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')))
    failed=$((failed + $(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')))
done
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
