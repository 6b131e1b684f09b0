"""Shared parts of the benchmarks in this folder (latency.py, concurrency.py).

Each benchmark starts its own embedded broker (`pushworker dev --broker-only`), so that pushworker is
measured as `pushworker run` against a separate broker process, with a fresh consumer group and empty
topics. Needs Debian's python3-confluent-kafka (1.7.0, on librdkafka 2.0.2): run with /usr/bin/python3.
"""
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

INPUT_TOPIC = "pushes"          # `pushworker dev`'s and `run`'s default input topic
RESULTS_TOPIC = "push-results"  # and results topic
RECORD_TYPE = "bench"

# librdkafka 2.0.2's mock keeps at most 5 MiB per partition and drops the oldest message sets beyond it.
# A result record (value with an ISO timestamp per field, key, headers) takes up to ~450 bytes in the
# mock's log, an input ~200: size partitions for results, keeping each under 4 MiB.
RESULT_BYTES = 450
PARTITION_BUDGET = 4 * 1024 * 1024


def stop_children_on_sigterm():
    """SIGTERM (or SIGINT) ends the script through SystemExit, so that its `finally` blocks stop the broker
    and the worker it started instead of leaving them running."""
    def leave(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGINT, leave)


def partitions_for(records, minimum=4):
    """Partitions per topic so that `records` results stay under the mock's per-partition limit."""
    return max(minimum, -(-records * RESULT_BYTES // PARTITION_BUDGET))


def payload(seq):
    return json.dumps({"aps": {"content-available": 1}, "type": RECORD_TYPE, "contentId": "article-123",
                       "seq": seq}, separators=(",", ":")).encode()


def default_exe():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), ".build", "release", "pushworker")


