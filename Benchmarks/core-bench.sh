#!/bin/sh
# Per-send CPU cost of PushRelayCore (parse + validate + envelope + response) on the seed scenario body.
# Builds the core module and the benchmark with `swiftc -O -wmo` (no SwiftPM release build of the whole package).
# Usage: Benchmarks/core-bench.sh [iterations]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/.build/core-bench}
mkdir -p "$OUT"
FLAGS="-O -wmo -swift-version 6 -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
 -enable-upcoming-feature InternalImportsByDefault"
# shellcheck disable=SC2086
swiftc $FLAGS -parse-as-library -module-name PushRelayWire -emit-module -emit-module-path "$OUT/PushRelayWire.swiftmodule" \
    -emit-library -static -o "$OUT/libPushRelayWire.a" "$ROOT"/Sources/PushRelayWire/*.swift
# shellcheck disable=SC2086
swiftc $FLAGS -parse-as-library -module-name PushRelayCore -I "$OUT" -emit-module \
    -emit-module-path "$OUT/PushRelayCore.swiftmodule" -emit-library -static -o "$OUT/libPushRelayCore.a" \
    "$ROOT"/Sources/PushRelayCore/*.swift
# shellcheck disable=SC2086
swiftc $FLAGS -module-name CoreBenchmark -I "$OUT" -L "$OUT" -lPushRelayCore -lPushRelayWire \
    "$ROOT/Benchmarks/CoreBenchmark/main.swift" -lm -o "$OUT/core-bench"
"$OUT/core-bench" "$@"
