#!/usr/bin/env python3
"""Issue #11's benchmark: one node on SQLite, and one, two and three nodes on one PostgreSQL, in the same run.

  durable sends   h2load -c 16 -m 32 (HTTP/2) POSTing one registered token to /fcm/send for --duration seconds,
                  the 16 connections split over the nodes (one h2load per node, run together); every answer must be
                  a 200 with a committed message id. Reports sends/s (all nodes together), the daemons' and
                  PostgreSQL's CPU per send.
  cross-node      the real-sender shape of issue #10 through relaygen (C): 8 keep-alive HTTP/1.1 senders on an
                  open-loop schedule at --rate msg/s to node A, 200 listeners streaming from the last node
                  (--listen-port), acknowledging; latency from each message's scheduled time to its arrival on the
                  other node, every unsent, failed or lost message counted.

PostgreSQL is a throwaway cluster (Debian's postgresql; initdb as the postgres user in a temporary directory, on a
free loopback port, fsync and synchronous_commit on, as in production). Usage (run-relay.sh builds what it needs):

  Benchmarks/relay/postgres.py --pushrelay-bin .build-release/release/pushrelay --relaygen .build-bench/relaygen
"""
import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402
import run  # noqa: E402
import servers  # noqa: E402
from run import log  # noqa: E402


class Postgres:
    """A throwaway PostgreSQL cluster on a free loopback port."""

    def __init__(self, work: str):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            raise RuntimeError("PostgreSQL not found: apt-get install postgresql")
        self.bin = os.path.dirname(bins[-1])
        self.dir = os.path.join(work, "pgdata")
        os.makedirs(self.dir)
        shutil.chown(work, "postgres")
        shutil.chown(self.dir, "postgres")
        self.port = servers.free_port()
        self._as_postgres([f"{self.bin}/initdb", "-D", self.dir, "-A", "trust", "-U", "postgres", "--no-sync"])
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                "-c fsync=on -c synchronous_commit=on -c shared_buffers=256MB")
        self._as_postgres([f"{self.bin}/pg_ctl", "-D", self.dir, "-o", opts, "-w", "-l",
                           os.path.join(self.dir, "log"), "start"])

    def _as_postgres(self, argv: list) -> str:
        return subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True,
                              text=True, timeout=120).stdout

    def database(self, name: str) -> str:
        self._as_postgres([f"{self.bin}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-c",
                           f"CREATE DATABASE {name}"])
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def pids(self) -> list:
        """The postmaster; its children (the daemons' connections) are counted through it."""
        with open(os.path.join(self.dir, "postmaster.pid")) as f:
            return [int(f.readline())]

    def stop(self) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", f"{self.bin}/pg_ctl", "-D", self.dir, "-m", "fast",
                        "stop"], capture_output=True, timeout=60)


def cpu_of(pids: list) -> float:
    """CPU seconds of `pids` (processes that ended meanwhile count as 0)."""
    total = 0.0
    for pid in pids:
        try:
            total += loadgen.proc_cpu([pid])
        except (FileNotFoundError, ProcessLookupError, OSError):
            pass
    return total


def start_nodes(args, work: str, count: int, url: str | None) -> list:
    nodes = []
    for i in range(count):
        extra = ["--store", "postgres", "--postgres-url", url] if url else []
        data = os.path.join(work, f"data-{'pg' if url else 'sqlite'}-{count}-{i}")
        nodes.append(run.start(servers.start_pushrelay(args.pushrelay_bin, work, data, extra)))
    return nodes


