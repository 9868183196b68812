#!/bin/sh
# llama_native.sh - the llama.cpp speed yardstick: v0.5.0 built natively on this machine from the
# source bundle inside the npm package (the llama.cpp a power user of this host runs), never the
# npm prebuilt (which stays the correctness oracle). Prints the folder holding llama-bench,
# llama-batched-bench and llama-server.
#
#   sh scripts/llama_native.sh [BUILD_DIR]
#
# LLAMA_NATIVE=DIR reuses an existing build (DIR/bin/llama-bench or DIR/llama-bench). Otherwise
# BUILD_DIR/llama-native (default build/llama-native, never committed) holds a git clone of
# tests/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle in src/ and a cmake build in
# build/ with llama.cpp's defaults (Release, GGML_NATIVE=ON: -march=native) and no network
# libraries (-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF), targets llama-bench, llama-batched-bench,
# llama-server; about 22 CPU-minutes (63 min wall on the shared 2-vCPU Zen 1 host under load),
# once per clone (a finished build is reused; delete the folder to rebuild). Needs git, cmake and a C++ compiler; the log is build/llama-native/build.log.
set -e
B=${1:-build}
if [ -n "$LLAMA_NATIVE" ]; then
    for d in "$LLAMA_NATIVE/bin" "$LLAMA_NATIVE"; do
        if [ -x "$d/llama-bench" ]; then echo "$d"; exit 0; fi
    done
    echo "llama_native: LLAMA_NATIVE=$LLAMA_NATIVE holds no llama-bench (looked in bin/ and the folder itself)" >&2
    exit 1
fi
D=$B/llama-native
BIN=$D/build/bin
if [ -f "$D/done" ] && [ -x "$BIN/llama-bench" ] && [ -x "$BIN/llama-batched-bench" ] && [ -x "$BIN/llama-server" ]; then
    echo "$BIN"; exit 0
fi
BUNDLE=tests/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -f "$BUNDLE" ] || { echo "llama_native: $BUNDLE missing (run make test-deps, or set LLAMA_NATIVE to a llama.cpp build)" >&2; exit 1; }
for t in git cmake; do command -v $t >/dev/null 2>&1 || { echo "llama_native: needs $t" >&2; exit 1; }; done
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || { echo "llama_native: needs a C++ compiler" >&2; exit 1; }
mkdir -p "$D"
if [ ! -d "$D/src/.git" ]; then
    rm -rf "$D/src"
    git -c advice.detachedHead=false clone -q "$BUNDLE" "$D/src"
fi
echo "llama_native: building llama.cpp $(git -C "$D/src" log -1 --format=%h) natively in $D/build (log: $D/build.log)" >&2
{
    cmake -S "$D/src" -B "$D/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF &&
    nice cmake --build "$D/build" -j "$(nproc 2>/dev/null || echo 2)" --target llama-bench llama-batched-bench llama-server
} >"$D/build.log" 2>&1 || { echo "llama_native: build failed, see $D/build.log" >&2; tail -n 5 "$D/build.log" >&2; exit 1; }
git -C "$D/src" log -1 --format=%H >"$D/done"
echo "$BIN"
