"""The benchmark on object storage (`bench/run --s3`): a local S3 server on
127.0.0.1 that counts every request both sides send, and the benchmark's
arrays uploaded to one bucket. Nothing leaves the machine: both sides are
given the endpoint and test credentials explicitly.

Two servers (`--server`):
- `s3s` (the default): `tiledb-bench-s3-server` (bench/s3-server), s3s-fs
  over a temporary folder, in a process of its own, reading only the range a
  GET asks, counting requests itself.
- `moto`: moto's server mode (from TileDB's venv), a thread of this process,
  behind a Python proxy that counts requests. Every byte passes through both
  Python loops, and a ranged GET reads the whole object (unless
  `--ranged-server`), so it measures the server more than the clients.
"""

import concurrent.futures
import os
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import urllib.request

BUCKET = "bench"
KEY_ID = SECRET = "testing"
REGION = "us-east-1"


def start_moto():
    """A moto S3 server on a free port of 127.0.0.1 (a thread of this
    process, gone when it ends): its port."""
    import logging

    from moto.server import ThreadedMotoServer

    # Its request log would drown the table.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    return server, server.get_host_and_port()[1]


def serve_only_the_range_asked():
    """moto answers a ranged GET by reading the whole object, then slicing it
    (`FakeKey.value`, then `S3Response._handle_range_header`): a GET of
    64 KiB of a 33 MB file costs it the 33 MB. S3 reads only the range.
    With this, a GET of one plain range (`bytes=a-b`, `bytes=a-`, `bytes=-n`)
    is given a view of the key that reads only the bytes sliced from it, so
    the server's cost follows the bytes asked, alike for both clients.
    Everything else (headers, errors, whole GETs, other requests) is moto's
    own code, unchanged."""
    import threading

    from moto.s3 import models, responses

    ranged = threading.local()

    class KeyView:
        """A key's bytes read only where sliced (under the key's lock)."""

        def __init__(self, key):
            self.key = key

        def __len__(self):
            return self.key.size

        def __getitem__(self, part):
            start, stop, _ = part.indices(len(self))
            with self.key.lock:
                self.key._value_buffer.seek(start)
                return self.key._value_buffer.read(max(0, stop - start))

    whole_value = models.FakeKey.value

    def value(key):
        if getattr(ranged, "on", False):
            return KeyView(key)
        return whole_value.fget(key)

    models.FakeKey.value = property(value, whole_value.fset)
    get_object = responses.S3Response.get_object

    def get_object_of_a_range(self):
        asked = self.headers.get("range", "") or ""
        ranged.on = asked.startswith("bytes=") and "," not in asked
        try:
            status, headers, body = get_object(self)
        finally:
            ranged.on = False
        if isinstance(body, KeyView) and status != 200:
            body = body[0 : len(body)]
        return status, headers, body

    responses.S3Response.get_object = get_object_of_a_range
    handle_range = responses.S3Response._handle_range_header

    def handle_range_of_a_view(self, request, headers, content):
        status, headers, body = handle_range(self, request, headers, content)
        if isinstance(body, KeyView):
            # A range moto chose to answer whole (past the end, unparsed).
            body = body[0 : len(body)]
        return status, headers, body

    responses.S3Response._handle_range_header = handle_range_of_a_view


def _read_request(rfile):
    """One request from a client: its head (rewritten to close the
    connection after the answer) and its body, or None at EOF."""
    lines = []
    length = 0
    chunked = False
    while True:
        line = rfile.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        lower = line.lower()
        if lower.startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1].strip() or 0)
        elif lower.startswith(b"transfer-encoding:") and b"chunked" in lower:
            chunked = True
        if lower.startswith(b"connection:") or lower.startswith(b"expect:"):
            continue
        lines.append(line)
    head = b"".join(lines) + b"Connection: close\r\n\r\n"
    if not chunked:
        return head, rfile.read(length)
    body = b""
    while True:
        size_line = rfile.readline()
        body += size_line
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while True:
                trailer = rfile.readline()
                body += trailer
                if trailer in (b"\r\n", b"\n", b""):
                    return head, body
        body += rfile.read(size + 2)


