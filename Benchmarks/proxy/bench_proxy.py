"""Runs the proxy benchmark: nginx as origin, the ThumbnailServer and thumbor in turn, wrk as the client.

Started by bench.sh (which installs, builds and makes the sources) with the build folder's virtualenv Python:

  bench_proxy.py --build DIR --sources DIR --venv DIR --root REPO --out DIR

Per round, per output format, per concurrency, each configuration of servers.CONFIGS in turn: start the server
pinned to $CPUS, check a sample of its answers with Pillow, warm it up, then drive it with wrk for $DURATION
seconds while reading its processes' CPU time from /proc, then read their peak RSS (VmHWM, summed) and stop it.
Every request names a source URL never asked before (a nonce path segment nginx strips), so nothing is served
from a result cache. With "vips" among $CONFIGS (the default), each round and format also runs libvips in-process
(vips_worker.py, servers.LIBVIPS) on the same sources, and the preflight fetches every source's thumbnail from the
ThumbnailServer once for the mean output size. Writes results.json, RESULTS.md and results.png into --out
(report.py).
"""

import argparse
import datetime
import http.client
import io
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
import servers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLK_TCK = os.sysconf("SC_CLK_TCK")
EXT = {"jpeg": "jpg", "png": "png", "png-rgba": "png", "webp": "webp", "avif": "avif"}
PIL_FORMAT = {"jpeg": "JPEG", "png": "PNG", "webp": "WEBP", "avif": "AVIF"}


