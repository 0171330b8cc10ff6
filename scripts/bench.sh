#!/usr/bin/env bash
# The benchmarks: figures only, nothing passes or fails on speed.
#   scripts/bench.sh BUILD            everything (the E4B runs take several minutes)
#   PCCX_BENCH_CONFIG=tiny scripts/bench.sh BUILD   a quick pass on the small shape
set -euo pipefail
build=${1:-build}
pccx="$build/bin/pccx"
cfg=${PCCX_BENCH_CONFIG:-e4b}
cd "$(dirname "$0")/.."

echo "== host sampler (262,400 logits)"
"$pccx" bench --sampler
echo
echo "== simulated decode on the cycle simulator, config $cfg"
"$pccx" bench --config "$cfg" --tokens 2
echo
echo "== host reference decode, config $cfg"
"$pccx" bench --ref --config "$cfg" -n 4
echo
echo "== submit->complete latency through /dev/pccx vs the in-process backend (QEMU guest)"
scripts/deps.sh test
PCCX_QEMU_ARCH=amd64 PCCX_QEMU_TESTS=bench scripts/qemu/run.sh "$build" 2>&1 | grep -i "bench" || true