@contextlib.contextmanager
def workdir(args, prefix):
    """A temporary folder for a run's configurations and logs; kept (and named) with --keep."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        if args.keep:
            print(f"  kept {path}", flush=True)
        else:
            shutil.rmtree(path, ignore_errors=True)


def load_note():
    with open("/proc/loadavg") as f:
        return "load average " + " ".join(f.read().split()[:3])


class Broker:
    """`pushworker dev --broker-only`: one mock broker with the default topics, `partitions` each."""

    def __init__(self, exe, partitions, workdir, wrap=None):
        self.partitions = partitions
        config = os.path.join(workdir, "broker.json5")
        with open(config, "w") as f:
            json.dump({"dev": {"partitions": partitions}, "log": {"level": "warning"}}, f)
        self.log = open(os.path.join(workdir, "broker.log"), "w")
        self.proc = subprocess.Popen((wrap or []) + [exe, "dev", "--broker-only", "--config", config],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("bootstrap.servers="):
            self.stop()
            raise SystemExit(f"broker did not start: {line!r} (see {self.log.name})")
        self.bootstrap = line.split("=", 1)[1]

    def cpu_seconds(self):
        """The broker process's CPU seconds so far (utime + stime)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return float("nan")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Worker:
    """`pushworker run --config FILE`, its stderr in `run.log` of `workdir`. With `wrap` (a command such as
    `heaptrack -o FILE` or `perf record -g -o FILE`), run under it: signals and /proc figures then go to the
    pushworker process the wrapper starts."""

    def __init__(self, exe, config, workdir, name="run", wrap=None):
        self.config_path = os.path.join(workdir, f"{name}.json5")
        with open(self.config_path, "w") as f:
            json.dump(config, f, indent=2)
        self.log = open(os.path.join(workdir, f"{name}.log"), "w")
        self.proc = subprocess.Popen((wrap or []) + [exe, "run", "--config", self.config_path],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        self.pid = self.proc.pid
        if wrap:
            self.pid = self._find(os.path.realpath(exe))

    def _find(self, exe, timeout=30):
        """The pid of the process running `exe` under the wrapper (or the wrapper itself, e.g. valgrind)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            stack = [self.proc.pid]
            while stack:
                pid = stack.pop()
                try:
                    if os.path.realpath(f"/proc/{pid}/exe") == exe:
                        return pid
                    for task in os.listdir(f"/proc/{pid}/task"):
                        with open(f"/proc/{pid}/task/{task}/children") as f:
                            stack += [int(child) for child in f.read().split()]
                except OSError:
                    continue
            time.sleep(0.05)
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def usage(self):
        """(CPU seconds, user + system; peak RSS in KiB, VmHWM) of the running process."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        hwm = 0
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        return cpu, hwm

    def rss(self):
        """The resident set now (VmRSS), in KiB."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def stop(self):
        """SIGTERM (graceful stop); returns the exit status."""
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def run_config(bootstrap, workers, **settings):
    """The `run` configuration: the broker, the workers, and only what else a benchmark needs."""
    config = {
        "kafka": {"bootstrap.servers": bootstrap},
        # The default port 9400 may be taken by another pushworker on this machine: any free port.
        "httpServer": {"host": "127.0.0.1", "port": 0},
        "workers": workers,
    }
    config.update(settings)
    return config


def fill(bootstrap, count, partitions, keyed=True):
    """Produces `count` records as fast as the producer takes them (round-robin over partitions) and
    waits for every delivery report. Returns the seconds it took."""
    failed = [0]

    def report(err, _msg):
        if err:
            failed[0] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000, "on_delivery": report})
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(INPUT_TOPIC, value=payload(i), key=f"device-{i}" if keyed else None,
                                 partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if left or failed[0]:
        raise SystemExit(f"fill: {failed[0]} records failed, {left} undelivered")
    return time.perf_counter() - start


def total_results(consumer, partitions):
    return sum(consumer.get_watermark_offsets(TopicPartition(RESULTS_TOPIC, p), timeout=10)[1]
               for p in range(partitions))


def check_not_trimmed(consumer, topic, partitions):
    """Exits when the mock dropped the oldest records of a partition (the run's figures would be short)."""
    for p in range(partitions):
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        if low > 0:
            raise SystemExit(f"the mock broker dropped {low} old records of {topic}/{p}: use more partitions")


def metrics_port(worker, timeout=30):
    """The port of the worker's HTTP server, from its log line `http server listening on http://HOST:PORT`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(worker.log.name) as f:
            for line in f:
                if "http server listening on http://" in line:
                    return int(line.split("http://", 1)[1].split("/", 1)[0].split()[0].rsplit(":", 1)[1])
        time.sleep(0.05)
    return None


def gauge(port, name):
    """The value of an unlabelled metric of the worker's /metrics, or None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            for line in response.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def wait_for_results(worker, bootstrap, partitions, expected, timeout, trace=None):
    """Waits until the results topic holds `expected` records (or the worker exits / time runs out). With
    `trace` (a list), appends (seconds, VmRSS MiB, jobs in flight, results) every poll."""
    watch = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watch", "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    seen = 0
    port = metrics_port(worker) if trace is not None else None
    start = time.monotonic()
    try:
        while time.monotonic() < deadline and worker.alive():
            seen = total_results(watch, partitions)
            if trace is not None:
                trace.append((time.monotonic() - start, worker.rss() / 1024, gauge(port, "pushworker_jobs_in_flight"), seen))
            if seen >= expected:
                return seen
            time.sleep(0.02)
        return seen
    finally:
        watch.close()


def read_topic(bootstrap, topic, partitions, expected, idle_timeout=5.0):
    """Every record of `topic` from the beginning: a list of (partition, offset, timestamp ms, headers,
    value), until `expected` were read or nothing arrived for `idle_timeout` seconds."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-reader", "enable.auto.commit": False,
                       "fetch.wait.max.ms": 10})
    reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records = []
    try:
        while len(records) < expected:
            batch = reader.consume(10000, idle_timeout)
            if not batch:
                break
            for m in batch:
                if m.error():
                    continue
                kind, ts = m.timestamp()
                records.append((m.partition(), m.offset(), ts, kind, m.headers(), m.value()))
    finally:
        reader.close()
    return records


def iso_ms(text):
    """UNIX milliseconds of a result's ISO 8601 UTC timestamp (`2026-12-02T00:00:57.239Z`)."""
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def percentiles(values, points=(0.5, 0.9, 0.99, 1.0)):
    """Nearest-rank percentiles of `values` (any order)."""
    ordered = sorted(values)
    if not ordered:
        return [float("nan")] * len(points)
    return [ordered[max(0, math.ceil(p * len(ordered)) - 1)] for p in points]


def fail(message):
    print(message, file=sys.stderr)
    raise SystemExit(1)


def metric_sum(port, name):
    """The sum of every series of metric `name` (labelled or not) in the worker's /metrics, or None when
    the server does not answer or has no such series."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return None
    total, found = 0.0, False
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
            found = True
    return total if found else None


def status_json(port):
    """The worker's /status.json as a dict, or None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status.json", timeout=2) as response:
            return json.loads(response.read().decode())
    except (OSError, ValueError):
        return None


# ---- rebalances and results (scaleout.py's scale-in and join costs) ---------------------------------------

def wall_s(iso):
    """UNIX seconds (float) of an ISO 8601 UTC timestamp such as a log line's `2026-12-07T09:29:15.267Z`."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def rebalance_events(log_path):
    """The partition changes a member logged (text format): a list of (UNIX seconds, kind, frozenset of
    (topic, partition)) in log order, kind `assigned`, `revoked` or `lost`, from its lines
    `TIME LEVEL [LABEL] partitions assigned|revoked…|lost… partitions=t[0],t[1]`. Lines without a
    `partitions=` field (e.g. `partitions assigned after waiting N s`) are skipped."""
    events = []
    try:
        with open(log_path, errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return events
    for line in lines:
        fields = line.split(" ", 3)
        if len(fields) < 4 or " partitions=" not in line:
            continue
        message = fields[3].split("] ", 1)[-1] if fields[3].startswith("[") else fields[3]
        kind = next((k for k in ("assigned", "revoked", "lost") if message.startswith(f"partitions {k}")), None)
        if kind is None:
            continue
        try:
            at = wall_s(fields[0])
        except ValueError:
            continue
        names = line.split(" partitions=", 1)[1].split()[0]
        parts = set()
        for name in names.split(","):
            topic, _, rest = name.rpartition("[")
            if topic and rest.rstrip("]").isdigit():
                parts.add((topic, int(rest.rstrip("]"))))
        events.append((at, kind, frozenset(parts)))
    return events


def last_assigned(events, tp, not_after=None, not_before=None):
    """UNIX seconds of the last `assigned` event holding `tp` within [not_before, not_after], or None."""
    found = None
    for at, kind, parts in events:
        if kind == "assigned" and tp in parts and (not_before is None or at >= not_before) \
                and (not_after is None or at <= not_after):
            found = at
    return found


def last_released(events, tp, not_after, not_before=None):
    """UNIX seconds of the last `revoked` or `lost` event holding `tp` within [not_before, not_after], or None."""
    found = None
    for at, kind, parts in events:
        if kind != "assigned" and tp in parts and at <= not_after and (not_before is None or at >= not_before):
            found = at
    return found


def first_assigned(events, tp, not_before):
    """UNIX seconds of the first `assigned` event holding `tp` at or after `not_before`, or None."""
    return next((at for at, kind, parts in events if kind == "assigned" and tp in parts and at >= not_before), None)


def read_range(bootstrap, topic, starts, ends, idle_timeout=5.0):
    """The records of `topic` from offset starts[p] up to (not including) ends[p] of every partition p: a
    list of (partition, offset, timestamp ms, headers, value), until every range is read or nothing arrived
    for `idle_timeout` s. Offsets the mock broker already dropped are skipped (the read starts at the
    partition's low watermark)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-range-reader", "enable.auto.commit": False,
                       "fetch.wait.max.ms": 10})
    wanted = {p: (s, e) for p, (s, e) in enumerate(zip(starts, ends)) if e > s}
    records = []
    try:
        firsts = {}
        for p, (s, e) in wanted.items():
            low, _ = reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            firsts[p] = max(s, low)
        left = {p for p in wanted if firsts[p] < wanted[p][1]}
        if not left:
            return records
        reader.assign([TopicPartition(topic, p, firsts[p]) for p in left])
        idle_since = time.monotonic()
        while left and time.monotonic() - idle_since < idle_timeout:
            # consume() waits for all num_messages or the timeout: short waits, so the last batch is not held
            batch = reader.consume(2000, 0.1)
            if batch:
                idle_since = time.monotonic()
            for m in batch:
                if m.error():
                    continue
                p, offset = m.partition(), m.offset()
                if p not in left:
                    continue
                if offset < wanted[p][1]:
                    records.append((p, offset, m.timestamp()[1], m.headers(), m.value()))
                if offset >= wanted[p][1] - 1:
                    left.discard(p)
    finally:
        reader.close()
    return records
