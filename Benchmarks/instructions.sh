#!/usr/bin/env bash
# Instructions per send: a cost figure that a noisy, shared machine cannot blur (issue #10).
#
#   Benchmarks/instructions.sh                      # 2,000 and 500 sends; prints instructions per send
#   SENDS=4000 BASE=1000 Benchmarks/instructions.sh
#   PUSHRELAY_BIN=/path/to/pushrelay Benchmarks/instructions.sh   # another binary (default: the release build)
#   KEEP=dir Benchmarks/instructions.sh             # keep the callgrind outputs (callgrind_annotate them)
#   TOP=40 Benchmarks/instructions.sh               # functions listed by instructions per send (default 25)
#   STREAM=1 Benchmarks/instructions.sh             # the device holds a stream: each send is also delivered
#   SHAPE=h2 Benchmarks/instructions.sh             # h2load -c 16 -m 32 over HTTP/2 (h2c) instead of -c 1 -m 1 --h1
#   API=v1 Benchmarks/instructions.sh               # the same send through FCM HTTP v1 (messages:send, Bearer token)
#
# The daemon runs under `valgrind --tool=callgrind` (every thread, one count) on loopback with a fresh data directory.
# One device is registered; then `h2load -n COUNT -c 1 -m 1 --h1` POSTs COUNT single-token sends (the seed scenario's
# body) to /fcm/send on one HTTP/1.1 keep-alive connection, one request at a time, every answer checked (200,
# success 1); then SIGTERM, and callgrind's total of instructions executed. This is done twice, with SENDS and
# BASE sends: startup, registration and shutdown are the same in both runs, so
#     instructions per send = (I(SENDS) - I(BASE)) / (SENDS - BASE).
# The device is offline, so its queue passes the 100-message limit every 100 sends (both counts are multiples of 100:
# the queue policy's work is in the figure, as in production). One request at a time means one commit per send.
# With SHAPE=h2 the sends go over HTTP/2 instead, 16 connections with 32 streams each (goal (c)'s second shape), so
# commits are grouped: the figure is the amortized cost of a send at high concurrency. (Callgrind runs one thread at a
# time, so the groups are not the sizes of a real run; compare builds with each other, not with SHAPE=h1.)
# With STREAM=1 the device holds `GET /v1/stream` (curl -N) throughout, so every send is also written to it as an
# event (checked: every message id arrives); the difference from a run without it is the cost of a delivery.
# With API=v1 the sends are the same message through FCM HTTP v1 (`/v1/projects/bench/messages:send` with an access
# token that Python google-auth obtained from the daemon's `/token`, as in v1-send.sh); the token's issue is in both
# runs, so it cancels out like the registration.
# The daemon runs with `auth_recheck_interval = 1h` (through the environment, which older binaries ignore): callgrind
# slows it ~50x, so the default 250 ms recheck of the credentials epoch came every few milliseconds of real-speed work,
# and each time every send already in flight (SHAPE=h2: hundreds) took the database path for its server key (a task,
# a SHA-256, a read): ~7 % of SHAPE=h2's figure, varying with the host's speed. At full speed the recheck comes 4 times
# a second and sends about 2 sends that way each time, 1 in 2,600 (a uprobe count during `run-relay.sh --only sends`).
# The count moves with the code (and the toolchain, SQLite, libnghttp2 versions), and a little with the machine's
# load: callgrind runs one thread at a time, and how their turns fall (the requests one group commit gathers, the
# event-loop ticks of a request) follows the host's timing — ±1 % at SHAPE=h2 and STREAM=1 with a fuzzer on the other
# core. Compare binaries alternated in one sitting. Wall time: a few minutes (the daemon runs ~50x slower).
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib/h2load-checked.sh
. Benchmarks/lib/seed-device.sh

sends=${SENDS:-2000}
base=${BASE:-500}
shape=${SHAPE:-h1}
case $shape in
  h1) load=(http/1.1 -c 1 -m 1 --h1) ;;
  h2) load=(h2c -c 16 -m 32) ;;
  *) echo "SHAPE must be h1 or h2, not '$shape'" >&2; exit 2 ;;
