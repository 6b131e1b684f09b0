"""scaleout.py's group: the steady producer of the input records, the `pushworker run` members, the
watch on the broker's watermarks, each member's configuration and the wait until a group has settled."""
import signal
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

import benchlib
from benchlib import INPUT_TOPIC, RECORD_TYPE

RETRY_TOPIC = "push-retries"  # run's default retry topic; `dev --broker-only` creates it
APNS_ID_PREFIX = "scaleout-"  # the producer's apns-id header: APNS_ID_PREFIX + SEQ


def log(message):
    print(message, file=sys.stderr, flush=True)


class Failure(Exception):
    """A step that could not run: a member or the broker failed."""


# ---- the load -------------------------------------------------------------------------------------------

class SteadyProducer(threading.Thread):
    """Produces `rate` records/s to the input topic: record i is due at i / rate s from the start (open loop:
    late records are sent at once), keyed `device-SEQ`, partition SEQ % partitions. SEQ runs on across
    steps (`first`)."""

    def __init__(self, bootstrap, rate, partitions, first=0):
        super().__init__(daemon=True)
        self.bootstrap, self.rate, self.partitions, self.first = bootstrap, rate, partitions, first
        self.done = threading.Event()
        self.sent = self.failed = 0
        self.max_late_s = 0.0
        self.error = None

    def run(self):
        def report(err, _msg):
            if err:
                self.failed += 1

        try:
            producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "on_delivery": report})
            start = time.monotonic()
            while not self.done.is_set():
                now = time.monotonic()
                due = int((now - start) * self.rate)
                if due > self.sent:
                    self.max_late_s = max(self.max_late_s, (due - self.sent) / self.rate)
                while self.sent < due:
                    seq = self.first + self.sent
                    try:
                        # a unique apns-id per record: it is the result's messageId, so a record that ran
                        # twice (a rebalance's re-run) shows as two results with one messageId
                        producer.produce(INPUT_TOPIC, value=benchlib.payload(seq), key=f"device-{seq}",
                                         partition=seq % self.partitions,
                                         headers=[("apns-id", f"{APNS_ID_PREFIX}{seq}")])
                    except BufferError:
                        producer.poll(0.05)
                        continue
                    self.sent += 1
                producer.poll(0)
                self.done.wait(0.005)
            producer.flush(15)
        except Exception as error:  # noqa: BLE001 - reported by the step
            self.error = error

    def stop(self):
        self.done.set()
        self.join(30)


# ---- the members ----------------------------------------------------------------------------------------

class Member:
    """`pushworker run --config FILE --bootstrap-servers ADDR`, stderr to `log_path`, in a session of its own
    (a terminal's Ctrl-C goes only to the script, which stops it with one SIGTERM)."""

    def __init__(self, index, exe, config_path, bootstrap, log_path):
        self.index = index
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([exe, "run", "--config", str(config_path), "--bootstrap-servers", bootstrap],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
                                     start_new_session=True)
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.port = None
        self.first_assigned_s = None
        self.assignment = None  # the latest read: a frozenset of (topic, partition), or None when unread

    def alive(self):
        return self.proc.poll() is None

    def read_assignment(self):
        """Reads /status.json; returns the assignment as a frozenset of (topic, partition), or None."""
        if self.port is None:
            return None
        document = benchlib.status_json(self.port)
        if document is None or "member" not in document:
            return None
        parts = []
        for name in document["member"].get("assignment", []):
            topic, _, rest = name.rpartition("[")
            parts.append((topic, int(rest.rstrip("]"))))
        self.assignment = frozenset(parts)
        return self.assignment


def stop_members(members, grace=60):
    """One SIGTERM to every member still running, then waits for all (SIGKILL after `grace` s). A second
    SIGTERM would make pushworker exit at once, so none is sent twice. Returns their exit statuses."""
    for m in members:
        if m.alive():
            try:
                m.proc.send_signal(signal.SIGTERM)
            except OSError:
                pass
    deadline = time.monotonic() + grace
    for m in members:
        try:
            m.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            m.proc.kill()
            m.proc.wait()
        m.log.close()
    return [m.proc.returncode for m in members]


# ---- the broker -----------------------------------------------------------------------------------------

class Watch:
    """One confluent-kafka consumer (never subscribed) for watermarks and for a new group's first offsets."""

    def __init__(self, bootstrap, partitions):
        self.bootstrap, self.partitions = bootstrap, partitions
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "scaleout-watch",
                                  "enable.auto.commit": False})

    def marks(self, topic):
        return [self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                for p in range(self.partitions)]

    def high_sum(self, topic):
        return sum(high for _, high in self.marks(topic))

    def start_group_at_end(self, group):
        """Commits the input topic's end offsets for `group`: its members start there, not at offset 0."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            ends = [TopicPartition(INPUT_TOPIC, p, high) for p, (_, high) in enumerate(self.marks(INPUT_TOPIC))]
            consumer.commit(offsets=ends, asynchronous=False)
        finally:
            consumer.close()

    def close(self):
        self.consumer.close()


# ---- a step's configuration and settling ----------------------------------------------------------------

def member_config(args, group):
    workers = {RECORD_TYPE: {"kind": "noop", "result": "newData", "delayMs": args.delay_ms,
                             "maxConcurrent": args.max_concurrent}}
    return benchlib.run_config(
        "127.0.0.1:1",  # replaced by --bootstrap-servers
        workers,
        groupId=group,
        consumer={"session.timeout.ms": args.session_ms, "heartbeat.interval.ms": args.heartbeat_ms},
        maxBufferedRecords=2000,
        drainTimeoutMs=10000,
        log={"level": "info", "progressIntervalMs": 5000},
    )


def counts(assignment, partitions):
    """(input partitions, retry partitions) of an assignment."""
    assignment = assignment or frozenset()
    return (sum(1 for t, p in assignment if t == INPUT_TOPIC and p < partitions),
            sum(1 for t, p in assignment if t == RETRY_TOPIC and p < partitions))


def settle(members, expected, args, n, producer):
    """Polls the members' assignments every 0.25 s until every member holds at least one partition, together
    they hold `expected` exactly once, and that stayed so for --stable s. Returns the monotonic time that
    assignment was first seen, or None after --settle-timeout from the last member's start."""
    stable_since, last = None, None
    deadline = members[-1].started + args.settle_timeout
    while time.monotonic() < deadline:
        now = time.monotonic()
        for m in members:
            if not m.alive():
                raise Failure(f"member {m.index} of {n} exited with {m.proc.returncode} while the group settled "
                              f"(see {m.log.name})")
            a = m.read_assignment()
            if a and m.first_assigned_s is None:
                m.first_assigned_s = round(now - m.started, 2)
        signature = tuple(m.assignment for m in members)
        held = [x for a in signature for x in (a or ())]
        complete = all(signature) and len(held) == len(set(held)) and set(held) == expected
        if complete and signature == last:
            if now - stable_since >= args.stable:
                return stable_since
        else:
            stable_since = now if complete else None
        last = signature
        if producer.error:
            raise Failure(f"the producer failed: {producer.error}")
        time.sleep(0.25)
    return None
