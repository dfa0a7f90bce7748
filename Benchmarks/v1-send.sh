#!/usr/bin/env bash
# Durable sends through FCM HTTP v1 beside the legacy API, in the same run, with the same h2load shape as the relay
# benchmark's row (a): one registered, offline device; the scenario message; every answer a 200.
#
#   legacy: POST /fcm/send                         Authorization: key=<server key>
#   v1:     POST /v1/projects/shop/messages:send   Authorization: Bearer <access token>
#
# The access token is obtained once, before the run, by Python google-auth from a service-account file that
# `pushrelay project service-account` wrote (as a v1 library does: it refreshes the token once an hour). Prints
# each API's rate and the daemon's CPU time per send, and their ratio. A fresh data directory for each API.
#
#   Benchmarks/v1-send.sh                                   # defaults: -n 200000 -c 8 -m 32 -t 1
#   H2LOAD_FLAGS="-n 50000 -c 8 -m 32 -t 1" Benchmarks/v1-send.sh
#   H2LOAD_FLAGS="-n 30000 -c 8 -m 1 -t 1 --h1" Benchmarks/v1-send.sh    # real senders' shape: HTTP/1.1, one at a time
#   PUSHRELAY_BIN=.build-release/release/pushrelay Benchmarks/v1-send.sh   # skip the build
#
# Needs nghttp2-client and python3 google-auth (scripts/setup.sh --test). Builds the release binary first.
set -euo pipefail
cd "$(dirname "$0")/.."

flags=${H2LOAD_FLAGS:-"-n 200000 -c 8 -m 32 -t 1"}
bin=${PUSHRELAY_BIN:-}
if [ -z "$bin" ]; then
  swift build -c release --product pushrelay --scratch-path .build-release >&2
  bin=.build-release/release/pushrelay
fi

work=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

requests=$(echo "$flags" | sed -n 's/.*-n *\([0-9]*\).*/\1/p')
ticks_per_second=$(getconf CLK_TCK)

start() { # data dir → sets pid, port
  # No message-rate quota: every send goes to one device, far past what a real sender may send it.
  "$bin" serve --init --listen 127.0.0.1:0 --data-dir "$1" --log-level warning --device-message-rate 0 --project-message-rate 0 > "$1.out" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do grep -q 'listening on' "$1.out" 2>/dev/null && break; sleep 0.1; done
  port=$(grep -o 'http://127.0.0.1:[0-9]*' "$1.out" | head -1 | sed 's/.*://')
  [ -n "$port" ] || { echo "pushrelay did not start: $(cat "$1.out")" >&2; exit 1; }
}

stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

# Registers a device in a new project shop; prints "server_key token".
setup_project() { # data dir
  local keys token
  keys=$("$bin" project create shop --data-dir "$1" --json)
  local client server
  client=$(echo "$keys" | python3 -c 'import json,sys; print(json.load(sys.stdin)["client_key"])')
  server=$(echo "$keys" | python3 -c 'import json,sys; print(json.load(sys.stdin)["server_key"])')
  token=$(curl -sS -X POST "http://127.0.0.1:$port/v1/register" -H "Authorization: key=$client" \
    -H 'Content-Type: application/json' -d '{"project":"shop","app":"br.com.siecola.shop","platform":"ios"}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
  echo "$server $token"
}

source Benchmarks/lib/h2load-checked.sh
source Benchmarks/lib/seed-device.sh

# Runs h2load over h2c (HTTP/1.1 with --h1 in the flags); prints "rate cpu_us_per_send"; stops the script on any failed or non-2xx answer.
measure() { # h2load args...
  local before after out
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  local protocol=h2c
  case " $flags " in *" --h1 "*) protocol=http/1.1 ;; esac
  out=$(h2load_checked "$protocol" $flags "$@") || exit 1
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  local r
  r=$(echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
  echo "$r $(python3 -c "print(($after - $before) / $ticks_per_second * 1e6 / $requests)")"
}

echo "h2load $flags   ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"

# Legacy.
start "$work/legacy"
read -r server_key token < <(setup_project "$work/legacy")
python3 - "$token" > "$work/legacy.json" <<'PY'
import json, sys
print(json.dumps({"to": sys.argv[1], "notification": {"body": "Status do pedido", "title": "Provedor de Mensagens",
    "orderInfo": {"infoReason": "Status de pedido", "orderID": 3, "userEmail": "matilde@siecola.com.br",
                  "newOrderStatus": "Novo pedido"}}, "priority": "high", "content_available": True}))
PY
legacy=$(measure -d "$work/legacy.json" -H 'Content-Type: application/json' -H "Authorization: key=$server_key" \
  "http://127.0.0.1:$port/fcm/send")
stop

# v1: the token obtained once with google-auth.
start "$work/v1"
read -r _ token < <(setup_project "$work/v1")
SEED_PROJECT=shop SEED_TOKEN=$token
seed_v1_access_token "$bin" "$work/v1" "$port" "$work"
access=$SEED_ACCESS_TOKEN
seed_v1_send_body "$work/v1.json"
v1=$(measure -d "$work/v1.json" -H 'Content-Type: application/json' -H "Authorization: Bearer $access" \
  "http://127.0.0.1:$port/v1/projects/shop/messages:send")
stop

python3 - "$legacy" "$v1" <<'PY'
import sys
(l, lc), (v, vc) = (map(float, a.split()) for a in sys.argv[1:3])
print(f"legacy /fcm/send      {l:>9,.0f} sends/s {lc:7.2f} us CPU/send")
print(f"v1 messages:send      {v:>9,.0f} sends/s {vc:7.2f} us CPU/send")
print(f"v1 / legacy: rate {v/l:.2f}, CPU per send {vc/lc:.2f}")
PY
