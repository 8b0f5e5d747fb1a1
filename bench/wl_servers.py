"""Server workloads for workloads.py: throughput over loopback (127.0.0.1).

Two directions for each of redis and nginx: the server under the runner with
the load generator native (redis-benchmark, wrk), and the server native with
the load generator under the runner.  Ports are free ones the kernel picks
(bind to port 0); servers run in a session of their own and are always
stopped (SIGTERM, then SIGKILL of the whole group), also on error or ^C.
Load generators are bounded in requests (redis) or time (wrk).
"""

import http.client
import os
import re
import signal
import socket
import subprocess
import time

from common import run_cmd, status_text, why_line, work_env
from wl_batch import Workload

# Server rows run only under these; the others are listed as skipped.
SERVER_RUNNERS = ("native", "zvisor", "zvisor-sud")
READY_TIMEOUT = 30.0
PAGE = "".join(f"line {i:03d} of the zvisor bench page\n" for i in range(32))  # ~1 KiB


class ServerError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server process (under a runner or not), stopped on leaving the block."""

    def __init__(self, argv, cwd, log_path):
        self.argv, self.cwd, self.log_path = argv, cwd, log_path

    def __enter__(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=work_env(),
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def __exit__(self, *exc):
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                pass
        self.log.close()

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_ready(self, ready):
        """Poll ready() until it returns True; the server dying or taking
        longer than READY_TIMEOUT raises ServerError."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise ServerError(f"server {status_text(rc)}: {why_line(self.output())}")
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise ServerError(f"server not ready within {READY_TIMEOUT:.0f} s: "
                          f"{why_line(self.output()) or 'no output'}")


class ServerWorkload(Workload):
    unit = "req/s"
    higher_is_better = True
    server_under_runner = True

    def skip_reason(self, runner):
        if runner.key in SERVER_RUNNERS:
            return None
        if runner.kind == "gvisor":
            return ("`runsc do --network=none` gives the sandbox a loopback of its own that "
                    "the host cannot reach (nor the sandbox the host's)")
        return ("trace runners are measured on the batch rows: a server row costs 5 x "
                "(10 s wrk or 200,000 requests) per runner, beyond the 20-minute budget")

    def fmt_value(self, v):
        return f"{v / 1000:.1f}k req/s"

    def measure(self, runner, run_dir, args):
        try:
            return self.measure_pair(runner, run_dir, args)
        except ServerError as e:
            return None, str(e), None

    def server_argv(self, run_dir, port):
        raise NotImplementedError

    def client_argv(self, port, args):
        raise NotImplementedError

    def measure_pair(self, runner, run_dir, args):
        """Start the server (under runner or native), check it answers right,
        run the client (native or under runner), check and parse its output."""
        port = free_port()
        trace = os.path.join(run_dir, "trace.out")
        server = self.server_argv(run_dir, port)
        client = self.client_argv(port, args)
        if self.server_under_runner:
            server = runner.argv(server, trace)
        else:
            client = runner.argv(client, trace)
        with Server(server, os.path.join(run_dir, "work"),
                    os.path.join(run_dir, "server.log")) as srv:
            srv.wait_ready(lambda: self.ready(port))
            before = self.served(port)
            rc, out, err, _ = run_cmd(client, self.client_timeout(args), cwd=run_dir,
                                      env=work_env())
            if rc is None:
                raise ServerError(f"timed out: client killed after "
                                  f"{self.client_timeout(args):.0f} s")
            if rc != 0:
                raise ServerError(f"client {status_text(rc)}: {why_line(err) or why_line(out)}")
            value, detail = self.parse(out)
            self.check_served(before, self.served(port), args)
        return value, None, detail


# ---------------------------------------------------------------------------
# redis

def redis_call(port, *words):
    """Send one command, return its reply: a status/error/integer line, or
    the text of a bulk string."""
    req = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(req.encode())
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                raise ServerError("redis closed the connection")
            data += chunk
        head, rest = data.split(b"\r\n", 1)
        if not head.startswith(b"$") or head == b"$-1":
            return head.decode()
        size = int(head[1:])
        while len(rest) < size + 2:
            chunk = s.recv(65536)
            if not chunk:
                raise ServerError("redis closed the connection")
            rest += chunk
        return rest[:size].decode()


