#!/usr/bin/env python3
"""arm_mca.py - static cost estimates of the hot aarch64 loops: ours (kern_neon*.c, cross-built)
next to the same loops disassembled from llama.cpp's arm64 CPU library (node-llama-cpp 3.22.1,
libggml-cpu-armv8.2_2.so), through llvm-mca for a few cores. `make bench-arm-model` runs it.

THESE ARE STATIC ESTIMATES, NOT TIMINGS: llvm-mca models one loop body in steady state (no
cache misses, no memory bandwidth, perfect branch prediction, the scheduling model's view of
the core). They compare instruction streams on the same model, nothing more.

Method. A kernel's loop nest is read from objdump: the loop whose iteration covers one super-
block (or block) of the tile - the "work" multiply-accumulates below - is found, every nested
loop holding sdot gets the trip count that makes the iteration's sdot work equal that, nested
loops without sdot count once (an undercount, in llama.cpp's favour: it has a 16-iteration
scale loop there). Branches and pc-relative references are dropped. Cycles = llvm-mca's total
cycles over 200 iterations / 200, per body, times its trip count. The result is cycles per 256
multiply-accumulates (weights x tokens): for a one-token matvec, cycles per 256 weights.

usage: arm_mca.py OURS_OBJ_DIR LLAMA_CPU_LIB [MCA]
(a case marked with a variant, armv8.6_1, reads that library from LLAMA_CPU_LIB's folder; its NEON
loop, the one an SVE core of 128 bits runs)
"""
import os
import re
import subprocess
import sys

OBJDUMP = "aarch64-linux-gnu-objdump"

# (label, bytes per 256 weights, ours: (object, function, MACs per iteration of the loop to
#  cost), llama.cpp: (function, the same)): one super-block (block) of the kernel's tile
CASES = [
    ("Q4_K matvec", 144, ("kern_neon_k.o", "neon_q4_K_rp", 4 * 256), ("ggml_gemv_q4_K_8x4_q8_K", 8 * 256)),
    ("Q6_K matvec", 210, ("kern_neon_k.o", "neon_q6_K_rpv", 4 * 256), ("ggml_gemv_q6_K_8x4_q8_K", 8 * 256)),
    ("Q8_0 matvec", 272, ("kern_neon_b32.o", "neon_q8_0_rp", 4 * 32), ("ggml_gemv_q8_0_4x4_q8_0", 4 * 32)),
    ("Q4_0 matvec", 144, ("kern_neon_b32.o", "neon_q4_0_rp", 4 * 32), ("ggml_gemv_q4_0_4x4_q8_0", 4 * 32)),
    ("Q4_K prefill tile", 144, ("kern_neon_k.o", "neon_q4_K_rp_rows", 4 * 256), ("ggml_gemm_q4_K_8x4_q8_K", 8 * 4 * 256)),
    ("Q6_K prefill tile", 210, ("kern_neon_k.o", "neon_q6_K_rpm", 4 * 256), ("ggml_gemm_q6_K_8x4_q8_K", 8 * 4 * 256)),
    # the i8mm table's smmla tile (2 rows x 4 tokens) against armv8.6_1's 8x8 i8mm gemm; only
    # for cores with i8mm (I8MM_CPUS)
    ("Q4_K i8mm tile", 144, ("kern_i8mm.o", "i8mm_q4_K_mm", 2 * 4 * 256), ("ggml_gemm_q4_K_8x8_q8_K", 8 * 4 * 256), "armv8.6_1"),
    ("Q6_K i8mm tile", 210, ("kern_i8mm.o", "i8mm_q6_K_mm", 2 * 4 * 256), ("ggml_gemm_q6_K_8x8_q8_K", 8 * 4 * 256), "armv8.6_1"),
]
I8MM_CPUS = ("neoverse-v1",)
# (llvm-mca -mcpu, what it models, clock GHz for the GB/s column)
CPUS = [
    ("cortex-a76", "Cortex-A76 (Raspberry Pi 5); LLVM maps it to its Cortex-A57 model", 2.4),
    ("neoverse-n1", "Neoverse N1 (the A76's server sibling: its own model)", 2.4),
    ("neoverse-v1", "Neoverse V1 (Graviton 3)", 2.6),
]
BW = 25.0  # GB/s of the part the decode ceiling is taken for


def disasm(obj, fn):
    out = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", obj], capture_output=True, text=True, check=True).stdout
    ins, on = [], False
    for line in out.split("\n"):
        if re.match(r"^[0-9a-f]+ <%s>:$" % re.escape(fn), line):
            on = True
            continue
        if on and not line.strip():
            break
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", line) if on else None
        if m:
            ins.append((int(m.group(1), 16), m.group(2), m.group(3).split("//")[0].strip()))
    if not ins:
        raise SystemExit("arm_mca: no function %s in %s" % (fn, obj))
    return ins


def is_branch(op):
    return op in ("b", "br", "ret", "cbz", "cbnz", "tbz", "tbnz") or op.startswith("b.")


def loops(ins):
    """(start index, end index) of each backward branch's loop, merged by start"""
    idx = {a: i for i, (a, _, _) in enumerate(ins)}
    by_start = {}
    for i, (a, op, args) in enumerate(ins):
        if not is_branch(op):
            continue
        m = re.search(r"\b([0-9a-f]+) <", args)
        if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in idx:
            s = idx[int(m.group(1), 16)]
            by_start[s] = max(by_start.get(s, i), i)
    return sorted(by_start.items())


