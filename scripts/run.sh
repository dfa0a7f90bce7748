#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine with the Swift toolchain, builds a release binary and runs
# the daemon on its embedded SQLite store. Creates a first project on the first run and prints how to send.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product pushrelay
bin="$(swift build -c release --show-bin-path)/pushrelay"
data_dir="${PUSHRELAY_DATA_DIR:-$PWD/data}"
listen="${PUSHRELAY_LISTEN:-127.0.0.1:8080}"
mkdir -p "$data_dir"
exec "$bin" serve --listen "$listen" --data-dir "$data_dir" "$@"
