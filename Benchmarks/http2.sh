#!/usr/bin/env bash
# HTTP transport benchmark: h2load against PushRelay and against nghttpd (libnghttp2's reference server) in the same
# run, with the same flags, for GET /healthz and a ~300-byte POST. Prints both rates and their ratio, and each
# server's CPU time per request (the fairer figure when the machine is shared).
#
#   Benchmarks/http2.sh                     # defaults: -n 200000 -c 8 -m 32 -t 1
#   H2LOAD_FLAGS="-n 50000 -c 4 -m 16 -t 1" Benchmarks/http2.sh
#
# Needs nghttp2-client and nghttp2-server (scripts/setup.sh --test). Builds the release binary first. Exits non-zero,
# without printing a rate, when a request failed or was not answered 2xx over h2c.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib/h2load-checked.sh
. Benchmarks/lib/release-daemon.sh

flags=${H2LOAD_FLAGS:-"-n 200000 -c 8 -m 32 -t 1"}
release_binary
bench_workspace

# The same bodies on both servers: /healthz answers {"status":"ok"}; the POST body is 300 bytes.
mkdir -p "$work/docroot/debug"
printf '{"status":"ok"}' > "$work/docroot/healthz"
head -c 225 /dev/urandom | base64 -w0 > "$work/post.bin"        # 300 bytes
cp "$work/post.bin" "$work/docroot/debug/echo"                 # nghttpd answers the POST with the same 300 bytes

"$bin" serve --init --listen 127.0.0.1:0 --debug-bench-routes --log-level warning > "$work/pushrelay.out" &
pr_pid=$!
pids+=($pr_pid)
for _ in $(seq 1 100); do
  grep -q 'listening on' "$work/pushrelay.out" 2>/dev/null && break
  sleep 0.1
done
pr_port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/pushrelay.out" | head -1 | sed 's/.*://')
[ -n "$pr_port" ] || { echo "pushrelay did not start" >&2; exit 1; }

ng_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nghttpd --no-tls -d "$work/docroot" "$ng_port" > /dev/null 2>&1 &
ng_pid=$!
pids+=($ng_pid)
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$ng_port") 2>/dev/null && break
  sleep 0.1
done

cpu_ticks() { # pid → user+system clock ticks so far
  awk '{print $14 + $15}' "/proc/$1/stat"
}

requests=$(echo "$flags" | sed -n 's/.*-n *\([0-9]*\).*/\1/p')
ticks_per_second=$(getconf CLK_TCK)

# Prints "rate cpu_us_per_request": the h2load rate, and the server's CPU time per request (which a busy, shared
# machine disturbs far less than the rate).
rate() { # pid url [extra h2load args...]
  local pid=$1; shift
  local out before after
  before=$(cpu_ticks "$pid")
  out=$(h2load_checked h2c $flags "$@") || return 1   # failed requests or not h2c: no rate
  after=$(cpu_ticks "$pid")
  local r
  r=$(echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
  echo "$r $(python3 -c "print(($after - $before) / $ticks_per_second * 1e6 / $requests)")"
}

report() { # name "pushrelay_rate cpu" "nghttpd_rate cpu"
  python3 - "$@" <<'PY'
import sys
name, (p, pc), (g, gc) = sys.argv[1], map(float, sys.argv[2].split()), map(float, sys.argv[3].split())
print(f"{name:<14} pushrelay {p:>9,.0f} req/s {pc:6.2f} us CPU/req | nghttpd {g:>9,.0f} req/s {gc:6.2f} us CPU/req"
      f" | rate ratio {p/g:.2f}, CPU-cost ratio {gc/pc:.2f}")
PY
}

echo "h2load $flags   ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
pr_get=$(rate "$pr_pid" "http://127.0.0.1:$pr_port/healthz")
ng_get=$(rate "$ng_pid" "http://127.0.0.1:$ng_port/healthz")
report "GET /healthz" "$pr_get" "$ng_get"
pr_post=$(rate "$pr_pid" -d "$work/post.bin" "http://127.0.0.1:$pr_port/debug/echo")
ng_post=$(rate "$ng_pid" -d "$work/post.bin" "http://127.0.0.1:$ng_port/debug/echo")
report "POST 300 B" "$pr_post" "$ng_post"
