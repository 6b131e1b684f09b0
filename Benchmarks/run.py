#!/usr/bin/python3
"""Benchmarks/run.py: pushworker against the same job written in C and in Python, on one broker.

One embedded broker (Benchmarks/reference/mock_broker.c, librdkafka's mock cluster on loopback) holds N
pre-filled pushes. Each run, one after the other, each with a fresh consumer group (offset 0 committed for
every input partition) and its own results topic, the three workers take all N and produce N results:

  c           Benchmarks/reference/c_worker.c (librdkafka + cJSON, one thread)
  py          Benchmarks/reference/py_worker.py (confluent-kafka, one thread)
  pushworker  `pushworker run --config FILE` with its defaults and the noop worker

and the table gives, per worker, the median over the runs of: seconds from the first record taken to the
last result delivered, records/s and its ratio to C, the worker process's CPU seconds (user + sys) and the
CPU per record as a ratio to C, its peak RSS, and a check (the group committed all N input offsets and the
results topic holds exactly N results, one per input record, all newData). docs/performance.md says how
each figure is taken.

Needs Debian's packages: apt-get install gcc libc6-dev librdkafka-dev libcjson-dev python3-confluent-kafka
python3-matplotlib, and a pushworker build (swift build -c release). Run it with Debian's /usr/bin/python3
(its packages are not in other Pythons' paths).

Exit status: 0 when every check is ok, 1 when a check failed, a worker did not finish or the broker failed,
2 on bad options or a missing tool.
"""
import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import zlib
from datetime import datetime
from pathlib import Path

try:
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
except ImportError:
    print("run.py: needs confluent-kafka: apt-get install python3-confluent-kafka, and run with /usr/bin/python3",
          file=sys.stderr)
    sys.exit(2)

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference"
WORKERS = ("c", "py", "pushworker")

# librdkafka 2.0.2's mock broker keeps at most 5 MiB (or 100000 record batches) per partition and silently
# drops the oldest batches beyond it. Every topic here is sized so that no partition passes 4 MiB, by
# generous per-record sizes in a record batch (value, key and record overhead: an input push takes about
# 105 bytes; a result about 200 from C and Python and 395 from pushworker, whose results also carry
# detail, worker, attempt and three timestamps), and the checks verify that nothing was dropped.
PARTITION_BYTES = 4 * 1024 * 1024
INPUT_RECORD_BYTES = 160
RESULT_RECORD_BYTES = 400
KEYS = 1000  # records are keyed user-0 … user-999
SCALE_PARTITIONS = (1, 2, 4, 8)
ATTEMPTS = 3  # tries of a 2-instance measurement whose group rebalanced after its first assignment
REBALANCED = "the group rebalanced after its first assignment (a member joined again), so the span holds its wait"


def log(message):
    print(message, file=sys.stderr, flush=True)


def fail(message, status=1):
    """Stops the benchmark: status 2 for a missing tool, 1 for a broker that failed."""
    log(f"run.py: {message}")
    sys.exit(status)


# ---- the records and the partitions they land in ---------------------------------------------------------

def push_value(i):
    return json.dumps({"aps": {"content-available": 1}, "type": "content-update", "contentId": f"article-{i}"},
                      separators=(",", ":"))


def partition_loads(records, partitions):
    """Records per partition for keys user-(i % 1000), under librdkafka's default partitioner
    (consistent_random: CRC-32 of the key modulo the partition count), which all three workers use."""
    loads = [0] * partitions
    for k in range(min(KEYS, records)):
        loads[zlib.crc32(f"user-{k}".encode()) % partitions] += records // KEYS + (1 if k < records % KEYS else 0)
    return loads


def partitions_needed(records, record_bytes, at_least):
    """The fewest partitions, at least `at_least`, in which no partition passes PARTITION_BYTES."""
    partitions = at_least
    while max(partition_loads(records, partitions)) * record_bytes > PARTITION_BYTES:
        partitions += 1
    return partitions


def fits(records, partitions):
    """Whether `records` pushes fit into an input topic of `partitions` partitions."""
    return max(partition_loads(records, partitions)) * INPUT_RECORD_BYTES <= PARTITION_BYTES


def records_fitting(records, partitions):
    """`records`, or the largest multiple of 1000 below it that fits into `partitions` partitions."""
    if fits(records, partitions):
        return records
    return max((k for k in range(1000, records, 1000) if fits(k, partitions)), default=1000)


# ---- processes -----------------------------------------------------------------------------------------

