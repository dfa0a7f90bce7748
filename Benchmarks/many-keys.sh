#!/usr/bin/env bash
# The CPU one hostile-but-authenticated send costs the daemon: a body of tens of thousands of keys.
#
#   Benchmarks/many-keys.sh                       # the release build
#   PUSHRELAY_BIN=/path/to/pushrelay SKIP_BUILD=1 Benchmarks/many-keys.sh
#
# Starts the daemon on loopback with a fresh project and sends, with its server key, one form-encoded
# /fcm/send of 22,800 `data.N=x` fields (285 KB) and one JSON send of 22,000 data keys (297 KB), and with an
# access token (google-auth, from the file `project service-account` writes) one FCM v1 send of 16,000 custom
# `apns.payload` keys; one at a time on a new connection each; prints the answer and the daemon's CPU
# (utime + stime from /proc) for each. Before JSONObject indexed large objects the form send took about a second
# of one event loop. Needs python3 google-auth (scripts/setup.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."

. Benchmarks/lib/release-daemon.sh

release_binary
bench_workspace

key=$("$bin" project create shop --data-dir "$work" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["server_key"])')
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work" --log-level warning > "$work/log" 2>&1 &
daemon=$!
pids+=("$daemon")
port=""
for _ in $(seq 1 100); do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/log" 2> /dev/null | head -1 | sed 's/.*://') || true
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/log" >&2; exit 1; }
"$bin" project service-account shop --data-dir "$work" --public-url "http://127.0.0.1:$port" --out "$work/sa.json" \
  > /dev/null
access=$(python3 - "$work/sa.json" <<'PY'
import sys
from google.oauth2 import service_account
from google.auth.transport.requests import Request
credentials = service_account.Credentials.from_service_account_file(sys.argv[1],
    scopes=["https://www.googleapis.com/auth/firebase.messaging"])
credentials.refresh(Request())
print(credentials.token)
PY
)

python3 - "$port" "$key" "$daemon" "$access" <<'PY'
import http.client, json, sys, time

port, key, pid, access = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
token = "eeDh2Sd5HknG1zdC1w1UBD:APA91bFKGr99Cpj7q1Es0oexCeoXf9qinT6GuI-pvCouR8AKueLR1zNc_QZVv_U7t068XGEbPheXZwLF5fvUNZ8c018jv6vMP-1tAQojY6Q4tDV3ySXN"

def cpu_seconds():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100

legacy, v1 = "/fcm/send", "/v1/projects/shop/messages:send"
cases = [
    ("form, 22,800 data keys", legacy, "key=" + key, "application/x-www-form-urlencoded;charset=UTF-8",
     ("registration_id=abc&" + "&".join(f"data.{i}=x" for i in range(22800))).encode()),
    ("json, 22,000 data keys", legacy, "key=" + key, "application/json",
     json.dumps({"to": "abc", "data": {str(i): "x" for i in range(22000)}}).encode()),
    ("v1, 16,000 apns.payload keys", v1, "Bearer " + access, "application/json",
     json.dumps({"message": {"token": token, "apns": {"payload": {f"k{i}": "x" for i in range(16000)}}}}).encode()),
]
for name, path, authorization, content_type, body in cases:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    before, started = cpu_seconds(), time.time()
    connection.request("POST", path, body, {"Authorization": authorization, "Content-Type": content_type})
    response = connection.getresponse()
    answer = response.read()[:60]
    print(f"{name}: {len(body):,} bytes -> {response.status} {answer!r}; "
          f"daemon CPU {cpu_seconds() - before:.2f} s, wall {time.time() - started:.2f} s")
    connection.close()
PY
