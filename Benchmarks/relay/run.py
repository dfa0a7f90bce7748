#!/usr/bin/env python3
"""Runs the relay benchmark, (a)-(d) of issue 4 and the topic fan-out of issue 6, and prints one table.

(a) durable single-token sends/s: h2load POSTs the scenario body to /fcm/send; nghttpd with the same flags.
(b) send-to-receive latency with 1,000 connected listeners at 5,000 and 20,000 msg/s: PushRelay, nginx + nchan
    and mosquitto, driven by loadgen.py in this same run.
(c) (a) with 1, 10, 100 and 1,000 tokens per request (registration_ids).
(d) server memory per idle connected device at 10,000 devices (several client processes, several loopback
    source addresses), and the projection for 200,000.
(e) issue 6 fan-out: a topic send to 10,000 / 100,000 subscribers (only if the daemon has topics).

Every server is started here, on loopback, and stopped on exit. Results go to --out as JSON and the table to stdout.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402
import servers  # noqa: E402

SCENARIO_BODY = {
    "notification": loadgen.SCENARIO_NOTIFICATION,
    "priority": "high",
    "content_available": True,
}
FCM_RESPONSE = (b'{"multicast_id":3529387488852107593,"success":1,"failure":0,"canonical_ids":0,'
                b'"results":[{"message_id":"1603214613006763"}]}')

started: list = []


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def stop_all() -> None:
    while started:
        s = started.pop()
        try:
            s.stop()
        except Exception as e:  # keep stopping the others
            log(f"stopping {s.name}: {e}")


def start(server):
    started.append(server)
    return server


def stop(server) -> None:
    server.stop()
    if server in started:
        started.remove(server)


# ---------------------------------------------------------------------------------------------------------------
# h2load


def h2load(url: str, body_file: str, headers: list, n: int, c: int, m: int, t: int = 1) -> dict:
    loadgen.check_loopback("127.0.0.1")
    argv = ["h2load", "-n", str(n), "-c", str(c), "-m", str(m), "-t", str(t), "-d", body_file]
    for h in headers:
        argv += ["-H", h]
    argv.append(url)
    load0 = os.getloadavg()[0]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    out = p.stdout
    r = {"argv": " ".join(a if " " not in a else repr(a) for a in argv), "loadavg1": load0}
    m_ = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    if m_:
        secs = float(m_.group(1)) / (1000 if m_.group(2) == "ms" else 1)
        r.update(seconds=secs, req_per_s=float(m_.group(3)))
    m_ = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored",
                   out)
    if m_:
        r.update(done=int(m_.group(3)), succeeded=int(m_.group(4)), failed=int(m_.group(5)),
                 errored=int(m_.group(6)))
    m_ = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if m_:
        r.update(s2xx=int(m_.group(1)), s4xx=int(m_.group(3)), s5xx=int(m_.group(4)))
    m_ = re.search(r"time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)", out)
    if m_:
        unit = {"us": 1e-3, "ms": 1, "s": 1e3}
        r.update(req_time_min_ms=float(m_.group(1)) * unit[m_.group(2)],
                 req_time_max_ms=float(m_.group(3)) * unit[m_.group(4)],
                 req_time_mean_ms=float(m_.group(5)) * unit[m_.group(6)])
    if "req_per_s" not in r:
        r["error"] = (out + p.stderr)[-800:]
    return r


# ---------------------------------------------------------------------------------------------------------------
# PushRelay helpers


def post_json(port: int, path: str, headers: dict, body: dict) -> tuple:
    async def go():
        conn = await loadgen.open_http("127.0.0.1", port)
        data = json.dumps(body).encode()
        h = {"Content-Type": "application/json", **headers}
        r = await asyncio.wait_for(conn.fetch(loadgen.http_request("POST", "127.0.0.1", path, h, data)), 60)
        conn.transport.close()
        return r

    loop = loadgen.new_event_loop()
    try:
        return loop.run_until_complete(go())
    finally:
        loop.close()


def register(port: int, project: dict, count: int) -> list:
    loop = loadgen.new_event_loop()
    try:
        t0 = time.monotonic()
        devices = loop.run_until_complete(loadgen.register_devices(
            "127.0.0.1", port, project["client_key"], project["project"], count))
        log(f"registered {count} devices in {time.monotonic() - t0:.1f} s")
        return devices
    finally:
        loop.close()


def latency_cfg(target: str, port: int, rate: int, args, server_pids: list, devices=None, key=None) -> dict:
    pub_procs = 1 if rate <= args.rate_per_publisher else 2
    return {
        "target": target, "host": "127.0.0.1", "port": port, "subscribers": args.listeners, "rate": rate,
        "duration": args.duration, "count": 10_000_000, "sub_procs": args.sub_procs, "pub_procs": pub_procs,
        "conns": 2 if target == "mqtt" else args.conns, "ack_interval": args.ack_interval,
        "server_pids": server_pids, "drain": 10, "devices": devices, "server_key": key,
        "settle": 1.0,
    }


def latency(target: str, port: int, rate: int, args, pids: list, devices=None, key=None) -> dict:
    log(f"(b) {target}: {args.listeners} listeners, {rate} msg/s for {args.duration} s")
    r = loadgen.run_latency(latency_cfg(target, port, rate, args, pids, devices, key))
    lat = r.get("latency", {})
    log(f"    sent ok {r.get('sent_ok')}, received {r.get('received')}, missing {r.get('missing')}, "
        f"p50 {lat.get('p50_us', 0):.0f} us, p99 {lat.get('p99_us', 0):.0f} us, "
        f"p999 {lat.get('p999_us', 0):.0f} us, max {lat.get('max_us', 0):.0f} us, "
        f"achieved {r.get('achieved_rate', 0):.0f}/s, load {r.get('loadavg_during', ['?'])[0]}"
        + (f" ERROR {r['error']}" if r.get("error") else ""))
    if r.get("server_threads"):
        log(f"    server used {r.get('server_cores', 0):.2f} cores; busiest threads "
            f"{list(r['server_threads'].values())[0][:4]}")
    for p in r.get("publishers", []):
        if p.get("first_errors") or p.get("error"):
            log(f"    publisher errors: {p.get('error') or p.get('first_errors')[:2]}")
    return r


def idle(target: str, port: int, pids: list, args, devices=None) -> dict:
    sources = [f"127.0.0.{2 + i}" for i in range(args.idle_sources)]
    log(f"(d) {target}: {args.idle_clients} idle clients from {args.idle_procs} processes, sources {sources}")
    cfg = {"target": target, "host": "127.0.0.1", "port": port, "clients": args.idle_clients,
           "procs": args.idle_procs, "sources": sources, "server_pids": pids, "devices": devices, "hold": 5,
           "settle": 2}
    r = loadgen.run_idle(cfg)
    log(f"    connected {r.get('connected')}, PSS {r['before']['pss_kb']} -> {r.get('after', {}).get('pss_kb')} kB, "
        f"{r.get('pss_per_client_kb', 0):.2f} kB/client; errors {r.get('errors')}")
    return r


def perf_record(pid: int, seconds: float, out_dir: str, name: str) -> subprocess.Popen | None:
    """Samples the daemon's stacks (perf, when the kernel allows it); the report is summarised afterwards."""
    if subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).returncode != 0:
        return None
    data = os.path.join(out_dir, f"perf-{name}.data")
    return subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(pid), "-o", data, "--", "sleep",
                             str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_summary(out_dir: str, name: str, limit: int = 25) -> str:
    data = os.path.join(out_dir, f"perf-{name}.data")
    if not os.path.exists(data):
        return ""
    p = subprocess.run(["perf", "report", "-i", data, "--no-demangle", "--no-children", "--sort", "dso,symbol",
                        "--stdio",
                        "--percent-limit", "1", "-g", "none"], capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    text = p.stdout
    try:  # Swift symbols are mangled; swift-demangle (with the toolchain) makes them readable
        text = subprocess.run(["swift-demangle", "--simplified"], input=text, capture_output=True, text=True,
                              timeout=120).stdout or text
    except (OSError, subprocess.SubprocessError):
        pass
    lines = [ln[:200] for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return "\n".join(lines[:limit])


# ---------------------------------------------------------------------------------------------------------------
# The phases


def phase_nghttpd(work: str, body_file: str, args, res: dict) -> None:
    s = start(servers.start_nghttpd(work, FCM_RESPONSE))
    log(f"(a) nghttpd ceiling on :{s.port}")
    res["a_nghttpd"] = h2load(f"http://127.0.0.1:{s.port}/fcm/send", body_file,
                              ["Content-Type: application/json", "Authorization: key=none"],
                              args.h2_n, args.h2_c, args.h2_m)
    log(f"    {res['a_nghttpd'].get('req_per_s')} req/s")
    stop(s)


def phase_pushrelay_sends(work: str, args, res: dict) -> None:
    data = os.path.join(work, "pushrelay-sends")
    s = start(servers.start_pushrelay(args.pushrelay_bin, work, data))
    project = servers.pushrelay_project(args.pushrelay_bin, data, "bench")
    devices = register(s.port, project, 1000)
    key = project["server_key"]
    url = f"http://127.0.0.1:{s.port}/fcm/send"
    headers = ["Content-Type: application/json", f"Authorization: key={key}"]
    # Check the answer once before measuring: a 200 that is not success:1 would make the figure meaningless.
    status, body = post_json(s.port, "/fcm/send", {"Authorization": f"key={key}"},
                             {**SCENARIO_BODY, "to": devices[0]["token"]})
    res["a_check"] = {"status": status, "body": body[:300].decode(errors="replace")}
    log(f"(a) pushrelay check: {status} {body[:200]!r}")
    body_file = os.path.join(work, "single.json")
    with open(body_file, "w") as f:
        json.dump({**SCENARIO_BODY, "to": devices[0]["token"]}, f)
    rec = perf_record(s.pid, 8, work, "sends") if args.perf else None
    cpu0 = loadgen.proc_cpu([s.pid])
    thr0 = loadgen.thread_cpu(s.pid)
    c0 = commit_stats(s.port)
    syncs = SyncCounter(s.pid)
    t0 = time.monotonic()
    res["a_pushrelay"] = h2load(url, body_file, headers, args.h2_n, args.h2_c, args.h2_m)
    wall = time.monotonic() - t0
    n_sync = syncs.stop()
    res["a_pushrelay"]["fsyncs"] = n_sync
    if n_sync:
        res["a_pushrelay"]["sends_per_fsync"] = res["a_pushrelay"].get("done", 0) / n_sync
        log(f"    {n_sync} fsync/fdatasync calls: {res['a_pushrelay']['sends_per_fsync']:.1f} sends per sync")
    res["a_pushrelay"]["commits"] = commit_delta(c0, commit_stats(s.port), res["a_pushrelay"].get("done", 0), wall)
    log(f"    commits: {res['a_pushrelay']['commits']}")
    res["a_pushrelay"]["server_cpu_s"] = loadgen.proc_cpu([s.pid]) - cpu0
    res["a_pushrelay"]["server_cores"] = res["a_pushrelay"]["server_cpu_s"] / wall
    res["a_pushrelay"]["server_threads"] = loadgen.thread_usage(thr0, loadgen.thread_cpu(s.pid), wall)
    log(f"    daemon used {res['a_pushrelay']['server_cores']:.2f} cores; busiest threads "
        f"{res['a_pushrelay']['server_threads'][:4]}")
    if rec:
        rec.wait(timeout=60)
        res["a_perf"] = perf_summary(work, "sends")
    log(f"(a) pushrelay: {res['a_pushrelay'].get('req_per_s')} req/s "
        f"({res['a_pushrelay'].get('s2xx')} 2xx, {res['a_pushrelay'].get('s5xx')} 5xx)")
    res["c"] = []
    for k in args.tokens_per_request:
        n = max(args.h2_c * 4, args.c_tokens // k)
        bf = os.path.join(work, f"multi-{k}.json")
        with open(bf, "w") as f:
            json.dump({**SCENARIO_BODY, "registration_ids": [d["token"] for d in devices[:k]]}, f)
        r = h2load(url, bf, headers, n, args.h2_c, args.h2_m)
        r["tokens_per_request"] = k
        r["tokens_per_s"] = r.get("req_per_s", 0) * k
        res["c"].append(r)
        log(f"(c) {k} tokens/request: {r.get('req_per_s')} req/s = {r['tokens_per_s']:.0f} tokens/s "
            f"({r.get('s2xx')} 2xx)")
    res["a_data_dir_bytes"] = du(data)
    stop(s)


def fdatasync_ms(directory: str, n: int = 200) -> dict:
    """fdatasync latency of 4 kB appends on the disk that holds the data directories (the commit floor)."""
    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 4096)
            t = time.perf_counter()
            os.fdatasync(fd)
            times.append((time.perf_counter() - t) * 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    times.sort()
    return {"p50": times[n // 2], "p90": times[int(n * 0.9)], "p99": times[int(n * 0.99)], "max": times[-1]}


class SyncCounter:
    """Counts the daemon's fsync/fdatasync calls (perf tracepoints) between start and stop; None without perf."""

    def __init__(self, pid: int):
        self.proc = None
        try:
            self.proc = subprocess.Popen(["perf", "stat", "-x", ",", "-e",
                                          "syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync", "-p", str(pid)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        except OSError:
            pass

    def stop(self):
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None
        total = 0
        for line in err.splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[2].startswith("syscalls:") and parts[0].strip().isdigit():
                total += int(parts[0])
        return total


def commit_stats(port: int) -> dict:
    """The daemon's commit histogram from /metrics: commits so far and seconds spent committing."""
    import urllib.request
    out = {}
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    except OSError as e:
        return {"error": repr(e)}
    for line in text.splitlines():
        for key in ("pushrelay_store_commit_duration_seconds_count", "pushrelay_store_commit_duration_seconds_sum"):
            if line.startswith(key + " "):
                out[key.rsplit("_", 1)[1]] = float(line.split()[1])
    return out


def commit_delta(before: dict, after: dict, messages: int, wall: float) -> dict:
    n = after.get("count", 0) - before.get("count", 0)
    busy = after.get("sum", 0) - before.get("sum", 0)
    return {"commits": n, "mean_commit_ms": busy / n * 1000 if n else None,
            "writer_busy_share": busy / wall if wall else None,
            "messages_per_commit": messages / n if n else None}


def du(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def phase_peer(name: str, starter, args, res: dict) -> None:
    """A fresh server for every measurement, so that no run inherits another's buffers or backlog."""
    target = "nchan" if name == "nchan" else "mqtt"
    res[f"b_{name}"] = {}
    for rate in args.rates:
        s = start(starter())
        res[f"b_{name}"][str(rate)] = latency(target, s.port, rate, args, [s.pid])
        stop(s)
    if name == "nchan" and args.ceiling:
        # The generator's own ceiling: as fast as it can, against the fastest server here.
        s = start(starter())
        cfg = latency_cfg(target, s.port, args.ceiling, args, [s.pid])
        cfg["pub_procs"] = 1
        cfg["duration"] = 5
        log(f"generator ceiling: nchan, asking for {args.ceiling} msg/s from one publisher process for 5 s")
        r = loadgen.run_latency(cfg)
        stop(s)
        pub = (r.get("publishers") or [{}])[0]
        res["generator_ceiling"] = {"requested": args.ceiling, "achieved": r.get("achieved_rate"),
                                    "publisher_cpu_s": pub.get("cpu_s"), "publisher_send_s": pub.get("send_s"),
                                    "subscriber_cpu_s": r.get("generator_cpu_s", {}).get("subscribers"),
                                    "received": r.get("received"), "sent_ok": r.get("sent_ok"),
                                    "latency": r.get("latency")}
        log(f"    achieved {r.get('achieved_rate', 0):.0f} msg/s; publisher CPU {pub.get('cpu_s')} s over "
            f"{pub.get('send_s', 0):.1f} s")
    if args.idle_clients:
        s = start(starter())
        res[f"d_{name}"] = idle(target, s.port, [s.pid], args)
        stop(s)


def pushrelay_with_devices(work: str, args, name: str, count: int) -> tuple:
    data = os.path.join(work, name)
    s = start(servers.start_pushrelay(args.pushrelay_bin, work, data))
    project = servers.pushrelay_project(args.pushrelay_bin, data, "bench")
    return s, project, register(s.port, project, count)


def phase_pushrelay_stream(work: str, args, res: dict) -> None:
    """(d) on a daemon with 10,000 devices; (b) on a fresh daemon per rate, like the peers."""
    if args.idle_clients:
        s, project, devices = pushrelay_with_devices(work, args, "pushrelay-idle", args.idle_clients)
        res["d_pushrelay"] = idle("pushrelay", s.port, [s.pid], args, devices)
        stop(s)
    res["b_pushrelay"] = {}
    for rate in args.rates:
        s, project, devices = pushrelay_with_devices(work, args, f"pushrelay-{rate}", args.listeners)
        rec = perf_record(s.pid, min(8, args.duration), work, f"stream-{rate}") if args.perf else None
        c0 = commit_stats(s.port)
        syncs = SyncCounter(s.pid)
        r = latency("pushrelay", s.port, rate, args, [s.pid], devices, project["server_key"])
        r["fsyncs"] = syncs.stop()
        if r["fsyncs"]:
            log(f"    {r['fsyncs']} fsync/fdatasync calls (sends and acks): "
                f"{r.get('sent_ok', 0) / r['fsyncs']:.1f} sends per sync")
        r["commits"] = commit_delta(c0, commit_stats(s.port), r.get("sent_ok", 0), r.get("wall_s", 0))
        log(f"    commits (sends and acks): {r['commits']}")
        res["b_pushrelay"][str(rate)] = r
        if rec:
            rec.wait(timeout=60)
            res[f"b_perf_{rate}"] = perf_summary(work, f"stream-{rate}")
        stop(s)


def expansion_probe(db: str):
    """True once the store has no topic message left to expand (SQLiteStore deletes the row at the end)."""
    if not os.path.exists(db):
        return None

    def probe() -> bool:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT count(*) FROM topic_messages").fetchone()[0] == 0
        finally:
            con.close()

    return probe


def count_rows(db: str, table: str):
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        finally:
            con.close()
    except Exception as e:
        return repr(e)


def phase_fanout(work: str, args, res: dict) -> None:
    """Issue 6: one send to a topic with 10,000 and 100,000 subscribers; args.fanout_listeners hold streams."""
    data = os.path.join(work, "pushrelay-fanout")
    s = start(servers.start_pushrelay(args.pushrelay_bin, work, data))
    project = servers.pushrelay_project(args.pushrelay_bin, data, "fanout")
    key = project["server_key"]
    status, body = post_json(s.port, "/iid/v1:batchAdd", {"Authorization": f"key={key}"},
                             {"to": "/topics/probe", "registration_tokens": ["x"]})
    if status != 200:
        res["e_fanout"] = {"skipped": f"the daemon has no topics yet (batchAdd: HTTP {status})"}
        log(f"(e) fan-out skipped: batchAdd answered {status}")
        stop(s)
        return
    devices = register(s.port, project, max(args.fanout_sizes))
    sources = [f"127.0.0.{2 + i}" for i in range(args.idle_sources)]
    res["e_fanout"] = []
    for size in args.fanout_sizes:
        topic = f"fan{size}"
        loop = loadgen.new_event_loop()
        t0 = time.monotonic()
        sub = loop.run_until_complete(loadgen.topic_subscribe("127.0.0.1", s.port, key, topic,
                                                              [d["token"] for d in devices[:size]]))
        loop.close()
        log(f"(e) {size} subscribed to /topics/{topic} in {time.monotonic() - t0:.1f} s: {sub}")
        cfg = {"host": "127.0.0.1", "port": s.port, "server_key": key, "topic": topic, "devices": devices,
               "subscribers": size, "listeners": min(size, args.fanout_listeners), "sub_procs": args.idle_procs,
               "sources": sources, "server_pids": [s.pid], "timeout": 120,
               "queue_probe": expansion_probe(os.path.join(data, "pushrelay.sqlite"))}
        r = loadgen.run_fanout(cfg)
        r["queued_rows_after"] = count_rows(os.path.join(data, "pushrelay.sqlite"), "messages")
        r["subscribe"] = sub
        res["e_fanout"].append(r)
        log(f"    answer {r['answer']}, last of {r['received']}/{r['connected']} listeners after "
            f"{r.get('last_listener_ms')} ms, queues {r.get('queues_ms')} ms, "
            f"peak PSS {r['memory_peak_kb']['pss_kb']} kB (before {r['memory_before_kb']['pss_kb']} kB)")
    stop(s)


# ---------------------------------------------------------------------------------------------------------------
# The table


def fmt(x, nd=0) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    return f"{x:,.{nd}f}"


def ratio(a, b) -> str:
    if not a or not b:
        return "n/a"
    return f"{a / b:.2f}x"


def table(res: dict, args) -> str:
    rows = ["| measure | PushRelay | nginx+nchan | mosquitto | PushRelay vs peers |", "|---|---|---|---|---|"]
    a_pr = res.get("a_pushrelay", {}).get("req_per_s")
    a_ng = res.get("a_nghttpd", {}).get("req_per_s")
    rows.append(f"| (a) durable single-token sends/s (h2load -n {args.h2_n} -c {args.h2_c} -m {args.h2_m} -t 1) | "
                f"{fmt(a_pr)} | nghttpd (no store): {fmt(a_ng)} | | {ratio(a_pr, a_ng)} of nghttpd |")
    if res.get("a_pushrelay", {}).get("sends_per_fsync"):
        rows.append(f"| (a) sends per fsync (group commit) | {fmt(res['a_pushrelay']['sends_per_fsync'], 1)} | | | |")
    a_cpu = res.get("a_pushrelay", {}).get("server_cpu_s")
    if a_cpu and res.get("a_pushrelay", {}).get("done"):
        rows.append(f"| (a) daemon CPU per send (us) / cores used | {fmt(a_cpu / res['a_pushrelay']['done'] * 1e6, 1)}"
                    f" / {fmt(res['a_pushrelay'].get('server_cores'), 2)} | | | |")
    for rate in args.rates:
        b = {t: res.get(f"b_{t}", {}).get(str(rate), {}) for t in ("pushrelay", "nchan", "mosquitto")}
        for q in ("p50", "p99", "p999", "max"):
            v = {t: b[t].get("latency", {}).get(f"{q}_us") for t in b}
            v = {t: (x / 1000 if x is not None else None) for t, x in v.items()}
            rows.append(f"| (b) {q} send-to-receive at {rate:,} msg/s, {args.listeners:,} listeners (ms) | "
                        f"{fmt(v['pushrelay'], 2)} | {fmt(v['nchan'], 2)} | {fmt(v['mosquitto'], 2)} | "
                        f"{ratio(v['pushrelay'], v['nchan'])} of nchan, {ratio(v['pushrelay'], v['mosquitto'])} "
                        f"of mosquitto |")
        miss = {t: (b[t].get("missing"), b[t].get("achieved_rate")) for t in b}
        rows.append(f"| (b) at {rate:,} msg/s: missing / achieved send rate | "
                    + " | ".join(f"{fmt(m)} / {fmt(r)}" for m, r in miss.values()) + " | |")
        ans = {t: [p.get("resp", {}).get("p50_us") for p in b[t].get("publishers", [])] for t in b}
        ans = {t: (max(x for x in v if x is not None) / 1000 if any(x is not None for x in v) else None)
               for t, v in ans.items()}
        rows.append(f"| (b) p50 publisher answer time at {rate:,} msg/s (ms; PushRelay: durable commit) | "
                    f"{fmt(ans['pushrelay'], 2)} | {fmt(ans['nchan'], 2)} | {fmt(ans['mosquitto'], 2)} | |")
        cpu = {t: b[t].get("server_cpu_per_msg_us") for t in b}
        rows.append(f"| (b) server CPU per message at {rate:,} msg/s (us) | {fmt(cpu['pushrelay'], 1)} | "
                    f"{fmt(cpu['nchan'], 1)} | {fmt(cpu['mosquitto'], 1)} | |")
    for c in res.get("c", []):
        rows.append(f"| (c) {c['tokens_per_request']} tokens/request (registration_ids): requests/s, tokens/s | "
                    f"{fmt(c.get('req_per_s'))} req/s, {fmt(c.get('tokens_per_s'))} tokens/s | | | |")
    d = {t: res.get(f"d_{t}", {}) for t in ("pushrelay", "nchan", "mosquitto")}
    per = {t: d[t].get("pss_per_client_kb") for t in d}
    rows.append(f"| (d) memory per idle connected device at {args.idle_clients:,} (kB, PSS delta) | "
                f"{fmt(per['pushrelay'], 2)} | {fmt(per['nchan'], 2)} | {fmt(per['mosquitto'], 2)} | "
                f"{ratio(per['pushrelay'], per['nchan'])} of nchan, {ratio(per['pushrelay'], per['mosquitto'])} "
                f"of mosquitto |")
    proj = {}
    for t in d:
        if per[t] is not None and d[t].get("before"):
            proj[t] = (d[t]["before"]["pss_kb"] + per[t] * 200_000) / 1024
    rows.append("| (d) projection for 200,000 devices (MB: base + 200,000 x per device) | "
                + " | ".join(fmt(proj.get(t)) for t in ("pushrelay", "nchan", "mosquitto")) + " | |")
    fo = res.get("e_fanout")
    if isinstance(fo, list):
        for r in fo:
            rows.append(f"| (issue 6) topic with {r['subscribers']:,} subscribers: answer ms / last of "
                        f"{r.get('received', 0):,} listeners ms / all queues ms / peak PSS MB | "
                        f"{fmt(r['answer']['ms'], 1)} / {fmt(r.get('last_listener_ms'), 1)} / "
                        f"{fmt(r.get('queues_ms'), 1)} / {fmt(r['memory_peak_kb']['pss_kb'] / 1024)} | | | |")
    elif isinstance(fo, dict):
        rows.append(f"| (issue 6) topic fan-out | {fo.get('skipped')} | | | |")
    gc = res.get("generator_ceiling")
    if gc:
        rows.append(f"| generator ceiling (one publisher process vs nchan, msg/s) | | {fmt(gc.get('achieved'))} | | |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pushrelay-bin", help="the release binary; without it only the peers are measured")
    ap.add_argument("--out", default="relay-results.json")
    ap.add_argument("--work", help="working directory (default: a new temporary one, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary working directory")
    ap.add_argument("--listeners", type=int, default=1000)
    ap.add_argument("--rates", type=int, nargs="*", default=[5000, 20000])
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--sub-procs", type=int, default=2)
    ap.add_argument("--conns", type=int, default=32, help="HTTP connections per publisher process")
    ap.add_argument("--rate-per-publisher", type=int, default=10000)
    ap.add_argument("--ack-interval", type=float, default=1.0)
    ap.add_argument("--h2-n", type=int, default=200_000)
    ap.add_argument("--h2-c", type=int, default=8)
    ap.add_argument("--h2-m", type=int, default=32)
    ap.add_argument("--c-tokens", type=int, default=50_000, help="(c): tokens per h2load run (requests x k)")
    ap.add_argument("--tokens-per-request", type=int, nargs="+", default=[1, 10, 100, 1000])
    ap.add_argument("--idle-clients", type=int, default=10_000)
    ap.add_argument("--idle-procs", type=int, default=4)
    ap.add_argument("--idle-sources", type=int, default=4)
    ap.add_argument("--ceiling", type=int, default=40000, help="0 skips the generator-ceiling run")
    ap.add_argument("--perf", action="store_true", help="sample the daemon with perf during (a) and (b)")
    ap.add_argument("--fanout-sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--fanout-listeners", type=int, default=10_000)
    ap.add_argument("--only", nargs="+", default=["nghttpd", "sends", "nchan", "mosquitto", "stream", "fanout"],
                    help="phases: nghttpd sends nchan mosquitto stream fanout")
    args = ap.parse_args()

    def on_signal(signum, frame):
        stop_all()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    work = args.work or tempfile.mkdtemp(prefix="pushrelay-bench-", dir=os.environ.get("BENCH_TMP"))
    os.makedirs(work, exist_ok=True)
    res = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "loadavg_start": os.getloadavg(),
           "nproc": os.cpu_count(), "args": vars(args), "uvloop": loadgen.uvloop is not None}
    res["fdatasync_ms_start"] = fdatasync_ms(work)
    log(f"fdatasync (ms) at start: {res['fdatasync_ms_start']}")
    body_file = os.path.join(work, "scenario.json")
    with open(body_file, "w") as f:
        json.dump({**SCENARIO_BODY, "to": "eeDh2Sd5HknG1zdC1w1UBD:APA91bFKGr99Cpj7q1Es0oexCeoXf9qinT6GuI-pvCouR8AK"
                                       "ueLR1zNc_QZVv_U7t068XGEbPheXZwLF5fvUNZ8c018jv6vMP-1tAQojY6Q4tDV3ySXN"}, f)
    phases = [("nghttpd", lambda: phase_nghttpd(work, body_file, args, res)),
              ("sends", lambda: phase_pushrelay_sends(work, args, res) if args.pushrelay_bin else None),
              ("nchan", lambda: phase_peer("nchan", lambda: servers.start_nchan(work), args, res)),
              ("mosquitto", lambda: phase_peer("mosquitto", lambda: servers.start_mosquitto(work), args, res)),
              ("stream", lambda: phase_pushrelay_stream(work, args, res) if args.pushrelay_bin else None),
              ("fanout", lambda: phase_fanout(work, args, res) if args.pushrelay_bin else None)]
    try:
        for name, phase in phases:
            if name not in args.only:
                continue
            try:
                phase()
            except Exception as e:  # one failing server must not hide the others' figures
                log(f"phase {name} failed: {e!r}")
                res.setdefault("errors", {})[name] = repr(e)
                stop_all()
    finally:
        stop_all()
        res["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        res["loadavg_end"] = os.getloadavg()
        try:
            res["fdatasync_ms_end"] = fdatasync_ms(work)
        except OSError:
            pass
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, default=str)
        if not args.work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    t = table(res, args)
    print(t)
    print(f"\nfdatasync 4 kB (ms): start {res.get('fdatasync_ms_start')}, end {res.get('fdatasync_ms_end')}")
    print(f"load average at start {res['loadavg_start']}, at end {res['loadavg_end']}; "
          f"uvloop {'on' if res['uvloop'] else 'off'}; JSON: {args.out}")
    for k in ("a_perf", *[f"b_perf_{r}" for r in args.rates]):
        if res.get(k):
            print(f"\nperf ({k}), self time by symbol:\n{res[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