esac
api=${API:-legacy}
case $api in legacy | v1) ;; *) echo "API must be legacy or v1, not '$api'" >&2; exit 2 ;; esac
[ "$sends" -gt "$base" ] || { echo "SENDS ($sends) must be greater than BASE ($base)" >&2; exit 2; }

for tool in valgrind h2load curl python3 cc strip; do
  command -v "$tool" > /dev/null || {
    echo "instructions: $tool is missing; installing valgrind, nghttp2-client, curl, gcc, binutils" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends valgrind nghttp2-client \
      curl gcc libc6-dev binutils > /dev/null
    break
  }
done

if [ -n "${PUSHRELAY_BIN:-}" ]; then
  bin=$PUSHRELAY_BIN
else
  if [ "${PUSHRELAY_SKIP_BUILD:-0}" != 1 ]; then
    swift build -c release --product pushrelay --scratch-path .build-release >&2
  fi
  bin="$(swift build -c release --scratch-path .build-release --show-bin-path)/pushrelay"
fi

work=$(mktemp -d)
daemon=""
# valgrind 3.19 cannot read the toolchain's DWARF 5 ("Possibly corrupted debuginfo file"): measure a copy without
# debug sections (the same code; function names stay in the symbol table), with the sigsuspend shim preloaded.
cp "$bin" "$work/pushrelay"
strip --strip-debug "$work/pushrelay"
cc -O2 -shared -fPIC -o "$work/sigsuspend-shim.so" Benchmarks/lib/valgrind-sigsuspend-shim.c -ldl
cleanup() {
  [ -z "$daemon" ] || kill -KILL "$daemon" 2> /dev/null || true
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/callgrind.* "$KEEP"/ 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Runs the daemon under callgrind, sends COUNT single-token sends, stops it; prints the total instructions.
measure() { # count
  local count=$1 dir="$work/data-$1" out="$work/callgrind.$1"
  mkdir -p "$dir"
  local project
  project=$("$work/pushrelay" project create bench --data-dir "$dir" --json)
  PUSHRELAY_AUTH_RECHECK_INTERVAL=1h LD_PRELOAD="$work/sigsuspend-shim.so" valgrind --tool=callgrind --callgrind-out-file="$out" --dump-instr=no \
    --collect-jumps=no "$work/pushrelay" serve --init --listen 127.0.0.1:0 --data-dir "$dir" --log-level warning --device-message-rate 0 --project-message-rate 0 > "$work/daemon-$count.log" 2>&1 &
  daemon=$!
  local port=""
  for _ in $(seq 1 600); do # up to 120 s: startup under callgrind is slow
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/daemon-$count.log" 2> /dev/null | head -1 |
      sed 's/.*://') || true
    [ -n "$port" ] && break
    kill -0 "$daemon" 2> /dev/null || { cat "$work/daemon-$count.log" >&2; exit 1; }
    sleep 0.2
  done
  [ -n "$port" ] || { echo "the daemon did not listen within 120 s" >&2; cat "$work/daemon-$count.log" >&2; exit 1; }

  seed_register "$port" "$project"
  local listener=""
  if [ "${STREAM:-0}" = 1 ]; then
    seed_open_stream "$port" "$work/stream-$count.txt" || exit 1  # measure runs in $(...): no errexit there
    listener=$SEED_LISTENER
  fi
  local url authorization expected
  if [ "$api" = v1 ]; then
    seed_v1_access_token "$work/pushrelay" "$dir" "$port" "$work"
    seed_v1_send_body "$work/send.json"
    url="http://127.0.0.1:$port/v1/projects/$SEED_PROJECT/messages:send"
    authorization="Bearer $SEED_ACCESS_TOKEN"
    expected='"name":"projects/'
  else
    seed_send_body "$work/send.json"
    url="http://127.0.0.1:$port/fcm/send"
    authorization="key=$SEED_SERVER_KEY"
    expected='"success":1'
  fi
  local answer
  answer=$(curl -sf --max-time 60 -H "Authorization: $authorization" -H 'Content-Type: application/json' \
    -d @"$work/send.json" "$url")
  case $answer in *"$expected"*) ;; *) echo "the check send answered: $answer" >&2; exit 1 ;; esac
  # count - 1 more sends: with the check above, COUNT sends in all.
  h2load_checked "${load[0]}" -n $((count - 1)) "${load[@]:1}" -t 1 -d "$work/send.json" \
    -H 'Content-Type: application/json' -H "Authorization: $authorization" "$url" > "$work/h2load-$count.txt"
  if [ -n "$listener" ]; then
    seed_wait_delivered "$work/stream-$count.txt" "$count" 120 || exit 1
    kill "$listener" 2> /dev/null || true
    wait "$listener" 2> /dev/null || true
  fi
  kill -TERM "$daemon"
  wait "$daemon" || true
  daemon=""
  local total
  total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p; s/^summary: *\([0-9]*\).*/\1/p' "$out" | head -1)
  [ -n "$total" ] || { echo "no instruction total in $out" >&2; exit 1; }
  echo "$total"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