def durable_sends(args, work: str, nodes: list, token: str, key: str, pg: Postgres | None) -> dict:
    body_file = os.path.join(work, "single.json")
    with open(body_file, "w") as f:
        json.dump({**run.SCENARIO_BODY, "to": token}, f)
    headers = ["Content-Type: application/json", f"Authorization: key={key}"]
    per_node = max(1, 16 // len(nodes))
    flags = f"-c {per_node} -m 32"
    daemon_pids = [n.pid for n in nodes]
    pg_pids = pg.pids() if pg else []
    cpu0, pg0 = cpu_of(daemon_pids), cpu_of(pg_pids)
    switches0 = loadgen.proc_switches(daemon_pids)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(len(nodes)) as pool:
        runs = list(pool.map(
            lambda node: run.h2load(f"http://127.0.0.1:{node.port}/fcm/send", body_file, headers, flags,
                                    args.duration), nodes))
    wall = time.monotonic() - t0
    done = sum(r.get("done", 0) for r in runs)
    daemon_cpu, pg_cpu = cpu_of(daemon_pids) - cpu0, cpu_of(pg_pids) - pg0
    switches = loadgen.proc_switches(daemon_pids) - switches0
    out = {
        "flags": f"{flags} per node ({len(nodes)} node{'s' if len(nodes) > 1 else ''})",
        "sends_per_s": sum(r.get("req_per_s", 0) for r in runs), "done": done,
        "daemon_cores": daemon_cpu / wall, "postgres_cores": pg_cpu / wall if pg else None,
        "daemon_cpu_per_send_us": daemon_cpu / done * 1e6 if done else None,
        "daemon_switches_per_send": switches / done if done else None,
        "postgres_cpu_per_send_us": pg_cpu / done * 1e6 if done and pg else None,
        "runs": runs,
    }
    failed = [r["failure"] for r in runs if r.get("failure")]
    if failed:
        out["failure"] = "; ".join(failed)
    log(f"  durable sends: {out['sends_per_s']:,.0f}/s, daemons {out['daemon_cores']:.2f} cores "
        f"({out['daemon_cpu_per_send_us'] or 0:.0f} us/send, {out['daemon_switches_per_send'] or 0:.2f} context "
        f"switches/send)"
        + (f", PostgreSQL {out['postgres_cores']:.2f} cores ({out['postgres_cpu_per_send_us'] or 0:.0f} us/send)"
           if pg else "") + (f" FAILED: {out['failure']}" if failed else ""))
    return out


def cross_node(args, nodes: list, devices: list, key: str, pg: Postgres | None) -> dict:
    """The real-sender shape: sends to the first node, streams on the last."""
    sender, listener = nodes[0], nodes[-1]
    ns = argparse.Namespace(**{**vars(args), "listeners": len(devices), "senders": 8, "settle": 1.0})
    argv_extra = ["--listen-port", str(listener.port)] if listener is not sender else []
    return real_senders_to(ns, sender.port, argv_extra, [n.pid for n in nodes] + (pg.pids() if pg else []),
                           devices, key)


def real_senders_to(ns, port: int, argv_extra: list, pids: list, devices: list, key: str) -> dict:
    """run.real_senders with extra relaygen arguments (the listeners' node)."""
    saved = ns.relaygen
    wrapper = os.path.join(ns.work_dir, "relaygen-wrapper.sh")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec {saved} \"$@\" {' '.join(argv_extra)}\n")
    os.chmod(wrapper, 0o755)
    ns.relaygen = wrapper
    try:
        return run.real_senders("pushrelay", port, ns.rate, ns, pids, devices, key)
    finally:
        ns.relaygen = saved


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pushrelay-bin", required=True)
    ap.add_argument("--relaygen", required=True)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3], help="PostgreSQL node counts")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--drain", type=float, default=5)
    ap.add_argument("--rate", type=int, default=2000, help="cross-node real-sender rate, msg/s")
    ap.add_argument("--listeners", type=int, default=200)
    ap.add_argument("--ack-interval", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=".build-bench/postgres-results.json")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pushrelay-pg-bench-")
    args.work_dir = work
    res = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "loadavg": os.getloadavg()}
    pg = None
    try:
        res["fdatasync_ms"] = run.fdatasync_ms(work)
        # One node on SQLite: the reference.
        log("SQLite, one node")
        nodes = start_nodes(args, work, 1, None)
        project = servers.pushrelay_project(args.pushrelay_bin, os.path.join(work, "data-sqlite-1-0"), "bench")
        devices = run.register(nodes[0].port, project, args.listeners)
        res["sqlite"] = {"sends": durable_sends(args, work, nodes, devices[0]["token"], project["server_key"], None),
                         "cross_node": cross_node(args, nodes, devices, project["server_key"], None)}
        for n in nodes:
            run.stop(n)
        pg = Postgres(work)
        res["postgres"] = {}
        for count in args.nodes:
            log(f"PostgreSQL, {count} node{'s' if count > 1 else ''}")
            url = pg.database(f"bench{count}")
            nodes = start_nodes(args, work, count, url)
            project = json.loads(subprocess.run(
                [args.pushrelay_bin, "project", "create", "bench", "--store", "postgres", "--postgres-url", url,
                 "--json"], check=True, capture_output=True, text=True, timeout=60).stdout)
            devices = run.register(nodes[0].port, project, args.listeners)
            res["postgres"][str(count)] = {
                "sends": durable_sends(args, work, nodes, devices[0]["token"], project["server_key"], pg),
                "cross_node": cross_node(args, nodes, devices, project["server_key"], pg),
            }
            for n in nodes:
                run.stop(n)
    finally:
        run.stop_all()
        if pg:
            pg.stop()
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, default=str)
        shutil.rmtree(work, ignore_errors=True)
    failures = []
    rows = [("SQLite, 1 node", res.get("sqlite"))] + [
        (f"PostgreSQL, {k} node{'s' if k != '1' else ''}", v) for k, v in res.get("postgres", {}).items()]
    print("\n| store | durable sends/s (h2load -c 16 -m 32) | daemons µs CPU/send | daemons' context switches/send | PostgreSQL µs CPU/send | "
          f"cross-node at {args.rate}/s: achieved, p50 / p99 ms | lost |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        if not r:
            continue
        s, c = r["sends"], r["cross_node"]
        lat = c.get("latency", {})
        print(f"| {name} | {s['sends_per_s']:,.0f} | {s['daemon_cpu_per_send_us'] or 0:.0f} | "
              f"{s.get('daemon_switches_per_send') or 0:.2f} | "
              f"{(s['postgres_cpu_per_send_us'] or 0):.0f} | {c.get('send_rate', 0):,.0f}, "
              f"{lat.get('p50_us', 0) / 1000:.2f} / {lat.get('p99_us', 0) / 1000:.2f} | {c.get('lost', 0)} |")
        failures += [f"{name} sends: {s['failure']}"] if s.get("failure") else []
        failures += [f"{name} cross-node: {c['failure']}"] if c.get("failure") else []
        # Every message may arrive during the drain and still the senders fell behind the schedule: say so.
        if not c.get("failure") and c.get("send_rate", 0) < 0.99 * args.rate:
            failures.append(f"{name} cross-node: not the full rate ({c.get('send_rate', 0):,.0f}/s of {args.rate:,}/s)")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
