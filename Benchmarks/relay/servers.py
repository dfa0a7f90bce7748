"""Starts the servers of the relay benchmark on loopback, each as a foreground child with its own directory.

nginx + nchan (Debian libnginx-mod-nchan), mosquitto, nghttpd and the pushrelay daemon. Every server is a
child of this process; `Server.stop()` ends it (SIGTERM, then SIGKILL after a bounded wait).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

NCHAN_MODULE = "/usr/lib/nginx/modules/ngx_nchan_module.so"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class Server:
    def __init__(self, name: str, proc: subprocess.Popen, port: int, workdir: str, log: str):
        self.name, self.proc, self.port, self.workdir, self.log = name, proc, port, workdir, log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _spawn(name: str, argv: list, workdir: str, env: dict | None = None) -> tuple:
    log = os.path.join(workdir, f"{name}.log")
    f = open(log, "ab")
    proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
                            env=env)
    f.close()
    return proc, log


def _start_nginx(name: str, workdir: str, main: str, events: str, http: str, server: str) -> Server:
    """nginx in the foreground with its own prefix under workdir; main, events, http and server are the blocks'
    own directives (the port is filled in for {port} in server)."""
    prefix = os.path.join(workdir, name)
    for d in ("logs", "tmp"):
        os.makedirs(os.path.join(prefix, d), exist_ok=True)
    os.chmod(os.path.join(prefix, "tmp"), 0o777)
    port = free_port()
    conf = f"""
{main}
daemon off;
master_process on;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ {events} }}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    {http}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        {server}
    }}
}}
"""
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    proc, log = _spawn(name, ["nginx", "-p", prefix, "-c", path, "-e", f"{prefix}/logs/error.log"], workdir)
    wait_port(port, proc)
    return Server(name, proc, port, workdir, log)


def start_nchan(workdir: str, workers: int | str = "auto") -> Server:
    """nginx + nchan: /pub?id=<ch> publishes, /sub/<ch> is an EventSource."""
    server = _start_nginx("nginx", workdir,
                          f"load_module {NCHAN_MODULE};\nworker_processes {workers};\nworker_rlimit_nofile 20000;",
                          "worker_connections 16000; use epoll; multi_accept on;",
                          "nchan_max_reserved_memory 512M;", """
        location = /pub {
            nchan_publisher;
            nchan_channel_id $arg_id;
            nchan_message_buffer_length 200;
            nchan_message_timeout 5m;
        }
        location ~ ^/sub/([A-Za-z0-9_]+)$ {
            nchan_subscriber eventsource;
            nchan_channel_id $1;
            nchan_eventsource_ping_interval 30;
        }""")
    server.name = "nchan"
    return server


def start_nginx_fixed(workdir: str, path: str, response: bytes) -> Server:
    """nginx, one worker, answering POST <path> with a fixed JSON body over HTTP/1.1 keep-alive: the C ceiling for
    `h2load --h1` (nghttpd speaks only HTTP/2)."""
    body = response.decode().replace("\\", "\\\\").replace("'", "\\'")
    return _start_nginx("nginx-fixed", workdir, "worker_processes 1;", "worker_connections 4096; use epoll;", "",
                        f"location = {path} {{ default_type application/json; return 200 '{body}'; }}")


def start_mosquitto(workdir: str) -> Server:
    """mosquitto with persistence on (its own directory) and no limit on queued QoS 1 messages."""
    d = os.path.join(workdir, "mosquitto")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)  # when started as root, mosquitto drops to its own user
    port = free_port()
    conf = f"""
listener {port} 127.0.0.1
allow_anonymous true
persistence true
persistence_location {d}/
max_queued_messages 0
max_inflight_messages 20
max_connections -1
log_dest stderr
log_type error
log_type warning
"""
    path = os.path.join(d, "mosquitto.conf")
    with open(path, "w") as f:
        f.write(conf)
    proc, log = _spawn("mosquitto", ["mosquitto", "-c", path], workdir)
    wait_port(port, proc)
    return Server("mosquitto", proc, port, workdir, log)


def start_nghttpd(workdir: str, response: bytes) -> Server:
    """nghttpd (libnghttp2's C server) over cleartext HTTP/2 answering /fcm/send with a fixed FCM response."""
    root = os.path.join(workdir, "nghttpd-root")
    os.makedirs(os.path.join(root, "fcm"), exist_ok=True)
    with open(os.path.join(root, "fcm", "send"), "wb") as f:
        f.write(response)
    port = free_port()
    proc, log = _spawn("nghttpd", ["nghttpd", "--no-tls", "-d", root, str(port)], workdir)
    wait_port(port, proc)
    return Server("nghttpd", proc, port, workdir, log)


def start_pushrelay(binary: str, workdir: str, data_dir: str, extra: list | None = None) -> Server:
    """`pushrelay serve` on a free loopback port; waits for its `pushrelay listening on` line."""
    os.makedirs(data_dir, exist_ok=True)
    port = free_port()
    # No message-rate quotas: the benchmarks send far more to one device or topic than a real sender may.
    argv = [binary, "serve", "--init", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
            "--device-message-rate", "0", "--topic-message-rate", "0", "--project-message-rate", "0",
            "--registration-rate", "0", "--registration-rate-per-address", "0"] + (extra or [])
    proc, log = _spawn("pushrelay", argv, workdir)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"pushrelay exited with {proc.returncode}: {open(log).read()[-2000:]}")
        with open(log, errors="replace") as f:
            if "pushrelay listening on" in f.read():
                break
        time.sleep(0.05)
    else:
        raise RuntimeError("pushrelay did not print its listening line within 60 s")
    wait_port(port, proc)
    return Server("pushrelay", proc, port, workdir, log)


def pushrelay_project(binary: str, data_dir: str, name: str) -> dict:
    out = subprocess.run([binary, "project", "create", name, "--data-dir", data_dir, "--json"], check=True,
                         capture_output=True, timeout=60).stdout
    return json.loads(out)
