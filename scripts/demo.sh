#!/usr/bin/env bash
# The main job: a Gemma 3n model (small shape, synthetic weights, the real Gemma tokenizer)
# generates a chat reply on the simulated pccx NPU; every stage of every token is checked
# bit for bit against the reference model (--verify).
set -euo pipefail
build=${1:-build}
pccx="$build/bin/pccx"
cd "$(dirname "$0")/.."

tok=$(scripts/fetch-tokenizer.sh)
model="$build/demo/tiny-vocab.gguf"
mkdir -p "$build/demo"
# A file from an older pccx (the layout or the weights may have changed since) is made again.
if [ ! -s "$model" ] || [ "$pccx" -nt "$model" ]; then
  echo "== pccx synth: a gemma3n GGUF with the real vocabulary and synthetic weights"
  "$pccx" synth --config tiny-vocab --seed 1 --tokenizer "$tok" -o "$model"
fi
echo "== pccx run --verify (synthetic weights: the text is noise, the bits are checked)"
"$pccx" run -m "$model" --chat -p "Write a haiku about an FPGA." -n 24 --verify \
  --temp 0.8 --sample-seed 7 --trace "$build/demo/trace.json"
echo "== a Perfetto/Chrome trace of the run is in $build/demo/trace.json"
