#!/usr/bin/env python3
"""Python side of the relay benchmarks: device registration, idle memory, topic fan-out, process accounting.

The send-to-receive runs (the real-sender shape of issue #10: a few keep-alive senders on an open-loop
schedule, 1,000 listeners) are driven by `relaygen.c`, not from here: a Python publisher stamped each message
when it found a free connection, so the time a message waited for one was dropped (coordinated omission), and one
publisher process topped out near 9,000-12,000 HTTP publishes/s on this machine.

Idle memory (`run_idle`): C clients connect and stay idle; the server's memory (PSS summed over the server's
processes) is read before and after.

Topic fan-out (`run_fanout`): one send to a topic, subscriber processes (`subscriber_main`) hold the streams
(PushRelay: `GET /v1/stream` over HTTP/1.1 SSE) and record when the message arrives.

Everything here talks to loopback addresses only, and every loop is bounded in count and in time.
"""
from __future__ import annotations

import argparse
import array
import asyncio
import collections
import json
import math
import multiprocessing as mp
import os
import re
import socket
import sys
import time

try:
    import uvloop
except ImportError:  # the generator still works, only slower
    uvloop = None

now_ns = time.monotonic_ns

SCENARIO_NOTIFICATION = {
    "body": "Status do pedido",
    "title": "Provedor de Mensagens",
    "orderInfo": {
        "infoReason": "Status de pedido",
        "orderID": 3,
        "userEmail": "matilde@siecola.com.br",
        "newOrderStatus": "Novo pedido",
    },
}
# The scenario's notification, as JSON text; every target gets a message of about the same size.
NOTIFICATION_JSON = json.dumps(SCENARIO_NOTIFICATION, separators=(",", ":"))

LG_I = re.compile(rb'"lg_i"\s*:\s*"?(\d+)')
LG_T = re.compile(rb'"lg_t"\s*:\s*"?(\d+)')
SSE_ID = re.compile(rb"(?m)^id: ?([^\n]*)")