def sdots(ins, s, e):
    """multiply-accumulates of the range in units of 16 (an sdot: 16; an smmla: 32)"""
    return sum(1 if ins[k][1] == "sdot" else 2 if ins[k][1] == "smmla" and ins[k][2].startswith("v") else 0
               for k in range(s, e + 1))


def children(ls, s, e):
    inner = [(a, b) for (a, b) in ls if s < a and b <= e and (a, b) != (s, e)]
    return [(a, b) for (a, b) in inner if not any(c < a and b <= d for (c, d) in inner if (c, d) != (a, b))]


def own_body(ins, ls, s, e):
    """the loop's instructions outside its nested loops, without branches and pc-relative refs"""
    skip = set()
    for (a, b) in children(ls, s, e):
        skip.update(range(a, b + 1))
    return [ins[k] for k in range(s, e + 1) if k not in skip and not is_branch(ins[k][1]) and "<" not in ins[k][2]]


def mca_cycles(mca, cpu, body):
    if not body:
        return 0.0
    asm = "\n".join("%s %s" % (op, args) for (_, op, args) in body) + "\n"
    r = subprocess.run([mca, "-mtriple=aarch64", "-mcpu=" + cpu, "-mattr=+dotprod,+fullfp16,+i8mm", "-iterations=200"],
                       input=asm, capture_output=True, text=True)
    m = re.search(r"Total Cycles:\s+(\d+)", r.stdout)
    if not m:
        raise SystemExit("arm_mca: llvm-mca failed for -mcpu=%s: %s" % (cpu, (r.stderr or r.stdout)[-400:]))
    return int(m.group(1)) / 200.0


def plan(ins, macs):
    """the loop whose iteration does macs multiply-accumulates: [(body, trips)]"""
    ls = loops(ins)
    for (s, e) in sorted(ls, key=lambda l: l[1] - l[0]):  # innermost first
        kids = [k for k in children(ls, s, e) if sdots(ins, *k)]
        direct = sdots(ins, s, e) - sum(sdots(ins, *k) for k in children(ls, s, e))
        kid_macs = 16 * sum(sdots(ins, *k) for k in kids)
        rest = macs - 16 * direct
        if not kids and rest == 0:
            return [(own_body(ins, ls, s, e), 1)]
        if kids and rest > 0 and rest % kid_macs == 0:
            t = rest // kid_macs
            out = [(own_body(ins, ls, s, e), 1)]
            for k in children(ls, s, e):
                out.append((own_body(ins, ls, *k), t if sdots(ins, *k) else 1))
                if children(ls, *k):
                    return None  # deeper nests: not needed for these kernels
            return out
    # no loop does a whole iteration's work (llama.cpp's q6_K 8x8 gemm: a loop over the four
    # 64-element quarters that the compiler laid out overlapping its neighbours): the innermost
    # loop whose work divides it, times the trips that make it up; what runs once per iteration
    # outside it is not counted (an undercount, in that kernel's favour)
    for (s, e) in sorted(ls, key=lambda l: l[1] - l[0]):
        w = 16 * sdots(ins, s, e)
        if w and not children(ls, s, e) and macs % w == 0:
            return [(own_body(ins, ls, s, e), macs // w)]
    return None


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    objdir, lib = sys.argv[1], sys.argv[2]
    mca = sys.argv[3] if len(sys.argv) > 3 else "llvm-mca"
    print("Static estimates (llvm-mca %s), NOT timings: cycles per 256 multiply-accumulates (weights x tokens)"
          % subprocess.run([mca, "--version"], capture_output=True, text=True).stdout.split("version")[-1].split()[0])
    print("ours: %s; llama.cpp: %s" % (objdir, os.path.basename(lib)))
    for cpu, what, ghz in CPUS:
        print("\n-mcpu=%s: %s; GB/s at %.1f GHz; ceiling share: of a %.0f GB/s part's decode rate, 1 / 4 cores" % (cpu, what, ghz, BW))
        print("%-18s %9s %9s %7s | %8s %8s | %11s %11s" % ("loop", "ours", "llama", "ratio", "ours GB/s", "llama", "ours share", "llama share"))
        for case in CASES:
            label, b256, (obj, fn, macs), (lfn, lmacs) = case[:4]
            llib = lib
            if len(case) > 4:
                if cpu not in I8MM_CPUS:
                    continue
                llib = os.path.join(os.path.dirname(lib), "libggml-cpu-%s.so" % case[4])
            row = []
            for (o, f, m) in ((os.path.join(objdir, obj), fn, macs), (llib, lfn, lmacs)):
                ins = disasm(o, f)
                p = plan(ins, m)
                if p is None:
                    raise SystemExit("arm_mca: no loop doing %d MACs per iteration in %s" % (m, f))
                cyc = sum(mca_cycles(mca, cpu, body) * t for body, t in p)
                row.append(cyc * 256.0 / m)
            gbs = [b256 * ghz / c for c in row]
            tile = "tile" in label
            share = lambda g: "%3.0f%% / %3.0f%%" % (min(100, 100 * g / BW), min(100, 400 * g / BW))
            print("%-18s %9.1f %9.1f %6.2fx | %8s %8s | %11s %11s" % (
                label, row[0], row[1], row[1] / row[0],
                "-" if tile else "%.1f" % gbs[0], "-" if tile else "%.1f" % gbs[1],
                "-" if tile else share(gbs[0]), "-" if tile else share(gbs[1])))
    print("\nratio = llama cycles / ours (> 1: ours needs fewer cycles). GB/s = weight bytes per 256 weights x clock /")
    print("cycles: the rate one core could stream if compute were all; a decoded token is bounded by the part's")
    print("bandwidth, so the share is how much of that bound the kernel alone would allow (100% = bandwidth-bound).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
