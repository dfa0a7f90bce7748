#!/usr/bin/env bash
# System calls, CPU and rate per send at the closed-loop shape of goal (c) (issue #10).
#
#   Benchmarks/syscalls.sh                          # 20,000 sends, h2load -c 8 -m 1 --h1, one offline device
#   STREAM=1 Benchmarks/syscalls.sh                 # the device holds a stream: every send is also delivered
#   SENDS=40000 TRACE=0 Benchmarks/syscalls.sh      # without perf attached: sends/s and CPU undisturbed
#   PUSHRELAY_BIN=/path/to/pushrelay Benchmarks/syscalls.sh
# Also printed: the CPU per send of each of the daemon's threads by name (the writer, the checkpointer, the event loops).
#
# The release daemon runs on loopback with a fresh data directory; one device is registered; `perf trace -s` is
# attached to it (every thread) while `h2load -n SENDS -c 8 -m 1 --h1` POSTs single-token sends (the seed scenario's
# body) to /fcm/send, every answer checked. Printed: each system call per send (count / SENDS, and its wall time per
# send, which includes sleeping in it), the sends/s and the daemon's CPU per send (utime + stime from /proc over the
# run). perf adds its own cost to every call, so sends/s and CPU under TRACE=1 are for comparing builds with each
# other, not with the relay benchmark's figures; TRACE=0 measures them without perf. Needs root or a permissive
# kernel.perf_event_paranoid (perf trace reads syscall tracepoints).
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib/apt-install.sh
. Benchmarks/lib/h2load-checked.sh
. Benchmarks/lib/seed-device.sh

sends=${SENDS:-20000}
trace=${TRACE:-1}
tools=(nghttp2-client curl python3)
[ "$trace" = 1 ] && tools+=(linux-perf)
apt_install_missing syscalls "${tools[@]}"

if [ -n "${PUSHRELAY_BIN:-}" ]; then
  bin=$PUSHRELAY_BIN
else
  swift build -c release --product pushrelay --scratch-path .build-release >&2
  bin="$(swift build -c release --scratch-path .build-release --show-bin-path)/pushrelay"
fi

work=$(mktemp -d)
daemon="" listener="" tracer=""
cleanup() {
  for p in $tracer $listener $daemon; do { kill -KILL "$p" && wait "$p"; } 2> /dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

project=$("$bin" project create bench --data-dir "$work/data" --json)
"$bin" serve --init --listen 127.0.0.1:0 --data-dir "$work/data" --log-level warning --device-message-rate 0 \
  --project-message-rate 0 > "$work/daemon.log" 2>&1 &
daemon=$!
port=""
for _ in $(seq 1 150); do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/daemon.log" 2> /dev/null | head -1 | sed 's/.*://') ||
    true
  [ -n "$port" ] && break
  kill -0 "$daemon" 2> /dev/null || { cat "$work/daemon.log" >&2; exit 1; }
  sleep 0.2
done
[ -n "$port" ] || { echo "the daemon did not listen within 30 s" >&2; exit 1; }

seed_register "$port" "$project"
if [ "${STREAM:-0}" = 1 ]; then
  seed_open_stream "$port" "$work/stream.txt"
  listener=$SEED_LISTENER
fi
seed_send_body "$work/send.json"

if [ "$trace" = 1 ]; then
  perf trace -s -p "$daemon" -o "$work/trace.txt" > /dev/null 2>&1 &
  tracer=$!
  sleep 1  # perf trace attaches to every thread before the run starts
fi
cpu() { awk '{print $14 + $15}' "/proc/$daemon/stat"; }
# Each thread's name and CPU ticks so far, one line each (the writer, the checkpointer, the event loops, the pool).
threads() {
  local t
  for t in /proc/"$daemon"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' < "$t/comm" 2> /dev/null)" "$(sed 's/.*) //' "$t/stat" 2> /dev/null |
      awk '{print $12 + $13}')"
  done
}
ticks=$(getconf CLK_TCK)
cpu_before=$(cpu)
threads > "$work/threads-before"
out=$(h2load_checked http/1.1 -n "$sends" -c 8 -m 1 --h1 -t 1 -d "$work/send.json" \
  -H 'Content-Type: application/json' -H "Authorization: key=$SEED_SERVER_KEY" "http://127.0.0.1:$port/fcm/send")
cpu_after=$(cpu)
threads > "$work/threads-after"
if [ -n "$tracer" ]; then
  kill -INT "$tracer"
  wait "$tracer" 2> /dev/null || true
  tracer=""
fi
[ -z "$listener" ] || seed_wait_delivered "$work/stream.txt" "$sends" 10

rate=$(echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
echo "binary $bin"
echo "h2load -n $sends -c 8 -m 1 --h1, single-token /fcm/send, one $([ "${STREAM:-0}" = 1 ] &&
  echo 'streaming device: every send delivered' || echo 'offline device')$([ "$trace" = 1 ] && echo ', perf trace attached')"
python3 - "$sends" "$rate" "$cpu_before" "$cpu_after" "$ticks" "$work/trace.txt" "$trace" "$work" << 'PY'
import re, sys
sends, rate = int(sys.argv[1]), float(sys.argv[2])
cpu_us = (float(sys.argv[4]) - float(sys.argv[3])) / int(sys.argv[5]) * 1e6 / sends
print(f"{rate:,.0f} sends/s, daemon CPU {cpu_us:.1f} us per send")
def threads(path):
    totals = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            totals[parts[0]] = totals.get(parts[0], 0) + int(parts[1])
    return totals
before, after = threads(sys.argv[8] + "/threads-before"), threads(sys.argv[8] + "/threads-after")
by_thread = {name: (after[name] - before.get(name, 0)) / int(sys.argv[5]) * 1e6 / sends for name in after}
print("CPU per send by thread (us): " + ", ".join(
    f"{name} {us:.1f}" for name, us in sorted(by_thread.items(), key=lambda x: -x[1]) if us >= 0.05))
if sys.argv[7] != "1":
    sys.exit(0)
calls = {}
for line in open(sys.argv[6], errors="replace"):
    # perf trace -s: per thread, "   syscall   calls  errors  total(msec) ..."
    m = re.match(r"\s+([a-z_0-9]+)\s+(\d+)\s+\d+\s+([\d.]+)", line)
    if m and m.group(1) != "syscall":
        count, msec = calls.get(m.group(1), (0, 0.0))
        calls[m.group(1)] = (count + int(m.group(2)), msec + float(m.group(3)))
print("system calls per send (every thread), and their wall time per send (sleeping in them included):")
for name, (count, msec) in sorted(calls.items(), key=lambda x: -x[1][0]):
    if count / sends >= 0.005:
        print(f"  {name:<16} {count / sends:6.2f}   {msec * 1000 / sends:8.1f} us")
PY