def new_event_loop() -> asyncio.AbstractEventLoop:
    if uvloop is not None:
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def check_loopback(host: str) -> None:
    """Refuses any target that is not a loopback address: this generator never sends elsewhere."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as e:
        raise SystemExit(f"loadgen: cannot resolve {host}: {e}")
    for info in infos:
        addr = info[4][0]
        if not (addr.startswith("127.") or addr == "::1"):
            raise SystemExit(f"loadgen: {host} ({addr}) is not a loopback address; refusing")


# ---------------------------------------------------------------------------------------------------------------
# Percentiles


def summarize(samples_ns) -> dict:
    """Exact nearest-rank percentiles of latency samples (ns), reported in microseconds."""
    s = sorted(samples_ns)
    n = len(s)
    if n == 0:
        return {"n": 0}

    def q(p: float) -> float:
        return s[min(n - 1, max(0, math.ceil(p * n) - 1))] / 1000.0

    return {
        "n": n,
        "min_us": s[0] / 1000.0,
        "p50_us": q(0.50),
        "p90_us": q(0.90),
        "p99_us": q(0.99),
        "p999_us": q(0.999),
        "max_us": s[-1] / 1000.0,
        "mean_us": sum(s) / n / 1000.0,
    }


# ---------------------------------------------------------------------------------------------------------------
# HTTP/1.1 client pieces (raw asyncio protocols: the generator must stay cheaper than the servers it measures)


def parse_http_response(buf: bytearray):
    """Parses one complete HTTP/1.1 response at the start of buf: (end, status, body), or None if incomplete."""
    hend = buf.find(b"\r\n\r\n")
    if hend < 0:
        return None
    head = bytes(buf[:hend])
    status = int(head[9:12])
    lower = head.lower()
    i = lower.find(b"\r\ncontent-length:")
    if i >= 0:
        j = lower.find(b"\r\n", i + 2)
        n = int(head[i + 17:j if j >= 0 else len(head)])
        start = hend + 4
        if len(buf) - start < n:
            return None
        return start + n, status, bytes(buf[start:start + n])
    if b"chunked" in lower:
        pos = hend + 4
        parts = []
        while True:
            le = buf.find(b"\r\n", pos)
            if le < 0:
                return None
            size = int(bytes(buf[pos:le]).split(b";", 1)[0], 16)
            if size == 0:
                if buf[le + 2:le + 4] == b"\r\n":
                    return le + 4, status, b"".join(parts)
                te = buf.find(b"\r\n\r\n", le)
                if te < 0:
                    return None
                return te + 4, status, b"".join(parts)
            if len(buf) < le + 2 + size + 2:
                return None
            parts.append(bytes(buf[le + 2:le + 2 + size]))
            pos = le + 2 + size + 2
    return hend + 4, status, b""


class HTTPClient(asyncio.Protocol):
    """A keep-alive HTTP/1.1 connection; callbacks get (status, body) in request order (status 0: closed)."""

    def __init__(self):
        self.transport = None
        self.buf = bytearray()
        self.waiters = collections.deque()
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buf += data
        while self.waiters:
            r = parse_http_response(self.buf)
            if r is None:
                return
            end, status, body = r
            del self.buf[:end]
            self.waiters.popleft()(status, body)

    def connection_lost(self, exc):
        self.closed = True
        while self.waiters:
            self.waiters.popleft()(0, b"")

    def request(self, data: bytes, callback) -> None:
        if self.closed:
            callback(0, b"")
            return
        self.waiters.append(callback)
        self.transport.write(data)

    def fetch(self, data: bytes) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()

        def done(status, body):
            if not fut.done():
                fut.set_result((status, body))

        self.request(data, done)
        return fut


def http_request(method: str, host: str, path: str, headers: dict, body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def open_http(host: str, port: int, source: str | None = None) -> HTTPClient:
    loop = asyncio.get_running_loop()
    local = (source, 0) if source else None
    _, proto = await loop.create_connection(HTTPClient, host, port, local_addr=local)
    return proto


# ---------------------------------------------------------------------------------------------------------------
# Receiving side: one Collector per subscriber process


class Collector:
    def __init__(self, only_i: int | None = None):
        self.only_i = only_i  # count only this message (a fan-out run: earlier messages may come again)
        self.other = 0
        self.lat = array.array("q")
        self.seen = set()
        self.duplicates = 0
        self.received = 0
        self.unparsed = 0

    def record(self, payload: bytes, ts: int) -> None:
        mi = LG_I.search(payload)
        mt = LG_T.search(payload)
        if mi is None or mt is None:
            self.unparsed += 1
            return
        i = int(mi.group(1))
        if self.only_i is not None:  # fan-out: every listener gets the same message once
            if i != self.only_i:
                self.other += 1
                return
        elif i in self.seen:
            self.duplicates += 1
            return
        else:
            self.seen.add(i)
        self.received += 1
        self.lat.append(ts - int(mt.group(1)))


class SSEClient(asyncio.Protocol):
    """An HTTP/1.1 text/event-stream reader (identity or chunked body); hands every event to on_event."""

    def __init__(self, request: bytes, on_event, on_lost=None):
        self.request = request
        self.on_event = on_event
        self.on_lost = on_lost
        self.transport = None
        self.head = bytearray()
        self.in_body = False
        self.chunked = False
        self.raw = bytearray()
        self.chunk_left = 0
        self.need_crlf = False
        self.events = bytearray()
        self.status = 0
        self.ready = asyncio.get_running_loop().create_future()
        self.lost = False

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def connection_lost(self, exc):
        self.lost = True
        if not self.ready.done():
            self.ready.set_result(0)
        if self.on_lost:
            self.on_lost(self)

    def _dechunk(self, data: bytes) -> bytes:
        raw = self.raw
        raw += data
        out = bytearray()
        pos = 0
        n = len(raw)
        while True:
            if self.chunk_left:
                take = min(self.chunk_left, n - pos)
                out += raw[pos:pos + take]
                pos += take
                self.chunk_left -= take
                if self.chunk_left:
                    break
                self.need_crlf = True
            if self.need_crlf:
                if n - pos < 2:
                    break
                pos += 2
                self.need_crlf = False
            le = raw.find(b"\r\n", pos)
            if le < 0:
                break
            size = int(bytes(raw[pos:le]).split(b";", 1)[0], 16)
            pos = le + 2
            if size == 0:
                break
            self.chunk_left = size
        del raw[:pos]
        return bytes(out)

    def data_received(self, data):
        ts = now_ns()
        if not self.in_body:
            self.head += data
            i = self.head.find(b"\r\n\r\n")
            if i < 0:
                return
            head = bytes(self.head[:i])
            data = bytes(self.head[i + 4:])
            self.head = None
            self.status = int(head[9:12])
            self.chunked = b"chunked" in head.lower()
            self.in_body = True
            if not self.ready.done():
                self.ready.set_result(self.status)
            if self.status != 200:
                self.transport.close()
                return
            if not data:
                return
        if self.chunked:
            data = self._dechunk(data)
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        ev = self.events
        ev += data
        pos = 0
        while True:
            j = ev.find(b"\n\n", pos)
            if j < 0:
                break
            if ev[pos:pos + 1] != b":":  # ':' starts a comment (heartbeat)
                self.on_event(bytes(ev[pos:j]), ts)
            pos = j + 2
        if pos:
            del ev[:pos]


# ---------------------------------------------------------------------------------------------------------------
# MQTT 3.1.1, the little that the benchmark needs


def mqtt_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n % 128
        n //= 128
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def mqtt_str(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return len(b).to_bytes(2, "big") + b


def mqtt_connect(client_id: str, clean: bool, keepalive: int = 300) -> bytes:
    var = mqtt_str("MQTT") + bytes([4, 0x02 if clean else 0x00]) + keepalive.to_bytes(2, "big")
    body = var + mqtt_str(client_id)
    return b"\x10" + mqtt_varint(len(body)) + body


def mqtt_subscribe(pid: int, topic: str, qos: int = 1) -> bytes:
    body = pid.to_bytes(2, "big") + mqtt_str(topic) + bytes([qos])
    return b"\x82" + mqtt_varint(len(body)) + body


class MQTTClient(asyncio.Protocol):
    """Parses MQTT packets; PUBACKs every QoS 1 PUBLISH it receives; hands payloads and acks to callbacks."""

    def __init__(self, client_id: str, clean: bool, topic: str | None, on_message=None, on_puback=None):
        self.client_id = client_id
        self.clean = clean
        self.topic = topic
        self.on_message = on_message
        self.on_puback = on_puback
        self.buf = bytearray()
        self.transport = None
        self.ready = asyncio.get_running_loop().create_future()
        self.lost = False

    def connection_made(self, transport):
        self.transport = transport
        transport.write(mqtt_connect(self.client_id, self.clean))

    def connection_lost(self, exc):
        self.lost = True
        if not self.ready.done():
            self.ready.set_result(0)
        if self.on_puback:
            self.on_puback(-1)

    def data_received(self, data):
        ts = now_ns()
        buf = self.buf
        buf += data
        pos = 0
        n = len(buf)
        acks = []
        while n - pos >= 2:
            mult = 1
            length = 0
            k = pos + 1
            while True:
                if k >= n:
                    length = -1
                    break
                b = buf[k]
                length += (b & 0x7F) * mult
                mult *= 128
                k += 1
                if not b & 0x80:
                    break
            if length < 0 or n - k < length:
                break
            kind = buf[pos] >> 4
            if kind == 3:  # PUBLISH
                flags = buf[pos] & 0x0F
                tl = int.from_bytes(buf[k:k + 2], "big")
                p = k + 2 + tl
                if (flags >> 1) & 3:
                    pid = buf[p:p + 2]
                    p += 2
                    acks.append(b"\x40\x02" + bytes(pid))
                if self.on_message:
                    self.on_message(bytes(buf[p:k + length]), ts)
            elif kind == 4:  # PUBACK
                if self.on_puback:
                    self.on_puback(int.from_bytes(buf[k:k + 2], "big"))
            elif kind == 2:  # CONNACK
                rc = buf[k + 1]
                if rc != 0:
                    self.ready.set_result(-rc)
                    self.transport.close()
                elif self.topic:
                    self.transport.write(mqtt_subscribe(1, self.topic))
                else:
                    self.ready.set_result(1)
            elif kind == 9:  # SUBACK
                if not self.ready.done():
                    self.ready.set_result(1 if buf[k + 2] != 0x80 else -128)
            pos = k + length
        if pos:
            del buf[:pos]
        if acks:
            self.transport.write(b"".join(acks))


# ---------------------------------------------------------------------------------------------------------------
# Subscriber processes


def subscriber_main(cfg: dict, indices: list, ready_q, stop_ev, counter, result_q) -> None:
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        result = loop.run_until_complete(subscriber_run(cfg, indices, ready_q, stop_ev, counter))
    except Exception as e:  # report instead of hanging the coordinator
        result = {"error": repr(e)}
        ready_q.put(("failed", 0, repr(e)))
    result_q.put(result)


async def subscriber_run(cfg: dict, indices: list, ready_q, stop_ev, counter) -> dict:
    target = cfg["target"]
    host, port = cfg["host"], cfg["port"]
    sources = cfg.get("sources") or [None]
    col = Collector(cfg.get("only_i"))
    conns = []
    ack_pending = {}  # device index -> [message ids]
    ack_stats = {"requests": 0, "ids": 0, "failed": 0, "numeric": cfg.get("ack_numeric", False)}
    devices = cfg.get("devices") or []
    sem = asyncio.Semaphore(cfg.get("connect_concurrency", 200))
    loop = asyncio.get_running_loop()
    lost = [0]

    def on_lost(_):
        lost[0] += 1

    async def connect_one(n: int, k: int):
        src = sources[n % len(sources)]
        local = (src, 0) if src else None
        async with sem:
            if target == "pushrelay":
                dev = devices[k]
                req = http_request("GET", host, "/v1/stream", {
                    "Authorization": f"Bearer {dev['secret']}", "Accept": "text/event-stream"})
                pend = ack_pending.setdefault(k, [])

                def on_event(ev: bytes, ts: int, pend=pend):
                    col.record(ev, ts)
                    m = SSE_ID.search(ev)
                    if m:
                        pend.append(m.group(1).decode())

                _, proto = await loop.create_connection(lambda: SSEClient(req, on_event, on_lost), host, port,
                                                        local_addr=local)
                status = await asyncio.wait_for(proto.ready, 30)
                if status != 200:
                    raise RuntimeError(f"stream for device {k}: HTTP {status}")
            elif target == "nchan":
                req = http_request("GET", host, f"/sub/ch{k}", {"Accept": "text/event-stream"})
                _, proto = await loop.create_connection(lambda: SSEClient(req, lambda ev, ts: col.record(ev, ts),
                                                                          on_lost), host, port, local_addr=local)
                status = await asyncio.wait_for(proto.ready, 30)
                if status != 200:
                    raise RuntimeError(f"nchan subscriber {k}: HTTP {status}")
            elif target == "mqtt":
                _, proto = await loop.create_connection(
                    lambda: MQTTClient(f"sub{k}", False, f"ch{k}", on_message=col.record), host, port,
                    local_addr=local)
                status = await asyncio.wait_for(proto.ready, 30)
                if status != 1:
                    raise RuntimeError(f"mqtt subscriber {k}: {status}")
            else:
                raise ValueError(target)
            conns.append(proto)

    t0 = time.monotonic()
    results = await asyncio.gather(*(connect_one(n, k) for n, k in enumerate(indices)), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    connect_s = time.monotonic() - t0
    ready_q.put(("ready", len(conns), repr(errors[0]) if errors else ""))

    # PushRelay acknowledgements: a few keep-alive connections, one POST /v1/ack per device per interval.
    ack_conns = []
    ack_queue = collections.deque()
    if target == "pushrelay" and cfg.get("ack", True):
        for n in range(cfg.get("ack_conns", 4)):
            ack_conns.append(await open_http(host, port, sources[n % len(sources)]))

    def ack_send(conn: HTTPClient):
        if not ack_queue or conn.closed:
            conn.idle = not conn.closed
            return
        k, ids = ack_queue.popleft()
        conn.idle = False
        body_ids = [int(x) for x in ids] if ack_stats["numeric"] else ids
        body = json.dumps({"ids": body_ids}, separators=(",", ":")).encode()
        req = http_request("POST", host, "/v1/ack", {"Authorization": f"Bearer {devices[k]['secret']}",
                                                      "Content-Type": "application/json"}, body)

        def done(status, resp, k=k, ids=ids):
            if status == 0:  # the server closed this connection: retry the batch on a new one
                ack_stats["reconnects"] = ack_stats.get("reconnects", 0) + 1
                ack_queue.appendleft((k, ids))
                if ack_stats["reconnects"] <= 1000:
                    loop.create_task(replace_ack_conn(conn))
                return
            ack_stats["requests"] += 1
            if 200 <= status < 300:
                ack_stats["ids"] += len(ids)
            else:
                ack_stats["failed"] += 1
                if status >= 500 and len(ids) > 1:
                    # Some daemon builds fail a multi-id ack (SQLITE_MISUSE in the store); ack one id per request.
                    ack_stats["split_after_5xx"] = ack_stats.get("split_after_5xx", 0) + 1
                    for one in ids:
                        ack_queue.append((k, [one]))
                elif status == 400 and not ack_stats["numeric"]:
                    ack_stats["numeric"] = True  # the server wants numbers; say so in the result
                    ack_stats["switched_to_numeric"] = resp[:200].decode(errors="replace")
                    ack_queue.append((k, ids))
                elif "first_error" not in ack_stats:
                    ack_stats["first_error"] = f"{status} {resp[:200]!r}"
            loop.call_soon(ack_send, conn)

        conn.request(req, done)

    async def replace_ack_conn(old: HTTPClient):
        i = ack_conns.index(old)
        try:
            new = await open_http(host, port, sources[i % len(sources)])
        except OSError as e:
            ack_stats["reconnect_error"] = repr(e)
            return
        new.idle = True
        ack_conns[i] = new
        ack_send(new)

    for c in ack_conns:
        c.idle = True

    def flush_acks(slot: int, slots: int):
        for k in list(ack_pending.keys()):
            if k % slots == slot and ack_pending[k]:
                ack_queue.append((k, ack_pending[k][:]))
                ack_pending[k].clear()
        for c in ack_conns:
            if c.idle and ack_queue and not c.closed:
                ack_send(c)

    slots = max(1, int(cfg.get("ack_interval", 1.0) / 0.05))
    tick = 0
    deadline = time.monotonic() + cfg.get("max_runtime", 600)
    while not stop_ev.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        counter.value = col.received
        if ack_conns:
            flush_acks(tick % slots, slots)
        tick += 1
    counter.value = col.received
    if ack_conns:  # final acknowledgements, bounded in time
        for s in range(slots):
            flush_acks(s, slots)
        end = time.monotonic() + 5
        while (ack_queue or any(not c.idle for c in ack_conns if not c.closed)) and time.monotonic() < end:
            await asyncio.sleep(0.02)
    for c in conns:
        if c.transport:
            c.transport.close()
    for c in ack_conns:
        c.transport.close()
    return {
        "connected": len(conns),
        "connect_errors": len(errors),
        "first_connect_error": repr(errors[0]) if errors else "",
        "connect_s": connect_s,
        "received": col.received,
        "duplicates": col.duplicates,
        "unparsed": col.unparsed,
        "lost_streams": lost[0],
        "lat": col.lat.tobytes(),
        "ack": ack_stats,
        "cpu_s": sum(os.times()[:2]),
    }


# ---------------------------------------------------------------------------------------------------------------
# The message body (the fan-out run sends one; relaygen.c writes the same body for the real-sender runs)


BODY_A = b'"priority":"high","notification":' + NOTIFICATION_JSON.encode() + b',"data":{"lg_i":"'
BODY_B = b'","lg_t":"'
BODY_C = b'"}}'


def message_body(i: int, ts: int, prefix: bytes = b"{") -> bytes:
    """The message: the scenario's notification plus data {lg_i, lg_t}; prefix is b'{' or b'{"to":"<token>",'."""
    return b"".join((prefix, BODY_A, str(i).encode(), BODY_B, str(ts).encode(), BODY_C))



# ---------------------------------------------------------------------------------------------------------------
# Process accounting (servers)


def proc_tree(pid: int) -> list:
    """pid and its descendants (nginx master + workers)."""
    pids = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for c in f.read().split():
                    pids += proc_tree(int(c))
    except OSError:
        pass
    return pids


def proc_cpu(pids: list) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for root in pids:
        for pid in proc_tree(root):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except OSError:
                pass
    return total / tick


def machine_steal() -> float:
    """CPU seconds the hypervisor took from this virtual machine so far (/proc/stat, every CPU): time a thread was
    ready to run and no CPU ran it. It stretches latencies that no code of the measured server caused."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def proc_switches(pids: list) -> int:
    """Context switches (voluntary and not) of every thread of these processes and their children so far: each one
    a thread put to sleep or preempted, the cost a hand-off between threads adds to a message."""
    total = 0
    for root in pids:
        for pid in proc_tree(root):
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tasks:
                try:
                    with open(f"/proc/{pid}/task/{tid}/status") as f:
                        for text in f:
                            if text.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                                total += int(text.split()[1])
                except OSError:
                    pass
    return total


def thread_cpu(pid: int) -> dict:
    """CPU seconds per thread of one process: {tid: [name, seconds]}."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
            fields = rest.split()
            out[tid] = [head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / tick]
        except (OSError, IndexError):
            pass
    return out


def thread_usage(before: dict, after: dict, wall: float) -> list:
    """Busiest threads between two thread_cpu() readings: [name/tid, cores used], most first."""
    rows = []
    for tid, (name, cpu) in after.items():
        used = cpu - before.get(tid, [name, 0.0])[1]
        if used > 0:
            rows.append([f"{name}/{tid}", round(used / wall, 3) if wall else 0])
    return sorted(rows, key=lambda r: -r[1])[:8]


def proc_mem(pids: list) -> dict:
    """RSS and PSS in kB, summed over the processes (PSS counts shared pages once across them)."""
    rss = pss = 0
    for root in pids:
        for pid in proc_tree(root):
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Rss:"):
                            rss += int(line.split()[1])
                        elif line.startswith("Pss:"):
                            pss += int(line.split()[1])
            except OSError:
                pass
    return {"rss_kb": rss, "pss_kb": pss}


# ---------------------------------------------------------------------------------------------------------------
# Idle connections (memory per connected device)


def idle_main(cfg: dict, indices: list, ready_q, stop_ev) -> None:
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(idle_run(cfg, indices, ready_q, stop_ev))
    except Exception as e:
        ready_q.put(("failed", 0, repr(e)))


async def idle_run(cfg: dict, indices: list, ready_q, stop_ev) -> None:
    host, port, target = cfg["host"], cfg["port"], cfg["target"]
    sources = cfg.get("sources") or [None]
    devices = cfg.get("devices") or []
    loop = asyncio.get_running_loop()
    sem = asyncio.Semaphore(cfg.get("connect_concurrency", 100))
    conns = []
    events = [0]

    def on_event(ev, ts):
        events[0] += 1

    async def one(n, k):
        src = sources[n % len(sources)]
        local = (src, 0) if src else None
        async with sem:
            if target == "pushrelay":
                req = http_request("GET", host, "/v1/stream", {"Authorization": f"Bearer {devices[k]['secret']}",
                                                               "Accept": "text/event-stream"})
                _, proto = await loop.create_connection(lambda: SSEClient(req, on_event), host, port,
                                                        local_addr=local)
                ok = await asyncio.wait_for(proto.ready, 60) == 200
            elif target == "nchan":
                req = http_request("GET", host, f"/sub/ch{k}", {"Accept": "text/event-stream"})
                _, proto = await loop.create_connection(lambda: SSEClient(req, on_event), host, port,
                                                        local_addr=local)
                ok = await asyncio.wait_for(proto.ready, 60) == 200
            else:
                _, proto = await loop.create_connection(
                    lambda: MQTTClient(f"idle{k}", False, f"ch{k}", on_message=on_event), host, port,
                    local_addr=local)
                ok = await asyncio.wait_for(proto.ready, 60) == 1
            if not ok:
                raise RuntimeError(f"client {k} refused")
            conns.append(proto)

    res = await asyncio.gather(*(one(n, k) for n, k in enumerate(indices)), return_exceptions=True)
    errs = [r for r in res if isinstance(r, BaseException)]
    ready_q.put(("ready", len(conns), repr(errs[0]) if errs else ""))
    end = time.monotonic() + cfg.get("max_runtime", 300)
    while not stop_ev.is_set() and time.monotonic() < end:
        await asyncio.sleep(0.1)
    alive = sum(1 for c in conns if not c.lost)
    for c in conns:
        c.transport.close()
    ready_q.put(("done", alive, f"events={events[0]}"))


def run_idle(cfg: dict) -> dict:
    """Connects cfg['clients'] idle clients from cfg['procs'] processes; server memory before and after."""
    check_loopback(cfg["host"])
    for s in cfg.get("sources") or []:
        check_loopback(s)
    ctx = mp.get_context("fork")
    n, procs = cfg["clients"], cfg["procs"]
    pids = cfg["server_pids"]
    ready_q, stop_ev = ctx.Queue(), ctx.Event()
    time.sleep(cfg.get("settle", 2))
    before = proc_mem(pids)
    ps = []
    out = {"clients": n, "procs": procs, "sources": cfg.get("sources"), "before": before}
    try:
        t0 = time.monotonic()
        for j in range(procs):
            pr = ctx.Process(target=idle_main, args=(cfg, list(range(j, n, procs)), ready_q, stop_ev), daemon=True)
            pr.start()
            ps.append(pr)
        connected, errs = 0, []
        for _ in range(procs):
            kind, c, err = ready_q.get(timeout=cfg.get("connect_timeout", 300))
            connected += c
            if err:
                errs.append(err)
        out["connect_s"] = time.monotonic() - t0
        out["connected"] = connected
        out["errors"] = errs[:3]
        time.sleep(cfg.get("hold", 5))
        out["after"] = proc_mem(pids)
        out["loadavg"] = os.getloadavg()
        stop_ev.set()
        alive = 0
        for _ in range(procs):
            kind, c, err = ready_q.get(timeout=60)
            alive += c
        out["still_connected_at_end"] = alive
    finally:
        stop_ev.set()
        for pr in ps:
            pr.join(timeout=10)
            if pr.is_alive():
                pr.terminate()
    if connected:
        out["pss_per_client_kb"] = (out["after"]["pss_kb"] - before["pss_kb"]) / connected
        out["rss_per_client_kb"] = (out["after"]["rss_kb"] - before["rss_kb"]) / connected
    return out


# ---------------------------------------------------------------------------------------------------------------
# PushRelay device registration


async def register_devices(host: str, port: int, client_key: str, project: str, count: int,
                           concurrency: int = 32) -> list:
    check_loopback(host)
    body = json.dumps({"project": project, "app": "bench", "platform": "ios"}).encode()
    req = http_request("POST", host, "/v1/register", {"Authorization": f"key={client_key}",
                                                      "Content-Type": "application/json"}, body)
    devices = [None] * count
    next_i = [0]

    async def worker():
        conn = await open_http(host, port)
        while next_i[0] < count:
            i = next_i[0]
            next_i[0] += 1
            for attempt in range(3):
                status, resp = await conn.fetch(req)
                if status == 200:
                    d = json.loads(resp)
                    devices[i] = {"token": d["token"], "secret": d["secret"]}
                    break
                if status == 0:
                    conn = await open_http(host, port)
            else:
                raise RuntimeError(f"register: HTTP {status} {resp[:200]!r}")
        conn.transport.close()

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(min(concurrency, count)))), 600)
    return devices


