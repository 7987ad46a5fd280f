#!/usr/bin/env bash
# Benchmarks on the emulated cluster (see scripts/bench.py --help). Builds first.
#   scripts/bench.sh --quick                      a short run (what CI executes)
#   scripts/bench.sh --out docs/benchmarks-table.md --svg docs/benchmarks.svg   the full sweep
#   scripts/bench.sh ... --load 2 --load-mode bursty   on a busy host (2 busy loops, 3 s on / 3 s off)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/bin/prophet-emu ] || [ ! -f build/lib/libprophet.so ]; then
  bash scripts/setup.sh
  cmake -S . -B build >/dev/null && cmake --build build -j"$(nproc)" >/dev/null
fi
exec python3 scripts/bench.py "$@"
