#!/usr/bin/env bash
# The CPU one hostile-but-authenticated send costs the daemon: a body of tens of thousands of keys.
#
#   Benchmarks/many-keys.sh                       # the release build
#   PUSHRELAY_BIN=/path/to/pushrelay SKIP_BUILD=1 Benchmarks/many-keys.sh
#
# Starts the daemon on loopback with a fresh project and sends, with its server key, one form-encoded
# /fcm/send of 22,800 `data.N=x` fields (285 KB) and one JSON send of 22,000 data keys (297 KB), one at a time on
# a new connection each; prints the answer and the daemon's CPU (utime + stime from /proc) for each. Before
# JSONObject indexed large objects the form send took about a second of one event loop.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${SKIP_BUILD:-0}" != 1 ] && [ -z "${PUSHRELAY_BIN:-}" ]; then
  swift build -c release --product pushrelay --scratch-path .build-release >&2
fi
bin=${PUSHRELAY_BIN:-"$(swift build -c release --scratch-path .build-release --show-bin-path)/pushrelay"}

work=$(mktemp -d)
daemon=""
cleanup() {
  [ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

key=$("$bin" project create bench --data-dir "$work" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["server_key"])')
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work" --log-level warning > "$work/log" 2>&1 &
daemon=$!
port=""
for _ in $(seq 1 100); do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/log" 2> /dev/null | head -1 | sed 's/.*://') || true
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/log" >&2; exit 1; }

python3 - "$port" "$key" "$daemon" <<'PY'
import http.client, json, sys, time

port, key, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])

def cpu_seconds():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100

cases = [
    ("form, 22,800 data keys", "application/x-www-form-urlencoded;charset=UTF-8",
     ("registration_id=abc&" + "&".join(f"data.{i}=x" for i in range(22800))).encode()),
    ("json, 22,000 data keys", "application/json",
     json.dumps({"to": "abc", "data": {str(i): "x" for i in range(22000)}}).encode()),
]
for name, content_type, body in cases:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    before, started = cpu_seconds(), time.time()
    connection.request("POST", "/fcm/send", body, {"Authorization": "key=" + key, "Content-Type": content_type})
    response = connection.getresponse()
    answer = response.read()[:60]
    print(f"{name}: {len(body):,} bytes -> {response.status} {answer!r}; "
          f"daemon CPU {cpu_seconds() - before:.2f} s, wall {time.time() - started:.2f} s")
    connection.close()
PY