# ---------------------------------------------------------------------------------------------------------------
# Topic fan-out (issue 6)


async def topic_subscribe(host: str, port: int, server_key: str, topic: str, tokens: list,
                          concurrency: int = 4) -> dict:
    """Subscribes tokens to /topics/<topic> with POST /iid/v1:batchAdd, 1,000 tokens per request."""
    check_loopback(host)
    batches = [tokens[i:i + 1000] for i in range(0, len(tokens), 1000)]
    errors = collections.Counter()
    next_b = [0]

    async def worker():
        conn = await open_http(host, port)
        while next_b[0] < len(batches):
            b = batches[next_b[0]]
            next_b[0] += 1
            body = json.dumps({"to": f"/topics/{topic}", "registration_tokens": b}).encode()
            status, resp = await conn.fetch(http_request("POST", host, "/iid/v1:batchAdd", {
                "Authorization": f"key={server_key}", "Content-Type": "application/json"}, body))
            if status != 200:
                raise RuntimeError(f"batchAdd: HTTP {status} {resp[:300]!r}")
            for r in json.loads(resp).get("results", []):
                if r:
                    errors[r.get("error", "?")] += 1
        conn.transport.close()

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(min(concurrency, len(batches))))), 600)
    return {"subscribed": len(tokens) - sum(errors.values()), "errors": dict(errors)}


