#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine with the Swift toolchain, builds a release binary and runs
# the daemon on its embedded SQLite store. On the first run it creates a project and prints how to register a
# device and send the first message.
#
#   PUSHRELAY_DATA_DIR   where the store lives (default ./data)
#   PUSHRELAY_LISTEN     HOST:PORT to listen on (default 127.0.0.1:8080)
# Extra arguments are passed to `pushrelay serve` (see `pushrelay serve --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product pushrelay
bin="$(swift build -c release --show-bin-path)/pushrelay"
data_dir="${PUSHRELAY_DATA_DIR:-$PWD/data}"
listen="${PUSHRELAY_LISTEN:-127.0.0.1:8080}"
mkdir -p "$data_dir"

if [ -z "$("$bin" project list --data-dir "$data_dir")" ]; then
  keys="$("$bin" project create default --data-dir "$data_dir" --json)"
  field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$keys" "$1"; }
  server_key="$(field server_key)"; client_key="$(field client_key)"; sender_id="$(field sender_id)"
  url="http://$listen"
  cat <<MSG

Created project "default" (sender id $sender_id). These keys are shown only once; keep them:
  server key (senders, secret): $server_key
  client key (apps):            $client_key

Send your first message (each command works as pasted):
  1. In another terminal, register a device (its token and secret go to $PWD/device.json) and wait for messages:
       $bin listen --server $url --project default --client-key $client_key --save $PWD/device.json
  2. In a third terminal, send to that device's token, as any FCM legacy back end would:
       TOKEN=\$(python3 -c 'import json; print(json.load(open("$PWD/device.json"))["token"])')
       curl -X POST $url/fcm/send -H 'Authorization: key=$server_key' \\
            -H 'Content-Type: application/json' \\
            -d "{\"to\": \"\$TOKEN\", \"notification\": {\"title\": \"Hello\", \"body\": \"First message\"}}"

The binary is $bin (add its directory to PATH for the README's commands).

MSG
else
  cat <<MSG

Using the existing store in $data_dir. Its keys were printed once, when each project was created:
  list the projects:        $bin project list --data-dir $data_dir
  a new server key:         $bin project rotate-key NAME --data-dir $data_dir   (the old one works for the grace period)
  start over:               stop the daemon, remove $data_dir, run this script again

MSG
fi
exec "$bin" serve --listen "$listen" --data-dir "$data_dir" "$@"
