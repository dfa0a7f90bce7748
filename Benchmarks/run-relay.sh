#!/usr/bin/env bash
# The relay benchmark in one command: issue #10's real-sender shapes (a) 5,000 and (b) 20,000 msg/s beside
# nginx + nchan and mosquitto, (c) h2load -c 8 -m 1 --h1 and -c 16 -m 32 beside nghttpd / nginx, tokens per request,
# idle memory per device, issue 6's fan-out.
#   Benchmarks/run-relay.sh [run.py options]   e.g. --only stream nchan --rates 5000, --perf, --duration 10
# Installs what is missing (Debian: nginx-light, libnginx-mod-nchan, mosquitto, nghttp2-client/-server, gcc),
# compiles the generator (Benchmarks/relay/relaygen.c) into .build-bench/, builds the daemon in release mode with its
# own scratch path (.build-release, so the debug build in .build is left alone), starts every server on loopback,
# prints the tables with the goals' verdicts and stops everything it started. Exits non-zero when a measurement
# failed (unsent, failed or lost messages, failed requests, wrong protocol).
# PUSHRELAY_SKIP_BUILD=1 uses the existing release binary; PUSHRELAY_BIN=path another one.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

source Benchmarks/lib/apt-install.sh
apt_install_missing run-relay nginx-light libnginx-mod-nchan mosquitto nghttp2-client nghttp2-server gcc libc6-dev
# The packaged services must not hold ports or CPU while we measure; the benchmark starts its own.
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
for svc in nginx mosquitto; do
  $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
  $SUDO service "$svc" stop >/dev/null 2>&1 || true
done
# Benchmark-only Python requirement: uvloop (the generator falls back to asyncio's loop without it).
python3 -c 'import uvloop' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check uvloop || true

mkdir -p .build-bench
relaygen=.build-bench/relaygen
if [ ! -x "$relaygen" ] || [ Benchmarks/relay/relaygen.c -nt "$relaygen" ]; then
  cc -O2 -Wall -Wextra -Werror -pthread -o "$relaygen" Benchmarks/relay/relaygen.c -lm
fi
wakeup=.build-bench/wakeup
if [ ! -x "$wakeup" ] || [ Benchmarks/relay/wakeup.c -nt "$wakeup" ]; then
  cc -O2 -Wall -Wextra -Werror -pthread -o "$wakeup" Benchmarks/relay/wakeup.c
fi

bin_args=()
if [ -n "${PUSHRELAY_BIN:-}" ]; then
  # The servers start in their own directories: a relative path (as in the examples above) is made absolute.
  bin_args=(--pushrelay-bin "$(realpath "$PUSHRELAY_BIN")")
elif [ -d Sources/pushrelay ]; then
  scratch=(--scratch-path .build-release)
  if [ "${PUSHRELAY_SKIP_BUILD:-0}" != 1 ]; then
    echo "run-relay: swift build -c release --product pushrelay ${scratch[*]}" >&2
    swift build -c release --product pushrelay "${scratch[@]}" >&2
  fi
  bin_args=(--pushrelay-bin "$(swift build -c release "${scratch[@]}" --show-bin-path)/pushrelay")
fi

pids=()
cleanup() {
  # run.py stops the servers it started; this catches anything left if run.py itself was killed.
  for p in "${pids[@]}"; do
    kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT INT TERM

out="${RELAY_BENCH_OUT:-.build-bench/relay-bench-$(date -u +%Y%m%dT%H%M%SZ).json}"
echo "run-relay: load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores" >&2
# Own process group, so that the trap can end run.py and every server and generator process under it.
setsid python3 Benchmarks/relay/run.py "${bin_args[@]}" --relaygen "$relaygen" --out "$out" "$@" &
runner=$!
pids+=("$runner")
status=0
wait "$runner" || status=$?
pids=()
echo "run-relay: load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