i_base=$(measure "$base")
i_sends=$(measure "$sends")
callgrind_annotate --threshold=100 "$work/callgrind.$base" > "$work/annotate.$base" 2> /dev/null || true
callgrind_annotate --threshold=100 "$work/callgrind.$sends" > "$work/annotate.$sends" 2> /dev/null || true
python3 - "$sends" "$base" "$i_sends" "$i_base" "$bin" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$work/annotate.$sends" "$work/annotate.$base" "${TOP:-25}" "$work/" "${STREAM:-0}" "${load[*]:1}" "$api" << 'PY' |
import re, sys
sends, base, i_sends, i_base = map(int, sys.argv[1:5])
print(f"binary {sys.argv[5]}")
print(f"daemon instructions: {i_base:,} with {base:,} sends, {i_sends:,} with {sends:,} sends "
      f"(h2load {sys.argv[13]}, single-token {'/fcm/send' if sys.argv[14] == 'legacy' else 'v1 messages:send'}, one "
      f"{'streaming device: every send delivered' if sys.argv[12] == '1' else 'offline device'})")
per = (i_sends - i_base) / (sends - base)
print(f"instructions per send: {per:,.0f}   "
      f"(load average {sys.argv[6]} before, {sys.argv[7]} after; compare binaries alternated in one sitting)")


def functions(path):  # callgrind_annotate's self cost per function
    out = {}
    try:
        for line in open(path, errors="replace"):
            m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*\S)", line)
            if m and "PROGRAM TOTALS" not in m.group(2):
                out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    except OSError:
        pass
    return out


a, b = functions(sys.argv[8]), functions(sys.argv[9])
diff = sorted(((a.get(k, 0) - b.get(k, 0)) / (sends - base), k) for k in set(a) | set(b))[::-1]
top = int(sys.argv[10])
if diff:
    objects = {}
    for v, k in diff:
        m = re.search(r"\[([^\]]*)\]$", k)
        name = (m.group(1).rsplit("/", 1)[-1] if m else "(no object named)")
        objects[name] = objects.get(name, 0) + v
    print("\nper send, by object (self instructions):")
    for name, v in sorted(objects.items(), key=lambda x: -x[1]):
        if abs(v) >= per * 0.005:
            print(f"{v:>10,.0f}  {v / per * 100:5.1f}%  {name}")
if diff and top:
    print(f"\nper send, by function (self instructions, the difference of the two runs; top {top}):")
    for v, k in diff[:top]:
        print(f"{v:>10,.0f}  {v / per * 100:5.1f}%  {k.replace(sys.argv[11], '')}")
PY
  if command -v swift-demangle > /dev/null; then swift-demangle --simplified; else cat; fi | cut -c1-200
