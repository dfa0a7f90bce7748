#!/usr/bin/env bash
# Issue #11's benchmark in one command: durable sends/s (h2load -c 16 -m 32) and the cross-node real-sender shape
# (relaygen: sends to the first node, 200 listeners on the last, 2,000 msg/s) for one node on SQLite and one, two
# and three nodes on one PostgreSQL, in the same run. Starts a throwaway PostgreSQL cluster (Debian's postgresql)
# and every daemon on loopback, prints a table and exits non-zero when a request failed or a message was lost.
#   Benchmarks/run-postgres.sh [postgres.py options]   e.g. --nodes 1 3 --rate 5000 --duration 20
# PUSHRELAY_SKIP_BUILD=1 uses the existing release binary in .build-release.
set -euo pipefail
cd "$(dirname "$0")/.."

source Benchmarks/lib/apt-install.sh
apt_install_missing run-postgres postgresql nghttp2-client gcc libc6-dev

mkdir -p .build-bench
relaygen=.build-bench/relaygen
if [ ! -x "$relaygen" ] || [ Benchmarks/relay/relaygen.c -nt "$relaygen" ]; then
  cc -O2 -Wall -Wextra -Werror -pthread -o "$relaygen" Benchmarks/relay/relaygen.c -lm
fi
scratch=(--scratch-path .build-release)
if [ "${PUSHRELAY_SKIP_BUILD:-0}" != 1 ]; then
  echo "run-postgres: swift build -c release --product pushrelay ${scratch[*]}" >&2
  swift build -c release --product pushrelay "${scratch[@]}" >&2
fi
bin="$(swift build -c release "${scratch[@]}" --show-bin-path)/pushrelay"
exec python3 Benchmarks/relay/postgres.py --pushrelay-bin "$bin" --relaygen "$relaygen" "$@"
