#!/usr/bin/env bash
# Store benchmark: durable single-message enqueues per second through the group-commit writer (in-process, no HTTP),
# then the time to expand one topic message into N subscriber queues. Uses the hidden `pushrelay store-debug bench`.
# Usage: Benchmarks/store-bench.sh [extra bench options, e.g. --messages 400000 --concurrency 1024 --fan-out 100000]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product pushrelay --scratch-path .build-release >/dev/null
bin="$(swift build -c release --scratch-path .build-release --show-bin-path)/pushrelay"
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "process: %e s wall, %U s user, %S s sys, max RSS %M kB" \
  "$bin" store-debug bench --devices 10000 --messages 200000 --concurrency 512 --fan-out 10000 "$@"
