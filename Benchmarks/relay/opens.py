"""Stream opens: what one device's `GET /v1/stream` costs the daemon, one at a time (issue #10).

A reconnection storm after a restart opens every device's stream at once; this measures the work of one opening
alone, without the storm's batching: a daemon on loopback with COUNT registered devices (none of them in its caches),
then COUNT streams opened one after another from one connection each — connect, `GET /v1/stream` with the device's
secret, read until the `: connected` comment, close. Printed per opening: the daemon's CPU (utime + stime of every
thread, /proc), its context switches (voluntary and not, every thread) and the openings per second. Several binaries
are measured in turn, ROUNDS times, alternated: compare within one run.
"""
import argparse
import glob
import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402
import run  # noqa: E402
import servers  # noqa: E402


def switches(pid: int) -> int:
    total = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(status) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def open_stream(port: int, secret: str) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /v1/stream HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {secret}\r\n\r\n".encode())
        seen = b""
        while b": connected" not in seen:
            chunk = sock.recv(4096)
            if not chunk:
                raise RuntimeError(f"the stream closed before it opened: {seen[:300]!r}")
            seen += chunk
        if not seen.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"not opened: {seen[:300]!r}")


def measure(binary: str, count: int) -> dict:
    work = tempfile.mkdtemp(prefix="pushrelay-opens-")
    data = os.path.join(work, "data")
    s = servers.start_pushrelay(binary, work, data)
    try:
        project = servers.pushrelay_project(binary, data, "bench")
        devices = run.register(s.port, project, count)
        time.sleep(1)
        pid = s.proc.pid
        cpu0, switches0, t0 = loadgen.proc_cpu([pid]), switches(pid), time.monotonic()
        for device in devices:
            open_stream(s.port, device["secret"])
        wall = time.monotonic() - t0
        time.sleep(0.5)  # the last closes
        return {"cpu_us": (loadgen.proc_cpu([pid]) - cpu0) / count * 1e6,
                "switches": (switches(pid) - switches0) / count, "rate": count / wall}
    finally:
        s.proc.terminate()
        s.proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"stream opens, one at a time, {args.count} devices; load average {os.getloadavg()[0]:.2f}", flush=True)
    for _ in range(args.rounds):
        for binary in args.binaries:
            r = measure(binary, args.count)
            print(f"{binary}: {r['cpu_us']:.1f} us of daemon CPU an opening, {r['switches']:.2f} context switches, "
                  f"{r['rate']:,.0f} openings/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
