#!/bin/sh
# demo.sh - `make demo`: writes a tiny random Gemma 4 model with the project's own GGUF writer
# and runs it. The weights are RANDOM: the output is gibberish by design; it shows the whole
# path (writer -> loader -> tokenizer -> forward pass -> sampler) working end to end.
set -e
B=${1:-build}
M="$B/demo.gguf"
"$B/g4-mkmodel" "$M" --type q8_0 --ple 32
echo "== wrote $M: a tiny random Gemma 4 model (random weights, synthetic 512-token vocabulary)"
"$B/g4" info -m "$M"
echo "== g4 run (greedy): the continuation is meaningless because the weights are random"
"$B/g4" run -m "$M" -p "The capital of France is" -n 24 --temp 0
echo "== examples/simple.c on the same file"
"$B/simple" "$M" "hello world" 16