def proc_cpu_seconds(pid):
    """user + sys CPU seconds a running process has used (/proc/PID/stat utime and stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds():
    """CPU seconds all processes of the machine have used so far (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class Sampler(threading.Thread):
    """Every 20 ms while a worker runs: the wall clock (UNIX ms), the machine's busy CPU seconds, and the CPU
    seconds of the processes of the benchmark (the workers, the broker, this driver). others(t0, t1) is what
    the rest of the machine used between two instants: on a quiet machine near 0."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids, self.samples, self.done = pids, [], threading.Event()
        self.last = {}  # pid -> CPU seconds last read (a worker that has exited keeps its last figure)

    def sample(self):
        ours = 0.0
        for pid in [os.getpid(), *self.pids]:
            try:
                self.last[pid] = proc_cpu_seconds(pid)
            except (OSError, IndexError, ValueError):
                pass
            ours += self.last.get(pid, 0.0)
        self.samples.append((time.time() * 1e3, machine_busy_seconds(), ours))

    def run(self):
        while not self.done.is_set():
            self.sample()
            self.done.wait(0.02)

    def stop(self):
        self.done.set()
        self.join()
        self.sample()  # one after the end of the span, however short the worker's last poll interval

    def others(self, t0_ms, t1_ms):
        """(CPU seconds, share of all cores) the rest of the machine used from t0 to t1, or (None, None)."""
        before = [x for x in self.samples if x[0] <= t0_ms]
        after = [x for x in self.samples if x[0] >= t1_ms]
        if not before or not after or t1_ms <= t0_ms:
            return None, None
        (a, machine_a, ours_a), (b, machine_b, ours_b) = before[-1], after[0]
        others = max(0.0, (machine_b - machine_a) - (ours_b - ours_a))
        return round(others, 2), round(others / ((b - a) / 1e3 * os.cpu_count()), 3)


class Child:
    """A worker process. Its CPU comes from os.wait4 at its exit (user + sys, all its threads). Its peak RSS
    is VmHWM of /proc/PID/status, read each time it is polled while it runs (at least every 20 ms while
    waited for; a high-water mark, so only growth in its last poll interval could be missed): wait4's
    ru_maxrss would not do, as Linux counts into it the RSS of the forked copy of this driver before exec."""

    def __init__(self, command, stdout, stderr):
        self.proc = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        self.code = self.usage = None
        self.peak_rss_kib = 0

    def poll(self):
        """The exit status (signals as negative numbers), or None while it runs."""
        if self.code is None:
            try:
                with open(f"/proc/{self.proc.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            self.peak_rss_kib = max(self.peak_rss_kib, int(line.split()[1]))
            except OSError:
                pass
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid == self.proc.pid:
                self.code, self.usage = os.waitstatus_to_exitcode(status), usage
                self.proc.returncode = self.code  # Popen must not wait for it again
        return self.code

    def wait(self, seconds):
        deadline = time.monotonic() + seconds
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.code

    def stop(self, sig=signal.SIGTERM, grace=60):
        """Sends `sig` and waits up to `grace` seconds; then SIGKILL."""
        if self.poll() is None:
            self.proc.send_signal(sig)
            if self.wait(grace) is None:
                self.proc.kill()
                self.wait(10)
        return self.code


class Broker:
    """Benchmarks/reference/mock_broker: started once; topics are created through its stdin, and it writes
    the time of every record batch it appends to a partition to `appends_path`."""

    def __init__(self, executable, log_path, appends_path):
        self.log = open(log_path, "w")
        self.appends_path = appends_path
        self.proc = subprocess.Popen([executable, str(appends_path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("bootstrap.servers="):
            fail(f"the broker did not start (see {log_path}): {line!r}")
        self.bootstrap = line.split("=", 1)[1]

    def create_topic(self, name, partitions):
        self.proc.stdin.write(f"topic {name} {partitions}\n")
        answer = self.proc.stdout.readline().strip()
        if answer != "ok":
            fail(f"the broker could not create topic {name}: {answer}")

    def cpu_seconds(self):
        return proc_cpu_seconds(self.proc.pid)

    def completed_ms(self, topic, records):
        """When the broker appended the batch that brought `topic` to `records` records (UNIX ms), or None."""
        ends = {}
        with open(self.appends_path) as f:
            for line in f:
                stamp, kind, *fields = line.split()
                if kind != "append":
                    continue
                name, partition, _start, end = fields
                if name == topic:
                    ends[partition] = int(end)
                    if sum(ends.values()) >= records:
                        return float(stamp) * 1e3
        return None

    def group_rejoins(self, group):
        """How often `group` went back from Up to Joining because a member joined (not left): a rebalance
        after the group's first assignment."""
        with open(self.appends_path) as f:
            return sum(1 for line in f
                       if f" group {group} with " in line and "changing state Up -> Joining: member join" in line)

    def stop(self):
        self.proc.stdin.close()  # the broker stops at the end of its stdin
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ---- reading the broker --------------------------------------------------------------------------------

class Reader:
    """Metadata, watermarks, committed offsets and records, through one confluent-kafka consumer per use."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def consumer(self, group="bench-reader"):
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "enable.partition.eof": False})

    @staticmethod
    def partitions(consumer, topic):
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        return [TopicPartition(topic, p) for p in sorted(meta.partitions)]

    def watermarks(self, topic):
        consumer = self.consumer()
        try:
            return [consumer.get_watermark_offsets(tp, timeout=10) for tp in self.partitions(consumer, topic)]
        finally:
            consumer.close()

    def committed(self, group, topic, consumer=None):
        """The group's committed offset per partition of `topic` (-1001 = none)."""
        own = consumer is None
        consumer = consumer or self.consumer(group)
        try:
            return [tp.offset for tp in consumer.committed(self.partitions(consumer, topic), timeout=10)]
        finally:
            if own:
                consumer.close()

    def start_group_at_zero(self, group, topic):
        """Commits offset 0 for every partition of `topic` in `group`, as a group that ran before would have
        (docs/performance.md says why); returns the partitions committed."""
        consumer = self.consumer(group)
        try:
            partitions = [TopicPartition(topic, tp.partition, 0) for tp in self.partitions(consumer, topic)]
            consumer.commit(offsets=partitions, asynchronous=False)
            return len(partitions)
        finally:
            consumer.close()

    def results(self, topic):
        """Reads every result of `topic`: their count, distinct input records (source topic, partition,
        offset), outcomes, earliest receivedAt (pushworker's results carry it) and the latest record
        timestamp (the producer's CreateTime, the time the worker produced it; UNIX ms)."""
        consumer = self.consumer()
        partitions = self.partitions(consumer, topic)
        total = sum(consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions)
        consumer.assign([TopicPartition(topic, tp.partition, OFFSET_BEGINNING) for tp in partitions])
        seen, sources, outcomes, unreadable, value_bytes = 0, set(), {}, 0, 0
        earliest_received, latest_timestamp = None, None
        idle_deadline = time.monotonic() + 30
        while seen < total and time.monotonic() < idle_deadline:
            batch = consumer.consume(10000, 1)
            if batch:
                idle_deadline = time.monotonic() + 30
            for record in batch:
                if record.error():
                    continue
                seen += 1
                value_bytes += len(record.value() or b"")
                stamp = record.timestamp()[1]
                latest_timestamp = stamp if latest_timestamp is None else max(latest_timestamp, stamp)
                try:
                    result = json.loads(record.value())
                    source = result["source"]
                    sources.add((source["topic"], source["partition"], source["offset"]))
                    outcomes[result["result"]] = outcomes.get(result["result"], 0) + 1
                    received = result.get("receivedAt")  # ISO 8601 UTC, ms: sorts as text
                    if received is not None and (earliest_received is None or received < earliest_received):
                        earliest_received = received
                except (ValueError, KeyError, TypeError):
                    unreadable += 1
        consumer.close()
        return {"high_watermarks": total, "read": seen, "distinct_inputs": len(sources), "outcomes": outcomes,
                "mean_value_bytes": round(value_bytes / seen) if seen else None,
                "unreadable": unreadable, "earliest_received_at": earliest_received,
                "latest_timestamp_ms": latest_timestamp}


def iso_to_ms(text):
    """UNIX milliseconds of an ISO 8601 UTC time such as 2026-11-30T10:27:20.891Z."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e3


# ---- filling --------------------------------------------------------------------------------------------

def fill(reader, topic, records):
    """Produces `records` pushes to `topic` (linger.ms 5), then checks that the topic holds exactly them."""
    failures = []
    producer = Producer({"bootstrap.servers": reader.bootstrap, "linger.ms": 5,
                         "on_delivery": lambda err, _msg: err and failures.append(err)})
    started = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=push_value(i), key=f"user-{i % KEYS}")
                break
            except BufferError:  # the local queue is full: serve delivery reports
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(60)
    marks = reader.watermarks(topic)
    held = sum(high - low for low, high in marks)
    if failures or left or held != records or any(low for low, _ in marks):
        fail(f"filling {topic} failed: {len(failures)} not delivered ({failures[:1]}), "
                         f"{left} left, the topic holds {held} of {records} (low watermarks {[l for l, _ in marks]})")
    log(f"filled {topic}: {records} records in {len(marks)} partitions in {time.monotonic() - started:.1f} s")


# ---- one measurement ------------------------------------------------------------------------------------

class Bench:
    def __init__(self, args, out):
        self.args, self.out = args, out
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.bin = out / "bin"
        self.bin.mkdir(exist_ok=True)
        self.broker = None
        self.reader = None
        self.pids = []  # the processes of the row being measured, for its Sampler
        self.inputs = {}  # (partitions, records) -> topic
        self.results_topics = 0

    def compile(self):
        cc = os.environ.get("CC", "cc")
        if not shutil.which(cc):
            fail(f"no C compiler {cc!r}: apt-get install gcc libc6-dev (or set CC)", 2)
        for name, libraries in (("mock_broker", ["-lrdkafka"]), ("c_worker", ["-lrdkafka", "-lcjson"])):
            command = [cc, "-O2", "-Wall", "-o", str(self.bin / name), str(REFERENCE / f"{name}.c"), *libraries]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                fail(f"{' '.join(command)} failed (apt-get install librdkafka-dev libcjson-dev):\n{done.stderr}", 2)

    def start_broker(self):
        self.broker = Broker(str(self.bin / "mock_broker"), self.logs / "broker.log", self.logs / "appends.txt")
        self.reader = Reader(self.broker.bootstrap)
        log(f"broker at {self.broker.bootstrap}")
        # pushworker's retry topic (retries are on by default; it reads the topic too). Nothing is retried
        # here, so every pushworker run shares the empty topic.
        self.broker.create_topic("push-retries", max(SCALE_PARTITIONS + (self.args.partitions,)))

    def input_topic(self, partitions, records):
        key = (partitions, records)
        if key not in self.inputs:
            topic = f"pushes-p{partitions}-n{records}"
            self.broker.create_topic(topic, partitions)
            fill(self.reader, topic, records)
            self.inputs[key] = topic
        return self.inputs[key]

    def results_topic(self, name, records, partitions):
        self.results_topics += 1
        topic = f"results-{self.results_topics}-{name}"
        self.broker.create_topic(topic, partitions_needed(records, RESULT_RECORD_BYTES, partitions))
        return topic

    def timeout(self, records):
        return 120 + records / 1000

    def measure(self, worker, run, partitions, records, instances=1, label=None, abort_on_rejoin=False):
        """Runs one worker (or `instances` pushworker processes in one group) over a fresh group and results
        topic; returns its row. With `abort_on_rejoin`, pushworker is stopped as soon as its group rebalances
        after its first assignment (the row is then measured again)."""
        label = label or worker
        topic = self.input_topic(partitions, records)
        results = self.results_topic(label.replace(" ", "-").replace(",", ""), records, partitions)
        group = f"bench-{self.results_topics}-{worker}"
        row = {"worker": worker, "label": label, "run": run, "records": records, "partitions": partitions,
               "instances": instances, "input_topic": topic, "results_topic": results, "group": group}
        stem = self.logs / f"{self.results_topics:03d}-{label.replace(' ', '-').replace(',', '')}-run{run}"
        self.reader.start_group_at_zero(group, topic)
        broker_cpu = self.broker.cpu_seconds()
        self.pids = [self.broker.proc.pid]
        sampler = Sampler(self.pids)
        sampler.start()
        started = time.monotonic()
        if worker == "pushworker":
            outcome = self.run_pushworker(stem, topic, results, group, records, instances, abort_on_rejoin)
        else:
            outcome = self.run_reference(worker, stem, topic, results, group, records)
        row["wall_s"] = round(time.monotonic() - started, 3)
        sampler.stop()
        row["broker_cpu_s"] = round(self.broker.cpu_seconds() - broker_cpu, 3)
        row.update(outcome)
        self.check(row, topic, results, group, records)
        # What else ran during the span: the machine's CPU less the benchmark's own. Near 0 on a quiet
        # machine; a large share means this row's figures are noisy.
        if row.get("seconds"):
            row["others_cpu_s"], row["others_share"] = sampler.others(row["first_taken_ms"],
                                                                      row["last_result_appended_ms"])
        log(f"  run {run} {label:<12} {records:>7} records  {fmt(row.get('seconds'), 3):>7} s  "
            f"{fmt(row.get('records_per_s'), 0):>8} records/s  cpu {fmt(row.get('cpu_s'), 2)} s  "
            f"rss {fmt(row.get('peak_rss_mb'), 0)} MB  others {fmt_share(row.get('others_share'))}  {row['check']}")
        return row

    def run_reference(self, worker, stem, topic, results, group, records):
        if worker == "c":
            command = [str(self.bin / "c_worker")]
        else:
            command = [sys.executable, str(REFERENCE / "py_worker.py")]
        command += ["-b", self.broker.bootstrap, "-g", group, "-t", topic, "-r", results, "-n", str(records)]
        with open(f"{stem}.out", "w") as out, open(f"{stem}.err", "w") as err:
            child = Child(command, out, err)
            self.pids.append(child.proc.pid)
            code = child.wait(self.timeout(records))
            if code is None:
                child.stop(signal.SIGKILL, 10)
                return {"exit": "timeout", "problems": [f"no result within {self.timeout(records):.0f} s"]}
        outcome = {"exit": code, "problems": [] if code == 0 else [f"exit status {code} (see {stem}.err)"]}
        self.usage(outcome, [child])
        for line in Path(f"{stem}.out").read_text().splitlines():
            if line.startswith("BENCH-RESULT "):
                reported = json.loads(line.split(" ", 1)[1])
                outcome["seconds_to_last_report"] = reported["seconds"]
                outcome["first_taken_ms"] = reported["firstTakenMs"]
                outcome["last_report_ms"] = reported["lastDeliveredMs"]
        if "seconds_to_last_report" not in outcome and code == 0:
            outcome["problems"].append(f"no BENCH-RESULT line (see {stem}.out)")
        return outcome

    def run_pushworker(self, stem, topic, results, group, records, instances, abort_on_rejoin):
        """pushworker runs until SIGTERM: it is stopped once the group has committed every input offset
        (it commits only offsets whose results were delivered). Its span comes from its results afterwards."""
        config = {
            "kafka": {"bootstrap.servers": self.broker.bootstrap},
            "groupId": group,
            "inputTopics": [topic],
            "resultsTopic": results,
            "httpServer": {"enabled": False},
            "log": {"level": "warning"},
            "workers": {"content-update": {"kind": "noop", "result": "newData"}},
        }
        config_path = Path(f"{stem}.json5")
        config_path.write_text(json.dumps(config, indent=2) + "\n")
        children, files = [], []
        for i in range(instances):
            out, err = open(f"{stem}.{i}.out", "w"), open(f"{stem}.{i}.err", "w")
            files += [out, err]
            children.append(Child([self.args.pushworker, "run", "--config", str(config_path)], out, err))
            self.pids.append(children[-1].proc.pid)
        watch = self.reader.consumer(group)
        deadline = time.monotonic() + self.timeout(records)
        problems, committed = [], 0
        try:
            while True:
                if any(child.poll() is not None for child in children):
                    problems.append("pushworker exited before its group committed every input offset")
                    break
                committed = sum(max(o, 0) for o in self.reader.committed(group, topic, watch))
                if committed >= records:
                    break
                if abort_on_rejoin and self.broker.group_rejoins(group):
                    break  # measured again; the check notes the rebalance
                if time.monotonic() > deadline:
                    problems.append(f"the group committed {committed} of {records} within "
                                    f"{self.timeout(records):.0f} s")
                    break
                for _ in range(5):  # the next look at the commits in 100 ms; RSS every 20 ms
                    time.sleep(0.02)
                    for child in children:
                        child.poll()
        finally:
            watch.close()
        codes = [child.stop() for child in children]
        for f in files:
            f.close()
        outcome = {"exit": codes[0] if instances == 1 else codes, "problems": problems}
        if any(code != 0 for code in codes):
            problems.append(f"exit status {codes} after SIGTERM (see {stem}.*.err)")
        self.usage(outcome, children)
        return outcome

    @staticmethod
    def usage(outcome, children):
        """CPU: user + sys of the worker processes (summed over instances); RSS: the largest peak."""
        usages = [child.usage for child in children if child.usage is not None]
        if usages:
            outcome["cpu_s"] = round(sum(u.ru_utime + u.ru_stime for u in usages), 3)
        if any(child.peak_rss_kib for child in children):
            outcome["peak_rss_mb"] = round(max(child.peak_rss_kib for child in children) / 1024, 1)

    def check(self, row, topic, results, group, records):
        problems = row.setdefault("problems", [])
        marks = self.reader.watermarks(topic)
        committed = self.reader.committed(group, topic)
        short = [(p, c, high) for p, (c, (_, high)) in enumerate(zip(committed, marks)) if c != high]
        row["committed"] = sum(max(c, 0) for c in committed)
        if short:
            problems.append(f"committed {row['committed']} of {records} input offsets "
                            f"(partition, committed, end: {short[:3]})")
        lows = [low for low, _ in self.reader.watermarks(results)]
        if any(lows):
            problems.append(f"the broker dropped {sum(lows)} results (mock 5 MiB partition limit)")
        read = self.reader.results(results)
        row["results"] = read["high_watermarks"]
        row["outcomes"] = read["outcomes"]
        row["mean_result_bytes"] = read["mean_value_bytes"]
        if read["high_watermarks"] != records:
            problems.append(f"the results topic holds {read['high_watermarks']} results, not {records}")
        if read["read"] != read["high_watermarks"] or read["unreadable"]:
            problems.append(f"read {read['read']} results of {read['high_watermarks']}, "
                            f"{read['unreadable']} unreadable")
        if read["distinct_inputs"] != records:
            problems.append(f"the results name {read['distinct_inputs']} distinct inputs, not {records}")
        if read["outcomes"].get("newData", 0) != read["read"]:
            problems.append(f"outcomes {read['outcomes']}, expected only newData")
        # The span, the same for every worker: from its first record taken to the broker's append of the
        # batch that completed the results topic (the last result delivered). c_worker and py_worker take
        # the first instant from their own clock (firstTakenMs); pushworker's results carry it (the earliest
        # receivedAt: its wall clock when it took the record, in ms). The workers' delivery reports follow
        # the append by a round trip, or by ~40 ms when the mock's reply waits on a delayed TCP ACK (seen at
        # the end of a run); the reference workers' own spans, to their last delivery report, stay in
        # results.json as seconds_to_last_report.
        completed = self.broker.completed_ms(results, records)
        row["last_result_appended_ms"] = completed
        row["last_result_timestamp_ms"] = read["latest_timestamp_ms"]
        if row["worker"] == "pushworker" and read["earliest_received_at"]:
            row["first_taken_ms"] = iso_to_ms(read["earliest_received_at"])
        if completed is not None and row.get("first_taken_ms") is not None:
            row["seconds"] = round((completed - row["first_taken_ms"]) / 1e3, 4)
            row["records_per_s"] = records / row["seconds"] if row["seconds"] > 0 else None
        if row.get("seconds") is None and not problems:
            problems.append("no span")
        # A rebalance after the first assignment puts its wait into the span. With 2 pushworker instances
        # it happens in about a third of the runs on librdkafka 2.0.2's mock: a follower whose SyncGroup
        # arrives after the leader's is answered INVALID_REQUEST (the group is already Up) and joins again,
        # and the mock holds that rebalance for session.timeout.ms - 1 s (44 s by default).
        row["group_rejoins"] = self.broker.group_rejoins(group)
        if row["group_rejoins"]:
            problems.append(REBALANCED)
        row["check"] = "ok" if not problems else "FAIL: " + "; ".join(problems)


# ---- tables, json, charts ------------------------------------------------------------------------------

def fmt(value, digits):
    if value is None:
        return "-"
    return f"{value:,.{digits}f}".replace(",", " ") if digits == 0 else f"{value:.{digits}f}"


def fmt_share(share):
    return "-" if share is None else f"{share:.0%}"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(rows, labels):
    """Per label: the median of each figure over its runs. The ratios to C are of those medians: records/s
    over C's records/s, and CPU seconds per record over C's (each run's own ratios stay in vs_c_runs)."""
    summary = []
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        if not mine:
            continue
        checks = [r["check"] for r in mine]
        summary.append({
            "worker": mine[0]["worker"], "label": label, "runs": len(mine),
            "records": mine[0]["records"], "partitions": mine[0]["partitions"], "instances": mine[0]["instances"],
            "seconds": median(r.get("seconds") for r in mine),
            "records_per_s": median(r.get("records_per_s") for r in mine),
            "records_per_s_runs": [r.get("records_per_s") for r in mine],
            "cpu_s": median(r.get("cpu_s") for r in mine),
            "peak_rss_mb": median(r.get("peak_rss_mb") for r in mine),
            "broker_cpu_s": median(r.get("broker_cpu_s") for r in mine),
            "others_share": median(r.get("others_share") for r in mine),
            "check": "ok" if all(c == "ok" for c in checks) else next(c for c in checks if c != "ok"),
        })
    c = next((s for s in summary if s["label"] == "c" and s["check"] == "ok"), None)
    c_runs = {r["run"]: r for r in rows if r["label"] == "c" and r["check"] == "ok"}
    for s in summary:
        s["vs_c"] = s["cpu_per_record_vs_c"] = None
        if c and s["records_per_s"] and c["records_per_s"]:
            s["vs_c"] = s["records_per_s"] / c["records_per_s"]
        if c and s["cpu_s"] and c["cpu_s"]:
            s["cpu_per_record_vs_c"] = (s["cpu_s"] / s["records"]) / (c["cpu_s"] / c["records"])
        s["vs_c_runs"] = [r["records_per_s"] / c_runs[r["run"]]["records_per_s"]
                          for r in rows if r["label"] == s["label"] and r.get("records_per_s")
                          and c_runs.get(r["run"], {}).get("records_per_s")]
    return summary


def table(summary, with_c=True):
    width = max([len("worker")] + [len(s["label"]) for s in summary])
    head = f"{'worker':<{width}} {'records':>8} {'seconds':>8} {'records/s':>10}"
    head += f" {'vs C':>6} {'CPU s':>7} {'CPU/rec vs C':>12}" if with_c else f" {'CPU s':>7}"
    lines = [head + f" {'peak RSS MB':>11} {'others':>6}  check"]
    for s in summary:
        line = f"{s['label']:<{width}} {s['records']:>8} {fmt(s['seconds'], 3):>8} {fmt(s['records_per_s'], 0):>10}"
        if with_c:
            vs = fmt(s["vs_c"], 2) + ("x" if s["vs_c"] is not None else "")
            cpu_vs = fmt(s["cpu_per_record_vs_c"], 2) + ("x" if s["cpu_per_record_vs_c"] is not None else "")
            line += f" {vs:>6} {fmt(s['cpu_s'], 2):>7} {cpu_vs:>12}"
        else:
            line += f" {fmt(s['cpu_s'], 2):>7}"
        lines.append(line + f" {fmt(s['peak_rss_mb'], 0):>11} {fmt_share(s['others_share']):>6}  {s['check']}")
    return "\n".join(lines)


def environment(args):
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.machine())
    pushworker = None
    if "pushworker" in args.only:
        done = subprocess.run([args.pushworker, "--version"], capture_output=True, text=True)
        pushworker = done.stdout.strip() or None
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "load_average_at_start": os.getloadavg(), "python": platform.python_version(),
            "confluent_kafka": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0],
            "pushworker": pushworker, "pushworker_path": args.pushworker, "commit": commit}