class Proxy:
    """Forwards each request to the server on its own connection and counts
    it; `take()` returns the count since the last call."""

    def __init__(self, upstream):
        proxy = self
        self.lock = threading.Lock()
        self.count = 0

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                request = _read_request(self.rfile)
                if request is None:
                    return
                head, body = request
                with proxy.lock:
                    proxy.count += 1
                start = time.time()
                with socket.create_connection(("127.0.0.1", upstream)) as server:
                    server.sendall(head + body)
                    while True:
                        data = server.recv(1 << 16)
                        if not data:
                            break
                        self.wfile.write(data)
                proxy.log(head, start, time.time())

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 128

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def log(self, head, start, end):
        """Appends the request's start and end (seconds), its request line
        and its `Range` header to the file `$S3_LOG` names, if any."""
        path = os.environ.get("S3_LOG")
        if not path:
            return
        lines = head.split(b"\r\n")
        ranges = [l.decode() for l in lines if l.lower().startswith(b"range:")]
        times = f"{start:.3f} {end:.3f}"
        with self.lock, open(path, "a") as f:
            f.write(" ".join([times, lines[0].decode(errors="replace")] + ranges) + "\n")

    def mark(self, text):
        """A line `## text` in the request log, between runs."""
        path = os.environ.get("S3_LOG")
        if path:
            with self.lock, open(path, "a") as f:
                f.write(f"## {time.time():.3f} {text}\n")

    def take(self):
        with self.lock:
            count, self.count = self.count, 0
        return count