class Redis(ServerWorkload):
    tools = [("redis-server", "redis-server"), ("redis-benchmark", "redis-tools")]

    def server_argv(self, run_dir, port):
        return ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--daemonize", "no", "--dir", os.path.join(run_dir, "work")]

    def requests(self, args):
        return 20000 if args.quick else 100000

    def client_argv(self, port, args):
        return ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
                "-n", str(self.requests(args)), "-q", "-t", "set,get"]

    def client_timeout(self, args):
        return 120.0

    def ready(self, port):
        return redis_call(port, "PING") == "+PONG"

    def served(self, port):
        """Commands processed so far; also checks that SET then GET round-trips."""
        value = f"zvbench-{port}"
        if redis_call(port, "SET", "zvbench:check", value) != "+OK" or \
                redis_call(port, "GET", "zvbench:check") != value:
            raise ServerError("redis SET/GET check failed")
        m = re.search(r"total_commands_processed:(\d+)", redis_call(port, "INFO", "stats"))
        if not m:
            raise ServerError("no total_commands_processed in INFO stats")
        return int(m.group(1))

    def check_served(self, before, after, args):
        if after - before < 2 * self.requests(args):
            raise ServerError(f"redis processed {after - before} commands, fewer than the "
                              f"{2 * self.requests(args)} the benchmark claims")

    def parse(self, out):
        rates = dict(re.findall(r"\b(SET|GET): ([\d.]+) requests per second", out))
        if set(rates) != {"SET", "GET"}:
            raise ServerError(f"no SET/GET rates in redis-benchmark's output: "
                              f"{why_line(out)!r}")
        s, g = float(rates["SET"]), float(rates["GET"])
        # As many SETs as GETs: the combined rate is their harmonic mean.
        return 2 / (1 / s + 1 / g), {"set_rps": s, "get_rps": g}


class RedisServer(Redis):
    key, label = "redis-server", "redis-server (redis-benchmark native)"

    @property
    def description(self):
        n = self.requests(self.args)
        return ("`redis-server` (no persistence) under the runner; native `redis-benchmark "
                f"-n {n} -q -t set,get`; req/s = harmonic mean of SET and GET; checked: "
                f"SET/GET round trip, INFO's command count grew by >= {2 * n:,}")


class RedisClient(Redis):
    key, label = "redis-client", "redis-benchmark (redis-server native)"

    @property
    def description(self):
        return ("the reverse: native `redis-server`, `redis-benchmark -n "
                f"{self.requests(self.args)}` under the runner, same checks")
    server_under_runner = False


# ---------------------------------------------------------------------------
# nginx

NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
error_log stderr;
pid {run}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {run}/tmp-body;
    proxy_temp_path {run}/tmp-proxy;
    fastcgi_temp_path {run}/tmp-fastcgi;
    uwsgi_temp_path {run}/tmp-uwsgi;
    scgi_temp_path {run}/tmp-scgi;
    server {{
        listen 127.0.0.1:{port};
        root {run}/www;
        location / {{ }}
    }}
}}
"""


def http_get(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/index.html")
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


class Nginx(ServerWorkload):
    tools = [("nginx", "nginx"), ("wrk", "wrk")]

    def server_argv(self, run_dir, port):
        """A configuration of its own: one process (no master, so no switch to
        another user), no daemon, loopback only, logs on stderr."""
        os.makedirs(os.path.join(run_dir, "www"), exist_ok=True)
        with open(os.path.join(run_dir, "www", "index.html"), "w") as f:
            f.write(PAGE)
        conf = os.path.join(run_dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(run=run_dir, port=port))
        return ["nginx", "-e", "stderr", "-p", run_dir, "-c", conf]

    def seconds(self, args):
        return 2 if args.quick else 10

    def client_argv(self, port, args):
        return ["wrk", "-t1", "-c2", f"-d{self.seconds(args)}s",
                f"http://127.0.0.1:{port}/index.html"]

    def client_timeout(self, args):
        return self.seconds(args) + 60.0

    def ready(self, port):
        return http_get(port) == (200, PAGE)

    def served(self, port):
        status, body = http_get(port)
        if (status, body) != (200, PAGE):
            raise ServerError(f"GET /index.html: status {status}, {len(body)} bytes: wrong page")
        return 0

    def check_served(self, before, after, args):
        pass

    def parse(self, out):
        m = re.search(r"Requests/sec:\s+([\d.]+)", out)
        n = re.search(r"(\d+) requests in", out)
        if not m or not n or int(n.group(1)) == 0:
            raise ServerError(f"no request rate in wrk's output: {why_line(out)!r}")
        for bad in ("Non-2xx or 3xx responses", "Socket errors"):
            if bad in out:
                line = next(l for l in out.splitlines() if bad in l)
                raise ServerError(f"wrk: {line.strip()}")
        return float(m.group(1)), {"requests": int(n.group(1))}


class NginxServer(Nginx):
    key, label = "nginx-server", "nginx (wrk native)"

    @property
    def description(self):
        return ("`nginx` (own config in the run directory, one process, no daemon) under "
                f"the runner serving a 1 KiB file; native `wrk -t1 -c2 -d{self.seconds(self.args)}s"
                " http://127.0.0.1:PORT/index.html`; checked: the page's content, no socket "
                "errors, no non-2xx answers")


class WrkClient(Nginx):
    key, label = "wrk-client", "wrk (nginx native)"

    @property
    def description(self):
        return (f"the reverse: native `nginx`, `wrk -t1 -c2 -d{self.seconds(self.args)}s` under "
                "the runner, same checks")
    server_under_runner = False


def workloads(args):
    return [cls(args) for cls in (RedisServer, RedisClient, NginxServer, WrkClient)]