def charts(out):
    """throughput.svg (and scale.svg with --scale) from out/results.json."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "pushworker-benchmark"  # the same figures give the same file
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    data = json.loads((out / "results.json").read_text())
    bench, cores = data["benchmark"], data["environment"]["cores"]
    written = []
    for key, name, title, subtitle in (
            ("summary", "throughput.svg", "Throughput: same broker, same records, same run",
             f"{bench['records']} records, {bench['partitions']} input partitions"),
            ("scale_summary", "scale.svg", "pushworker alone: input partitions and instances",
             f"as many records as the partitions hold, at most {bench['records']}")):
        summary = data.get(key) or []
        if not summary:
            continue
        labels = [s["label"].removeprefix("pushworker, ") if key == "scale_summary" else s["label"]
                  for s in summary]
        medians = [s["records_per_s"] or 0 for s in summary]
        fig, ax = plt.subplots(figsize=(8, 0.6 * len(labels) + 1.7))
        y = list(range(len(labels)))[::-1]
        ax.barh(y, medians, color="#4878a8", height=0.6)
        highest = max([1.0] + medians + [v for s in summary for v in s["records_per_s_runs"] if v])
        for yi, s in zip(y, summary):
            runs = [v for v in s["records_per_s_runs"] if v]
            ax.plot(runs, [yi] * len(runs), "o", color="#222222", markersize=3)
            note = f"  {s['records_per_s']:,.0f}/s" if s["records_per_s"] else "  no result"
            if s.get("vs_c") is not None and key == "summary":
                note += f" ({s['vs_c']:.2f}x C)"
            if key == "scale_summary":
                note += f", {s['records']} records"
            ax.text(max([s["records_per_s"] or 0] + runs), yi, note, va="center", fontsize=9)
        ax.set_xlim(0, highest * 1.6)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1000:.0f}k"))
        ax.set_yticks(y)
        ax.set_yticklabels(labels)
        ax.set_xlabel("records/s, first record taken to last result delivered (bar: median, dots: runs)")
        ax.set_title(f"{title}\n{subtitle}, median of {bench['runs']} runs, {cores} cores", fontsize=10)
        fig.tight_layout()
        fig.savefig(out / name, format="svg", metadata={"Date": None})
        plt.close(fig)
        written.append(out / name)
    return written


# ---- main ------------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(
        description="pushworker against the same job in C and Python, on one embedded broker "
                    "(docs/performance.md)")
    parser.add_argument("--records", type=int, default=200000, help="records per worker and run (default 200000)")
    parser.add_argument("--runs", type=int, default=3, help="runs; the table gives medians (default 3)")
    parser.add_argument("--partitions", type=int, default=8, help="input topic partitions (default 8)")
    parser.add_argument("--pushworker", default=".build/release/pushworker",
                        help="the pushworker executable (default .build/release/pushworker)")
    parser.add_argument("--out", type=Path, default=HERE / "out",
                        help="where results.json, the charts, the logs and the compiled C go (default Benchmarks/out)")
    parser.add_argument("--scale", action="store_true",
                        help="also pushworker on 1, 2, 4 and 8 input partitions and as 2 instances in one group")
    parser.add_argument("--only", default=",".join(WORKERS), help="workers to run, of c,py,pushworker (default all)")
    parser.add_argument("--plot-only", action="store_true", help="only redraw the charts from OUT/results.json")
    args = parser.parse_args()
    args.only = [w.strip() for w in args.only.split(",") if w.strip()]
    if any(w not in WORKERS for w in args.only) or not args.only:
        parser.error(f"--only takes names of {','.join(WORKERS)}")
    if args.records < 1 or args.runs < 1 or args.partitions < 1:
        parser.error("--records, --runs and --partitions must be at least 1")
    out = args.out.resolve()
    if args.plot_only:
        for path in charts(out):
            print(f"wrote {path}")
        return 0
    if not fits(args.records, args.partitions):
        needed = next(p for p in range(args.partitions, 100000) if fits(args.records, p))
        parser.error(f"{args.records} records do not fit into {args.partitions} partitions of the mock broker "
                     f"(it keeps at most 5 MiB per partition): use --partitions {needed} or more")
    if "pushworker" in args.only or args.scale:
        path = shutil.which(args.pushworker) if os.sep not in args.pushworker else args.pushworker
        if not path or not os.access(path, os.X_OK):
            parser.error(f"no pushworker executable at {args.pushworker}: build it with `swift build -c release` "
                         f"or give --pushworker PATH")
        args.pushworker = os.path.abspath(path)

    out.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    if load > 0.5 * os.cpu_count():
        log(f"note: the load average is {load:.1f} on {os.cpu_count()} cores; other work on the machine "
            f"makes the figures noisy")
    bench = Bench(args, out)
    bench.compile()
    env = environment(args)
    bench.start_broker()
    rows, scale_rows, retried = [], [], []
    try:
        for run in range(1, args.runs + 1):
            log(f"run {run} of {args.runs}")
            for worker in WORKERS:
                if worker in args.only:
                    rows.append(bench.measure(worker, run, args.partitions, args.records))
        if args.scale:
            log("scale: pushworker alone")
            for run in range(1, args.runs + 1):
                for p in SCALE_PARTITIONS:
                    label = f"pushworker, {p} partition{'s' if p > 1 else ''}"
                    scale_rows.append(bench.measure("pushworker", run, p, records_fitting(args.records, p),
                                                    label=label))
                top = max(SCALE_PARTITIONS)
                for attempt in range(1, ATTEMPTS + 1):
                    row = bench.measure("pushworker", run, top, records_fitting(args.records, top), instances=2,
                                        label=f"pushworker, {top} partitions, 2 instances",
                                        abort_on_rejoin=attempt < ATTEMPTS)
                    row["attempt"] = attempt
                    if REBALANCED not in row["problems"] or attempt == ATTEMPTS:
                        break
                    log("  (measured again: the group rebalanced after its first assignment)")
                    retried.append(row)
                scale_rows.append(row)
    finally:
        bench.broker.stop()

    labels = [w for w in WORKERS if w in args.only]
    summary = summarize(rows, labels)
    scale_labels = list(dict.fromkeys(r["label"] for r in scale_rows))
    scale_summary = summarize(scale_rows, scale_labels)
    data = {"benchmark": {"records": args.records, "runs": args.runs, "partitions": args.partitions,
                          "workers": labels, "scale": args.scale},
            "environment": {**env, "load_average_at_end": os.getloadavg()}, "summary": summary, "runs": rows,
            "scale_summary": scale_summary, "scale_runs": scale_rows, "scale_runs_measured_again": retried}
    (out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    print(f"\n{args.records} records, {args.partitions} input partitions, median of {args.runs} run(s)"
          f" ({env['cores']} cores, {env['cpu']}):\n")
    print(table(summary, with_c="c" in labels))
    if scale_summary:
        print("\nscale (pushworker alone; records per row: as many as fit the mock broker's partitions):\n")
        print(table(scale_summary, with_c=False))
    for path in charts(out):
        print(f"\nwrote {path}")
    print(f"wrote {out / 'results.json'}; logs in {out / 'logs'}")
    every = summary + scale_summary
    return 0 if every and all(s["check"] == "ok" for s in every) else 1


if __name__ == "__main__":
    sys.exit(main())