class RustServer:
    """`tiledb-bench-s3-server` over a temporary folder, on a free port of
    127.0.0.1, in its own process: the same `port`, `take()`, `mark()` and
    `stop()` as the moto pair (`MotoServer`)."""

    def __init__(self, binary):
        self.root = tempfile.mkdtemp(prefix="tiledb-bench-s3-")
        self.process = subprocess.Popen(
            [binary, "--root", self.root, "--port", "0", "--access-key", KEY_ID, "--secret-key", SECRET],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"the S3 server did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        # Uploads are counted too; the count is reset before each workload.
        self.upload_port = self.port

    def take(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/requests") as answer:
            return int(answer.read())

    def mark(self, text):
        """A line `## text` in the request log (`$S3_LOG`), between runs."""
        path = os.environ.get("S3_LOG")
        if path:
            with open(path, "a") as f:
                f.write(f"## {time.time():.3f} {text}\n")

    def stop(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class MotoServer:
    """moto (a thread of this process) behind the counting `Proxy`."""

    def __init__(self, ranged):
        if ranged:
            serve_only_the_range_asked()
        self.moto, moto_port = start_moto()
        self.proxy = Proxy(moto_port)
        self.port = self.proxy.port
        self.upload_port = moto_port

    def take(self):
        return self.proxy.take()

    def mark(self, text):
        self.proxy.mark(text)

    def stop(self):
        self.moto.stop()


def make_bucket(port):
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )
    client.create_bucket(Bucket=BUCKET)
    return client


def upload(client, local, prefix):
    """Every file below `local` to `s3://bench/<prefix>/…`, 16 at a time."""
    files = []
    for folder, _, names in os.walk(local):
        for name in names:
            if name.startswith(".bench"):
                continue
            path = os.path.join(folder, name)
            files.append((path, f"{prefix}/{os.path.relpath(path, local)}"))

    def put(item):
        path, key = item
        with open(path, "rb") as f:
            client.put_object(Bucket=BUCKET, Key=key, Body=f.read())

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(put, files))
    return len(files)


def tiledb_config(port):
    """TileDB's configuration for the proxy at `port`."""
    return {
        "vfs.s3.endpoint_override": f"127.0.0.1:{port}",
        "vfs.s3.scheme": "http",
        "vfs.s3.use_virtual_addressing": "false",
        "vfs.s3.region": REGION,
        "vfs.s3.aws_access_key_id": KEY_ID,
        "vfs.s3.aws_secret_access_key": SECRET,
        "vfs.s3.verify_ssl": "false",
    }


def our_config(port):
    """Our `open_url` configuration for the proxy at `port`."""
    return [
        ["aws_endpoint", f"http://127.0.0.1:{port}"],
        ["aws_allow_http", "true"],
        ["aws_access_key_id", KEY_ID],
        ["aws_secret_access_key", SECRET],
        ["aws_region", REGION],
        ["aws_virtual_hosted_style_request", "false"],
    ]


def _median(values):
    values = sorted(values)
    n = len(values)
    return None if n == 0 else (values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2)


def run_workloads(args, chosen, paths, run_side, here):
    """Every read and open workload on the bucket, TileDB and ours
    alternating run by run (each run a fresh process: nothing cached), the
    requests of each run counted at the proxy. Returns the rows and the
    names of the workloads that failed or whose results differ."""
    import json
    import time

    if args.server == "s3s":
        server = RustServer(args.s3_server)
    else:
        server = MotoServer(args.ranged_server)
    client = make_bucket(server.upload_port)
    for name in sorted({w["array"] for w in chosen}):
        start = time.time()
        n = upload(client, paths[name], name)
        print(f"  uploaded {name}: {n} objects in {time.time() - start:.1f} s", flush=True)
    header = (
        f"{'workload on S3':<30} {'cells':>9} | {'TileDB s':>9} {'ours s':>9} {'speed':>7} | "
        f"{'TileDB requests':>15} {'ours':>6}"
    )
    print(header)
    print("-" * len(header), flush=True)
    rows, failures = [], []
    for w in chosen:
        spec = dict(
            w,
            path=f"s3://{BUCKET}/{w['array']}",
            runs=1,
            tiledb_config=tiledb_config(server.port),
            config=our_config(server.port),
        )
        sides = {"TileDB": [], "ours": []}
        server.take()
        for _ in range(args.runs):
            for side, command in [
                ("TileDB", [args.python, os.path.join(here, "tiledb_side.py"), "read", json.dumps(spec)]),
                ("ours", [args.ours, json.dumps(spec)]),
            ]:
                server.mark(f"{w['name']} {side}")
                result = run_side(command, args.timeout)
                result["requests"] = server.take()
                sides[side].append(result)
        errors = [f"{side}: {r['error']}" for side, rs in sides.items() for r in rs if "error" in r]
        ok = {side: [r for r in rs if "error" not in r] for side, rs in sides.items()}
        t = _median([r["times"][0] for r in ok["TileDB"]])
        o = _median([r["times"][0] for r in ok["ours"]])
        treq = _median([r["requests"] for r in ok["TileDB"]])
        oreq = _median([r["requests"] for r in ok["ours"]])
        outcome = lambda rs: {(r["cells"], r["bytes"], r.get("digest")) for r in rs}
        differ = w["kind"] != "open" and outcome(ok["TileDB"]) != outcome(ok["ours"])
        if errors or differ or t is None or o is None:
            failures.append(w["name"])
        cells = ok["ours"][0]["cells"] if ok["ours"] else 0
        speed = f"{t / o:.2f}x" if t and o else "-"
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        print(
            f"{w['name']:<30} {cells:>9} | {fmt(t):>9} {fmt(o):>9} {speed:>7} | "
            f"{'-' if treq is None else int(treq):>15} {'-' if oreq is None else int(oreq):>6}"
            + ("  RESULTS DIFFER" if differ else ""),
            flush=True,
        )
        for e in errors:
            print(f"    {e}", flush=True)
        rows.append(
            dict(
                workload=w["name"],
                s3=True,
                tiledb=dict(median=t, requests=treq),
                ours=dict(median=o, requests=oreq),
                ratio=t / o if t and o else None,
            )
        )
    server.stop()
    return rows, failures
