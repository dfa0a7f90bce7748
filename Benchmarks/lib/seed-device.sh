# Sourced by the per-send benchmarks (instructions.sh, syscalls.sh): a device of a fresh project, its stream, and the
# seed scenario's send body.

# seed_register PORT PROJECT_JSON: registers a device of the project that `pushrelay project create --json` printed;
# sets SEED_SERVER_KEY, SEED_TOKEN, SEED_SECRET and SEED_PROJECT (its name).
seed_register() {
  local port=$1 project=$2 client_key project_name device
  read -r client_key SEED_SERVER_KEY project_name <<< "$(python3 -c \
    'import json,sys; p=json.loads(sys.argv[1]); print(p["client_key"], p["server_key"], p["project"])' "$project")"
  SEED_PROJECT=$project_name
  device=$(curl -sf --max-time 60 -H "Authorization: key=$client_key" -H 'Content-Type: application/json' \
    -d "{\"project\":\"$project_name\",\"app\":\"bench\",\"platform\":\"ios\"}" "http://127.0.0.1:$port/v1/register")
  read -r SEED_TOKEN SEED_SECRET <<< "$(python3 -c \
    'import json,sys; d=json.loads(sys.argv[1]); print(d["token"], d["secret"])' "$device")"
}

# seed_open_stream PORT OUT: opens the device's stream (`curl -N`) into OUT and waits up to 60 s until it is
# connected; sets SEED_LISTENER (the curl process).
seed_open_stream() {
  local port=$1 out=$2
  curl -sN --max-time 3600 -H "Authorization: Bearer $SEED_SECRET" "http://127.0.0.1:$port/v1/stream" > "$out" &
  SEED_LISTENER=$!
  for _ in $(seq 1 600); do
    grep -q ': connected' "$out" 2> /dev/null && return 0
    sleep 0.1
  done
  echo "the stream did not open" >&2
  return 1
}

# seed_send_body FILE: writes the seed scenario's single-token send to the device (SEED_TOKEN).
seed_send_body() {
  python3 - "$SEED_TOKEN" > "$1" << 'PY'
import json, sys
print(json.dumps({"to": sys.argv[1], "priority": "high", "content_available": True, "notification": {
    "body": "Status do pedido", "title": "Provedor de Mensagens", "orderInfo": {
        "infoReason": "Status de pedido", "orderID": 3, "userEmail": "matilde@siecola.com.br",
        "newOrderStatus": "Novo pedido"}}}))
PY
}

# seed_wait_delivered OUT COUNT SECONDS: waits until OUT holds COUNT events (every send delivered); after SECONDS,
# fails saying how many came.
seed_wait_delivered() {
  local out=$1 count=$2 delivered=0
  for _ in $(seq 1 $(($3 * 10))); do
    delivered=$(grep -c '^id: ' "$out" || true)
    [ "$delivered" -ge "$count" ] && return 0
    sleep 0.1
  done
  echo "the stream got $delivered of $count messages" >&2
  return 1
}

# seed_v1_access_token BIN DATA_DIR PORT OUT_DIR: a service-account file for SEED_PROJECT (`pushrelay project
# service-account`, into OUT_DIR/sa.json) and an FCM HTTP v1 access token for it, obtained from the daemon's
# `/token` by Python google-auth as a v1 library does; sets SEED_ACCESS_TOKEN.
seed_v1_access_token() {
  local bin=$1 dir=$2 port=$3 out=$4
  "$bin" project service-account "$SEED_PROJECT" --data-dir "$dir" --public-url "http://127.0.0.1:$port" \
    --out "$out/sa.json" > /dev/null
  SEED_ACCESS_TOKEN=$(python3 - "$out/sa.json" << 'PY'
import sys
from google.oauth2 import service_account
from google.auth.transport.requests import Request
c = service_account.Credentials.from_service_account_file(sys.argv[1],
    scopes=["https://www.googleapis.com/auth/firebase.messaging"])
c.refresh(Request())
print(c.token)
PY
  )
}

# seed_v1_send_body FILE: the seed scenario as an FCM HTTP v1 message to the device (SEED_TOKEN): `notification`,
# `data.orderInfo` as JSON text, the APNs priority header and `content-available`.
seed_v1_send_body() {
  python3 - "$SEED_TOKEN" > "$1" << 'PY'
import json, sys
order = json.dumps({"infoReason": "Status de pedido", "orderID": 3, "userEmail": "matilde@siecola.com.br",
                    "newOrderStatus": "Novo pedido"})
print(json.dumps({"message": {"token": sys.argv[1],
    "notification": {"title": "Provedor de Mensagens", "body": "Status do pedido"}, "data": {"orderInfo": order},
    "apns": {"headers": {"apns-priority": "10"}, "payload": {"aps": {"content-available": 1}}}}}))
PY
}
