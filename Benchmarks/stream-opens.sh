#!/usr/bin/env bash
# What opening one device stream costs the daemon (issue #10): CPU, context switches and openings/s, one at a time.
#
#   Benchmarks/stream-opens.sh                                   # the release build, 2,000 devices, 3 rounds
#   PUSHRELAY_BIN=/path/to/pushrelay Benchmarks/stream-opens.sh
#   Benchmarks/stream-opens.sh --count 5000 --rounds 2 /path/a /path/b   # binaries alternated, round by round
#
# See Benchmarks/relay/opens.py for what is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
binaries=()
args=()
for arg in "$@"; do
  case $arg in
    /*) binaries+=("$arg") ;;
    *) args+=("$arg") ;;
  esac
done
if [ ${#binaries[@]} = 0 ]; then
  if [ -n "${PUSHRELAY_BIN:-}" ]; then
    binaries=("$PUSHRELAY_BIN")
  else
    swift build -c release --product pushrelay --scratch-path .build-release >&2
    binaries=("$(swift build -c release --scratch-path .build-release --show-bin-path)/pushrelay")
  fi
fi
exec python3 Benchmarks/relay/opens.py "${args[@]}" "${binaries[@]}"