def run_fanout(cfg: dict) -> dict:
    """One message to a topic: answer time, time to the last connected listener, server peak memory.

    cfg: host, port, server_key, topic, devices (all subscribed), listeners (how many of them hold a stream),
    sub_procs, sources, server_pids, timeout, and optionally queue_probe: a callable() -> True once every
    subscriber's queue holds the message (e.g. a read-only query on the store), polled every 20 ms.
    """
    check_loopback(cfg["host"])
    ctx = mp.get_context("fork")
    n_listen, sp = cfg["listeners"], max(1, cfg["sub_procs"])
    sub_cfg = {"target": "pushrelay", "host": cfg["host"], "port": cfg["port"], "devices": cfg["devices"],
               "sources": cfg.get("sources"), "ack": False, "max_runtime": cfg.get("timeout", 120) + 120,
               "only_i": cfg["subscribers"]}
    ready_q, result_q = ctx.Queue(), ctx.Queue()
    stop_ev = ctx.Event()
    counters = [ctx.Value("q", 0, lock=False) for _ in range(sp)]
    procs = []
    out = {"subscribers": cfg["subscribers"], "listeners": n_listen}
    pids = cfg.get("server_pids") or []
    try:
        for j in range(sp):
            pr = ctx.Process(target=subscriber_main, args=(sub_cfg, list(range(j, n_listen, sp)), ready_q, stop_ev,
                                                           counters[j], result_q), daemon=True)
            pr.start()
            procs.append(pr)
        connected = 0
        for _ in range(sp):
            kind, c, err = ready_q.get(timeout=300)
            connected += c
        out["connected"] = connected
        time.sleep(1)
        mem0 = proc_mem(pids)
        out["memory_before_kb"] = mem0

        async def send():
            conn = await open_http(cfg["host"], cfg["port"])
            ts = now_ns()
            prefix = b'{"to":"/topics/' + cfg["topic"].encode() + b'",'
            body = message_body(cfg["subscribers"], ts, prefix)
            status, resp = await conn.fetch(http_request("POST", cfg["host"], "/fcm/send", {
                "Authorization": f"key={cfg['server_key']}", "Content-Type": "application/json"}, body))
            t1 = now_ns()
            conn.transport.close()
            return ts, t1, status, resp

        loop = new_event_loop()
        ts, t_answer, status, resp = loop.run_until_complete(send())
        loop.close()
        out["answer"] = {"status": status, "body": resp[:200].decode(errors="replace"),
                         "ms": (t_answer - ts) / 1e6}
        peak = dict(mem0)
        probe = cfg.get("queue_probe")
        t_queues = None
        end = time.monotonic() + cfg.get("timeout", 120)
        while time.monotonic() < end:
            m = proc_mem(pids)
            peak = {k: max(peak[k], m[k]) for k in peak}
            got = sum(c.value for c in counters)
            if probe is not None and t_queues is None:
                try:
                    if probe():
                        t_queues = now_ns()
                except Exception as e:  # a store busy with the expansion; try again
                    out["probe_error"] = repr(e)
            if got >= connected and (probe is None or t_queues is not None):
                break
            time.sleep(0.02)
        out["memory_peak_kb"] = peak
        out["queues_ms"] = (t_queues - ts) / 1e6 if t_queues else None
        stop_ev.set()
        results = [result_q.get(timeout=60) for _ in range(sp)]
    finally:
        stop_ev.set()
        for pr in procs:
            pr.join(timeout=10)
            if pr.is_alive():
                pr.terminate()
    lat = array.array("q")
    for r in results:
        if "lat" in r:
            lat.frombytes(r.pop("lat"))
    out["received"] = len(lat)
    out["listener_latency"] = summarize(lat)
    out["last_listener_ms"] = max(lat) / 1e6 if lat else None
    return out


# ---------------------------------------------------------------------------------------------------------------
# CLI (the orchestrator, run.py, uses the functions above directly)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    reg = sub.add_parser("register", help="register PushRelay devices, print JSON")
    reg.add_argument("--host", default="127.0.0.1")
    reg.add_argument("--port", type=int, required=True)
    reg.add_argument("--client-key", required=True)
    reg.add_argument("--project", required=True)
    reg.add_argument("--count", type=int, default=1000)
    args = ap.parse_args()
    if args.cmd == "register":
        loop = new_event_loop()
        devices = loop.run_until_complete(register_devices(args.host, args.port, args.client_key, args.project,
                                                           args.count))
        print(json.dumps(devices))


if __name__ == "__main__":
    main()
