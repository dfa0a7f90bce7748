#!/usr/bin/env bash
# TLS benchmark: h2load over TLS (ALPN h2) against PushRelay (--listen-tls) and against nghttpd (libnghttp2's
# reference server, on OpenSSL too) with the same certificate and key, in the same run, with the same flags:
# GET /healthz on PushRelay vs GET of a static file with the same 15-byte body on nghttpd. Prints both rates and
# their ratio. A throw-away CA and an ECDSA P-256 certificate are made with `openssl` in a temp dir.
#
#   Benchmarks/tls.sh                        # defaults: -n 100000 -c 8 -m 32 -t 1
#   H2LOAD_FLAGS="-n 20000 -c 4 -m 16 -t 1" Benchmarks/tls.sh
#   SKIP_BUILD=1 PUSHRELAY_BIN=.build/debug/pushrelay Benchmarks/tls.sh   # another binary (figures not comparable)
#
# Needs nghttp2-client, nghttp2-server and openssl (scripts/setup.sh --test). Builds the release binary first.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib/h2load-checked.sh
. Benchmarks/lib/release-daemon.sh

flags=${H2LOAD_FLAGS:-"-n 100000 -c 8 -m 32 -t 1"}
release_binary
bench_workspace

# Certificates: a CA, and a server certificate for localhost / 127.0.0.1 (ECDSA P-256, as Let's Encrypt issues).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=bench CA" \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -set_serial 1 -days 2 \
  -extfile "$work/ext.cnf" -out "$work/server.pem" 2>/dev/null

# The same body on both servers: /healthz answers {"status":"ok"}.
mkdir -p "$work/docroot"
printf '{"status":"ok"}' > "$work/docroot/healthz"

"$bin" serve --init --listen 127.0.0.1:0 --listen-tls 127.0.0.1:0 --tls-cert "$work/server.pem" --tls-key "$work/server.key" \
  --data-dir "$work/data" --log-level warning > "$work/pushrelay.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  grep -q 'listening on https' "$work/pushrelay.out" 2>/dev/null && break
  sleep 0.1
done
pr_port=$(grep -o 'https://127.0.0.1:[0-9]*' "$work/pushrelay.out" | head -1 | sed 's/.*://')
[ -n "$pr_port" ] || { echo "pushrelay did not start:" >&2; cat "$work/pushrelay.out" >&2; exit 1; }

ng_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nghttpd -d "$work/docroot" "$ng_port" "$work/server.key" "$work/server.pem" > /dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$ng_port") 2>/dev/null && break
  sleep 0.1
done

rate() { # url [extra h2load args...]
  local out
  out=$(h2load_checked h2 $flags "$@") || return 1   # failed requests or ALPN not h2: no rate
  echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p'
}

report() { # name pushrelay_rate nghttpd_rate
  python3 -c "import sys; n,p,g=sys.argv[1],float(sys.argv[2]),float(sys.argv[3]); print(f'{n:<22} pushrelay {p:>11,.0f} req/s   nghttpd {g:>11,.0f} req/s   ratio {p/g:.2f}')" "$@"
}

echo "h2load $flags over TLS   ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
pr_get=$(rate "https://127.0.0.1:$pr_port/healthz")
ng_get=$(rate "https://127.0.0.1:$ng_port/healthz")
report "GET /healthz (TLS)" "$pr_get" "$ng_get"