def log(message):
    print(f"bench-proxy: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expand(template, **values):
    """Replaces {name} placeholders that `values` has; leaves any other brace text alone."""
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def http_get(port, path, headers=None, timeout=60):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


# --- /proc ---------------------------------------------------------------------------------------------------------

def descendants(root):
    """`root` and every process below it."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except OSError:
            pass
    return total / CLK_TCK


def status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def machine_cpu():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# --- nginx, the origin ---------------------------------------------------------------------------------------------

class Origin:
    """nginx serving the sources; `/n/<nonce>/<path>` serves `<path>`, and every request is logged."""

    def __init__(self, root, work):
        self.root, self.work = root, work
        self.port = free_port()
        self.log_path = os.path.join(work, "access.log")
        os.makedirs(os.path.join(work, "tmp"), exist_ok=True)
        conf = os.path.join(work, "nginx.conf")
        temp = os.path.join(work, "tmp")
        user = "user root;\n" if os.geteuid() == 0 else ""  # workers read the build folder, whatever its modes
        with open(conf, "w") as f:
            f.write(f"""{user}worker_processes 2;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
daemon off;
events {{ worker_connections 4096; }}
http {{
    log_format bench '$request_uri $status $body_bytes_sent';
    access_log {self.log_path} bench buffer=64k flush=1s;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {temp};
    proxy_temp_path {temp};
    fastcgi_temp_path {temp};
    uwsgi_temp_path {temp};
    scgi_temp_path {temp};
    types {{ image/jpeg jpg; image/png png; image/webp webp; image/avif avif; }}
    server {{
        listen 127.0.0.1:{self.port};
        root {root};
        location /n/ {{ rewrite ^/n/[^/]+/(.*)$ /$1 break; }}
    }}
}}
""")
        nginx = "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else "nginx"
        self.process = subprocess.Popen([nginx, "-p", work, "-c", conf], start_new_session=True)
        for _ in range(100):
            try:
                if http_get(self.port, "/n/x/jpeg/000.jpg", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"nginx did not serve {root}; see {work}/error.log")

    def url(self, folder, name, nonce="NONCE"):
        return f"http://127.0.0.1:{self.port}/n/{nonce}/{folder}/{name}.{EXT[folder]}"

    def count(self, marker):
        """Requests logged whose URI contains `marker` (the log is flushed every second)."""
        time.sleep(1.2)
        with open(self.log_path, errors="replace") as f:
            return sum(1 for line in f if marker in line)

    def counts_by_run(self):
        time.sleep(1.2)
        counts = {}
        with open(self.log_path, errors="replace") as f:
            for line in f:
                m = re.match(r"/n/(r\d+)-", line)
                if m:
                    counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        return counts

    def stop(self):
        stop_group(self.process)


def stop_group(process, timeout=15):
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


# --- The servers under test -----------------------------------------------------------------------------------------

class Server:
    """One server configuration of servers.CONFIGS, started pinned to the benchmark's cores."""

    def __init__(self, config, args, work):
        self.config = config
        self.spec = servers.SDK if config["server"] == "sdk" else servers.THUMBOR
        self.port, self.metrics_port = free_port(), free_port()
        self.work = work
        os.makedirs(work, exist_ok=True)
        values = {"port": self.port, "metrics_port": self.metrics_port, "workdir": work,
                  "binary": args.server_bin, "venv": args.venv, "processes": config.get("processes", 1)}
        if config["server"] == "thumbor":
            with open(os.path.join(work, "thumbor.conf"), "w") as f:
                f.write(servers.THUMBOR_CONF)
        command = ["taskset", "-c", args.cpus] + [expand(part, **values) for part in self.spec["command"]]
        env = dict(os.environ)
        env.update({name: expand(value, **values) for name, value in self.spec["env"].items()})
        self.metrics_url = expand(self.spec.get("metrics_url", ""), **values)
        self.log_file = open(os.path.join(work, "server.log"), "wb")
        self.process = subprocess.Popen(command, env=env, stdout=self.log_file, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{config['label']} exited at start; see {work}/server.log")
            try:
                # Up once it answers at all (a server whose metrics moved off this port answers 404 there).
                if http_get(self.port, self.spec["ready_path"], timeout=2)[0] < 500:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            raise RuntimeError(f"{config['label']} not ready after 120 s; see {work}/server.log")
        if config.get("processes", 1) > 1:  # wait for the forked workers
            for _ in range(50):
                if len(self.pids()) > config["processes"]:
                    break
                time.sleep(0.1)

    def pids(self):
        return descendants(self.process.pid)

    def peak_rss_mb(self):
        return sum(status_kb(pid, "VmHWM") for pid in self.pids()) / 1024

    def request(self, origin, folder, fmt, image, nonce="NONCE"):
        """(path, headers) of the thumbnail of `image` in `fmt`, its source in `folder`."""
        source = origin.url(folder, image["name"], nonce)
        values = {"source": source, "source_q": urllib.parse.quote(source, safe=""),
                  "source_thumbor": source.split("://", 1)[1], "format": fmt, "mime": servers.MIME[fmt]}
        headers = {name: expand(value, **values) for name, value in self.spec["headers"].items()}
        if not self.config["keepalive"]:
            headers["Connection"] = "close"
        return expand(self.spec["path"], **values), headers

    def metrics(self):
        """Each logical metric of servers.SDK["metrics"] summed over its series, or None when not exposed."""
        if not self.metrics_url:
            return {}
        url = urllib.parse.urlsplit(self.metrics_url)
        status, _, body = http_get(url.port, url.path or "/")
        if status != 200:
            return {}
        series = {}
        for line in body.decode(errors="replace").splitlines():
            if line and not line.startswith("#"):
                m = re.match(r"([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)", line)
                if m:
                    series[m.group(1)] = series.get(m.group(1), 0.0) + float(m.group(3))
        found = {}
        for logical, names in self.spec.get("metrics", {}).items():
            name = next((n for n in names if n in series), None)
            found[logical] = (name, series[name]) if name else None
        return found

    def stop(self):
        stop_group(self.process)
        self.log_file.close()


def expected_sizes(image, box=servers.BOX):
    """The sizes a fit-inside `box` of `image` may have: longest side `box`, the other rounded either way."""
    w, h = image["width"], image["height"]
    scale = box / max(w, h)
    if w >= h:
        return {(box, int(h * scale)), (box, int(h * scale) + 1)}
    return {(int(w * scale), box), (int(w * scale) + 1, box)}


def check_sample(server, origin, folder, fmt, images, nonce_prefix):
    """Fetches a few thumbnails one by one and checks them fully with Pillow; returns a list of problems."""
    problems = []
    picks = [images[0], next((i for i in images if i["height"] > i["width"]), images[1]), images[len(images) // 2]]
    for n, image in enumerate(picks):
        path, headers = server.request(origin, folder, fmt, image, f"{nonce_prefix}s{n}")
        status, response_headers, body = http_get(server.port, path, headers)
        if status != 200:
            problems.append(f"{image['name']}: HTTP {status} {body[:120]!r}")
            continue
        try:
            with Image.open(io.BytesIO(body)) as thumbnail:
                thumbnail.load()
                got_format, size = thumbnail.format, thumbnail.size
        except Exception as error:  # noqa: BLE001 — any decode failure is the finding
            problems.append(f"{image['name']}: Pillow cannot decode the answer ({error})")
            continue
        if got_format != PIL_FORMAT[fmt]:
            problems.append(f"{image['name']}: {got_format} instead of {PIL_FORMAT[fmt]} "
                            f"(Content-Type {response_headers.get('Content-Type')})")
        elif size not in expected_sizes(image):
            problems.append(f"{image['name']}: {size[0]}x{size[1]}, expected one of {sorted(expected_sizes(image))}")
    return problems


# --- wrk -------------------------------------------------------------------------------------------------------------

def lua_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_lua(path, server, origin, folder, fmt, images, run_id):
    pre, post = [], []
    headers = {}
    for image in images:
        request_path, headers = server.request(origin, folder, fmt, image)
        assert request_path.count("NONCE") == 1, request_path
        before, after = request_path.split("NONCE")
        pre.append(before)
        post.append(after)
    allowed = sorted({f"{w}x{h}" for image in images for (w, h) in expected_sizes(image)})
    with open(os.path.join(HERE, "rotate.lua")) as f:
        body = f.read()
    with open(path, "w") as f:
        f.write("PRE = {" + ", ".join(map(lua_string, pre)) + "}\n")
        f.write("POST = {" + ", ".join(map(lua_string, post)) + "}\n")
        f.write(f"RUN_ID = {lua_string(run_id)}\nEXPECT = {lua_string(fmt)}\n")
        f.write("HEADERS = {" + ", ".join(f"[{lua_string(k)}] = {lua_string(v)}" for k, v in headers.items()) + "}\n")
        f.write("ALLOWED = {" + ", ".join(f"[{lua_string(s)}] = true" for s in allowed) + "}\n")
        f.write(body)


def run_wrk(port, lua, concurrency, seconds):
    threads = min(2, concurrency)
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "60s",
                          "-s", lua, f"http://127.0.0.1:{port}"], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("BENCHJSON "):
            return json.loads(line[len("BENCHJSON "):])
    raise RuntimeError(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")


# --- The benchmark ---------------------------------------------------------------------------------------------------

def measure(args, origin, config, fmt, folder, concurrency, images, round_index, run_number):
    work = os.path.join(args.build, "run", f"{run_number:03d}-{config['id']}-{fmt}-c{concurrency}")
    server = Server(config, args, work)
    run_id = f"r{run_number:03d}"
    try:
        problems = check_sample(server, origin, folder, fmt, images, f"{run_id}check")
        lua = os.path.join(work, "rotate.lua")
        write_lua(lua, server, origin, folder, fmt, images, f"{run_id}warm")
        run_wrk(server.port, lua, concurrency, args.warmup)
        time.sleep(0.5)  # requests the warm-up's wrk left in flight finish outside the measured window
        write_lua(lua, server, origin, folder, fmt, images, run_id)
        pids = server.pids()
        cpu0, machine0, t0 = cpu_seconds(pids), machine_cpu(), time.monotonic()
        result = run_wrk(server.port, lua, concurrency, args.duration_avif if fmt == "avif" else args.duration)
        wall = time.monotonic() - t0
        cpu1, machine1 = cpu_seconds(server.pids()), machine_cpu()
        peak = server.peak_rss_mb()
        processes = len(server.pids())
    finally:
        server.stop()
        subprocess.run(["rm", "-rf", os.path.join(work, "cache")])
    requests = max(result["requests"], 1)
    seconds = result["duration_us"] / 1e6
    server_cpu = cpu1 - cpu0
    busy, total = machine1[0] - machine0[0], machine1[1] - machine0[1]
    return {
        "config": config["id"], "format": fmt, "source_folder": folder, "concurrency": concurrency,
        "round": round_index, "run_id": run_id,
        "requests": result["requests"], "seconds": seconds, "rps": result["requests"] / seconds,
        "cpu_ms_per_request": server_cpu * 1000 / requests, "server_cpu_cores": server_cpu / wall,
        "machine_busy_cores": busy / total * os.cpu_count() if total else None,
        "p50_ms": result["p50_us"] / 1000, "p90_ms": result["p90_us"] / 1000, "p99_ms": result["p99_us"] / 1000,
        "max_ms": result["max_us"] / 1000, "peak_rss_mb": peak, "processes": processes,
        "checked_ok": result["ok"], "bad_status": result["bad_status"], "bad_format": result["bad_format"],
        "bad_size": result["bad_size"], "socket_errors": {k: result[k] for k in
                                                          ("connect_errors", "read_errors", "write_errors",
                                                           "timeouts")},
        "sample_problems": problems, "mb_per_s": result["bytes"] / seconds / 2**20,
    }


def measure_vips(args, fmt, folder, round_index):
    """libvips in-process: servers.LIBVIPS["processes"] workers side by side, pinned to $CPUS (vips_worker.py).
    In the first round the first worker surveys every source first (sizes, full checks), before the timed loop."""
    spec = servers.LIBVIPS
    seconds = args.duration_avif if fmt == "avif" else args.duration
    with open(os.path.join(args.sources, "manifest.json")) as f:
        count = len(json.load(f)["images"])
    env = dict(os.environ, VIPS_CONCURRENCY="1")
    workers = [subprocess.Popen(
        ["taskset", "-c", args.cpus, os.path.join(args.venv, "bin", "python"), os.path.join(HERE, "vips_worker.py"),
         "--sources", args.sources, "--folder", folder, "--format", fmt, "--seconds", str(seconds),
         "--warmup", str(args.warmup), "--start", str(i * count // spec["processes"]),
         "--save", json.dumps(spec["save"][fmt])] + (["--survey"] if i == 0 and round_index == 1 else []),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for i in range(spec["processes"])]
    machine0 = machine_cpu()
    outputs = []
    for worker in workers:
        out, err = worker.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        if worker.returncode != 0 or not lines:
            raise RuntimeError(f"vips_worker.py failed ({worker.returncode}):\n{out}\n{err}")
        outputs.append(json.loads(lines[-1]))
    machine1 = machine_cpu()
    thumbnails = sum(o["thumbnails"] for o in outputs)
    wall = statistics.mean(o["wall_s"] for o in outputs)
    busy, total = machine1[0] - machine0[0], machine1[1] - machine0[1]
    return {
        "format": fmt, "source_folder": folder, "round": round_index, "processes": spec["processes"],
        "thumbnails": thumbnails, "seconds": wall, "rate": thumbnails / wall,
        "cpu_ms_per_thumbnail": sum(o["cpu_s"] for o in outputs) * 1000 / max(thumbnails, 1),
        "mean_bytes": sum(o["bytes"] for o in outputs) / max(thumbnails, 1),
        "first_pass_sizes": outputs[0]["first_pass_sizes"] or None,
        "checked_ok": sum(o["checked_ok"] for o in outputs),
        "wrong": sum(o["wrong_answers"] + o["first_pass_wrong"] for o in outputs),
        "wrong_examples": [w for o in outputs for w in o["wrong"]][:5],
        "machine_busy_cores": busy / total * os.cpu_count() if total else None,
        "libvips": outputs[0]["libvips"], "pyvips": outputs[0]["pyvips"], "save": spec["save"][fmt],
    }


def survey_sizes(server, origin, folder, fmt, images, nonce_prefix):
    """Every source's thumbnail once, one by one, outside the measured runs: their sizes (the mean output size
    beside libvips's, over the same sources) and a full check of each with Pillow."""
    sizes, problems = [], []
    for n, image in enumerate(images):
        path, headers = server.request(origin, folder, fmt, image, f"{nonce_prefix}v{n}")
        status, _, body = http_get(server.port, path, headers)
        if status != 200:
            problems.append(f"{image['name']}: HTTP {status}")
            continue
        try:
            with Image.open(io.BytesIO(body)) as thumbnail:
                thumbnail.load()
                if thumbnail.format != PIL_FORMAT[fmt] or thumbnail.size not in expected_sizes(image):
                    problems.append(f"{image['name']}: {thumbnail.format} {thumbnail.size}")
        except Exception as error:  # noqa: BLE001 — any decode failure is the finding
            problems.append(f"{image['name']}: Pillow cannot decode the answer ({error})")
        sizes.append(len(body))
    return sizes, problems


def preflight(args, origin, images):
    """Which source folder each format uses, and which (config, format) pairs answer correctly at all."""
    folders, notes, broken, surveys = {}, [], {}, {}
    # One configuration per server: the first of each that this run measures.
    chosen = {}
    for config in servers.CONFIGS:
        if config["id"] in args.config_ids:
            chosen.setdefault(config["server"], config)
    for config in chosen.values():
        server = Server(config, args, os.path.join(args.build, "run", f"preflight-{config['id']}"))
        try:
            for fmt in args.formats:
                folder = folders.get(fmt, fmt)
                problems = check_sample(server, origin, folder, fmt, images, f"pre{config['id']}{fmt}")
                if problems and fmt == "png" and config["server"] == "sdk" and folder == "png":
                    rgba = check_sample(server, origin, "png-rgba", fmt, images, f"pre{config['id']}{fmt}a")
                    if not rgba:
                        folder = "png-rgba"
                        notes.append(
                            f"PNG: asked for PNG from an opaque RGB PNG source, this ThumbnailServer answered "
                            f"\"{problems[0]}\" (it picks PNG only for images with alpha), so the PNG runs of BOTH "
                            "servers use the same pictures saved as RGBA PNGs with an opaque alpha channel.")
                        problems = []
                folders[fmt] = folder
                if problems:
                    broken.setdefault(fmt, []).append(f"{config['label']}: {'; '.join(problems)}")
                elif config["server"] == "sdk" and args.vips:
                    sizes, wrong = survey_sizes(server, origin, folder, fmt, images, f"pre{fmt}")
                    surveys[fmt] = {"sizes": sizes, "wrong": wrong}
        finally:
            server.stop()
    for fmt in args.formats:
        folders.setdefault(fmt, fmt)
    return folders, notes, broken, surveys


def herd(args, origin, images, folders):
    """100 concurrent identical cold requests per format to one fresh ThumbnailServer; what did they cost?"""
    config = next(c for c in servers.CONFIGS if c["id"] == "sdk")
    server = Server(config, args, os.path.join(args.build, "run", "herd"))
    results = []
    try:
        for fmt in [f for f in args.herd_formats if f in args.formats]:
            nonce = f"herd{int(time.time())}{fmt}"
            path, headers = server.request(origin, folders[fmt], fmt, images[1], nonce)
            before = server.metrics()
            barrier = threading.Barrier(args.herd)
            answers = []
            lock = threading.Lock()

            def one():
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
                connection.connect()
                barrier.wait()
                try:
                    connection.request("GET", path, headers=headers)
                    response = connection.getresponse()
                    body = response.read()
                    with lock:
                        answers.append((response.status, hash(body), len(body)))
                except OSError as error:
                    with lock:
                        answers.append((str(error), 0, 0))
                finally:
                    connection.close()

            workers = [threading.Thread(target=one) for _ in range(args.herd)]
            started = time.monotonic()
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            elapsed = time.monotonic() - started
            after = server.metrics()
            deltas = {}
            for logical in servers.SDK["metrics"]:
                b, a = before.get(logical), after.get(logical)
                deltas[logical] = None if a is None else {"metric": a[0], "delta": a[1] - (b[1] if b else 0)}
            results.append({
                "format": fmt, "requests": args.herd, "ok": sum(1 for a in answers if a[0] == 200),
                "distinct_bodies": len({a[1] for a in answers if a[0] == 200}),
                "origin_requests_nginx": origin.count(f"/n/{nonce}/"), "seconds": elapsed, "metrics": deltas,
            })
            log(f"herd {fmt}: {results[-1]}")
    finally:
        server.stop()
    return results


def git(root, *arguments):
    return subprocess.run(["git", "-C", root, *arguments], capture_output=True, text=True).stdout.strip()


def versions(args):
    def first_line(command):
        try:
            out = subprocess.run(command, capture_output=True, text=True)
            return (out.stdout + out.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    import PIL
    from PIL import features
    import thumbor
    # Code only: an edited README beside the server does not change what was measured.
    server_dirty = git(args.root, "status", "--porcelain", "--", "Examples/ThumbnailServer", "Sources", "Plugins",
                       "Package.swift", ":(exclude)*.md")
    return {
        "server_commit": git(args.root, "rev-parse", "--short", "HEAD"),
        # The last commit that changed the server or the SDK: what was measured, whatever the branch adds elsewhere.
        "server_source_commit": git(args.root, "log", "-1", "--format=%h", "--", "Examples/ThumbnailServer",
                                    "Sources", "Plugins", "Package.swift"),
        "server_commit_subject": git(args.root, "log", "-1", "--format=%s"),
        "server_branch": git(args.root, "rev-parse", "--abbrev-ref", "HEAD"),
        "server_tree_dirty": bool(server_dirty),
        "server_binary": args.server_bin,
        "server_binary_built": datetime.datetime.fromtimestamp(os.path.getmtime(args.server_bin)).isoformat(
            timespec="seconds"),
        "thumbor": thumbor.__version__, "pillow": PIL.__version__, "libavif": features.version("avif"),
        "libjpeg": features.version("jpg"), "libwebp": features.version("webp"),
        "nginx": first_line(["/usr/sbin/nginx", "-v"]), "wrk": first_line(["wrk", "-v"]),
        "cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                    "?"),
        "cores": os.cpu_count(),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--sources", required=True)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    args.server_bin = os.environ["SERVER_BIN"]
    args.duration = int(os.environ.get("DURATION", "15"))
    args.duration_avif = int(os.environ.get("DURATION_AVIF", str(2 * args.duration)))  # ~10x dearer per request
    args.warmup = int(os.environ.get("WARMUP", "3"))
    args.rounds = int(os.environ.get("ROUNDS", "3"))
    args.concurrency = [int(c) for c in os.environ.get("CONCURRENCY", "2 8").split()]
    args.formats = os.environ.get("FORMATS", " ".join(servers.FORMATS)).split()
    args.config_ids = os.environ.get(
        "CONFIGS", " ".join([c["id"] for c in servers.CONFIGS] + [servers.LIBVIPS["id"]])).split()
    args.vips = servers.LIBVIPS["id"] in args.config_ids
    args.cpus = os.environ.get("CPUS", "0,1")
    args.herd = int(os.environ.get("HERD", "100"))
    # Each herd request encodes its own answer today, so a herd of AVIF takes minutes on a busy machine.
    args.herd_formats = os.environ.get("HERD_FORMATS", "jpeg png").split()
    with open(os.path.join(args.sources, "manifest.json")) as f:
        images = json.load(f)["images"]

    subprocess.run(["rm", "-rf", os.path.join(args.build, "run")])
    os.makedirs(os.path.join(args.build, "run"))
    started = datetime.datetime.now().astimezone()
    meta = {"started": started.isoformat(timespec="seconds"), "loadavg_start": loadavg(), **versions(args),
            "duration_s": args.duration, "duration_avif_s": args.duration_avif, "warmup_s": args.warmup,
            "rounds": args.rounds,
            "concurrency": args.concurrency, "formats": args.formats, "cpus": args.cpus, "sources": len(images),
            "source_sizes": sorted({f"{i['width']}x{i['height']}" for i in images}),
            "server_path": servers.SDK["path"], "server_command": servers.SDK["command"],
            "thumbor_path": servers.THUMBOR["path"], "thumbor_conf": servers.THUMBOR_CONF}
    origin = Origin(args.sources, os.path.join(args.build, "run", "nginx"))
    configs = [c for c in servers.CONFIGS if c["id"] in args.config_ids]
    runs, vips_runs = [], []
    try:
        folders, notes, broken, surveys = preflight(args, origin, images)
        meta.update({"source_folders": folders, "notes": notes, "preflight_failures": broken,
                     "sdk_size_survey": surveys})
        for note in notes:
            log(note)
        for fmt, problems in broken.items():
            log(f"preflight {fmt}: {problems}")
        herd_results = herd(args, origin, images, folders) if "sdk" in args.config_ids and args.herd else []
        run_number = 0
        total = args.rounds * len(args.formats) * len(args.concurrency) * len(configs)
        for round_index in range(1, args.rounds + 1):
            for fmt in args.formats:
                if args.vips:
                    vips = measure_vips(args, fmt, folders[fmt], round_index)
                    vips_runs.append(vips)
                    log(f"round {round_index} {fmt} libvips ×{vips['processes']}: {vips['rate']:.1f} thumbnails/s, "
                        f"{vips['cpu_ms_per_thumbnail']:.1f} ms CPU/thumbnail, {vips['mean_bytes'] / 1000:.1f} KB, "
                        f"wrong {vips['wrong']}, machine busy {vips['machine_busy_cores']:.2f} cores, "
                        f"load {loadavg()}")
                for concurrency in args.concurrency:
                    for config in configs:
                        run_number += 1
                        result = measure(args, origin, config, fmt, folders[fmt], concurrency, images, round_index,
                                         run_number)
                        runs.append(result)
                        log(f"[{run_number}/{total}] round {round_index} {fmt} c={concurrency} {config['id']}: "
                            f"{result['rps']:.1f} req/s, {result['cpu_ms_per_request']:.1f} ms CPU/req, "
                            f"p99 {result['p99_ms']:.0f} ms, peak {result['peak_rss_mb']:.0f} MB, "
                            f"bad {result['bad_status']}/{result['bad_format']}/{result['bad_size']}, "
                            f"machine busy {result['machine_busy_cores']:.2f} cores, load {loadavg()}")
        origin_counts = origin.counts_by_run()
        for run in runs:
            run["origin_requests_nginx"] = origin_counts.get(run["run_id"], 0)
    finally:
        origin.stop()
    meta["finished"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    meta["loadavg_end"] = loadavg()
    data = {"meta": meta, "configs": configs, "runs": runs, "herd": herd_results, "vips_runs": vips_runs}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(data, f, indent=1)
    report.write(data, args.out)
    log(f"wrote {args.out}/RESULTS.md, results.png, results.json")


if __name__ == "__main__":
    main()
