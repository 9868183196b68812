#!/bin/sh
# oracle_info.sh - files written by our GGUF writer load in llama.cpp, and `g4 info` agrees
# with llama.cpp's view of them (metadata, tensor table, hyperparameters). Needs the npm
# packages of tests/oracle (make test-deps); skipped without them.
B=${B:-build}
if [ ! -d tests/oracle/node_modules/node-llama-cpp ] || ! command -v node >/dev/null 2>&1; then
    echo "skipped: tests/oracle/node_modules missing (run make test-deps)" >&2
    echo "0 passed, 0 failed"; exit 0
fi
dir="$B/oracle-info"; mkdir -p "$dir"
pass=0; fail=0
run() { # name, g4-mkmodel args...
    name=$1; shift
    if ! "$B/g4-mkmodel" "$dir/$name.gguf" "$@" 2>"$dir/$name.err"; then
        fail=$((fail + 1)); echo "FAIL $name: g4-mkmodel: $(cat "$dir/$name.err")" >&2; return
    fi
    out=$(node tests/oracle/gguf_view.mjs "$B/g4" "$dir/$name.gguf" 2>"$dir/$name.err" | tail -n 1)
    p=$(echo "$out" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p')
    f=$(echo "$out" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p')
    if [ -z "$p" ]; then fail=$((fail + 1)); echo "FAIL $name: $(tail -n 5 "$dir/$name.err")" >&2; return; fi
    [ "$f" -eq 0 ] || sed "s/^/  $name: /" "$dir/$name.err" | head -n 20 >&2
    pass=$((pass + p)); fail=$((fail + f))
}
run f32
run f16 --type f16
run bf16-untied --type bf16 --untied
run q8_0-gqa --type q8_0 --ple 32 --heads 4 --kv-heads 2 --kv-heads-full 1
run q4_0-kv --type q4_0 --ple 32 --k-eq-v --shared-kv-tensors
run q4_1 --type q4_1 --ple 32
run q5_0 --type q5_0 --ple 32
run q5_1-noshare --type q5_1 --ple 32 --shared 0
run iq4_nl --type iq4_nl --ple 32
run q4_k --type q4_k --embd 256 --ff 256 --head-dim 128 --head-dim-full 256 --ple 256
run q5_k --type q5_k --embd 256 --ff 256 --head-dim 128 --head-dim-full 256 --ple 256
run q6_k --type q6_k --embd 256 --ff 256 --head-dim 128 --head-dim-full 256 --ple 256
run q2_k --type q2_k --embd 256 --ff 256 --head-dim 128 --head-dim-full 256 --ple 256
run q3_k --type q3_k --embd 256 --ff 256 --head-dim 128 --head-dim-full 256 --ple 256
run iq4_xs --type iq4_xs --embd 256 --ff 256 --head-dim 128 --head-dim-full 256 --ple 256
run q4_k_m --q4_k_m --embd 256 --ff 256 --ff-shared 512 --head-dim 128 --head-dim-full 256 --ple 256
# mixture of experts (3-D expert tensors, router, extra norms), fused and split gate/up; the 31B layout
run moe-q8_0 --type q8_0 --layers 6 --full-every 6 --shared 0 --ple 0 --k-eq-v-full --heads 4 --kv-heads 2 --kv-heads-full 1 \
    --experts 32 --experts-used 4 --ff-exp 64
run moe-split-q4_k_m --q4_k_m --layers 6 --full-every 6 --shared 0 --ple 0 --k-eq-v-full --embd 256 --ff 512 --heads 4 \
    --kv-heads 2 --kv-heads-full 1 --head-dim 64 --head-dim-full 128 --experts 128 --experts-used 8 --ff-exp 96 --moe-split --moe-scales
run d31-f16 --type f16 --layers 6 --full-every 6 --shared 0 --ple 0 --k-eq-v-full --embd 256 --heads 16 --kv-heads 8 --kv-heads-full 2 \
    --head-dim 64 --head-dim-full 128
echo "$pass passed, $fail failed"
