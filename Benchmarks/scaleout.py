#!/usr/bin/python3
"""Benchmarks/scaleout.py: does adding `pushworker run` members to one consumer group add throughput?

One embedded broker (`pushworker dev --broker-only`, through benchlib.Broker) holds the input topic
`pushes`, the retry topic `push-retries` and the results topic `push-results`, P partitions each (--partitions,
default 12). For each member count N of --members (default 1,2,3), one step after the other:

  1. a steady producer (confluent-kafka) writes --rate records/s (default 1500) to the input topic, keyed
     `device-SEQ` with a header `apns-id: scaleout-SEQ` (the result's messageId: a record that ran twice
     shows as two results with one messageId), round-robin over all P partitions, from the start of the
     step to its end;
  2. a fresh consumer group is created at the input topic's current end (its offsets committed there), so
     every step starts without a backlog of the previous ones;
  3. N `pushworker run --config FILE --bootstrap-servers ADDR` processes are started in that group, one
     after the other as a deployment scales out: each next member once the group of those before it has
     settled (step 4), so that it joins a group that already has an assignment (--together starts them all
     at once: a first join then assigns every partition at once, which hides what a later join does). Each
     has a bounded worker, the built-in noop worker with `delayMs` 100 and `maxConcurrent` 20 (about 200
     records/s per member; --delay-ms, --max-concurrent), retries on with the default retry topic (so it is
     subscribed beside the input topic), and its HTTP server on a free port of its own;
  4. settling: every 0.25 s each member's `/status.json` (`member.assignment`, the assignment as its
     consumer has it now) is read. The group has settled once every member holds at least one partition,
     the members together hold every partition of both topics exactly once, and that assignment stayed the
     same for --stable seconds (default 3). The settle time printed is from starting the last member to the
     first sight of that final assignment (results.json also has it from the first member's start, and
     each member's time from its start to its first assignment);
  5. the window (--window, default 20 s): results/s = the growth of the results topic's high watermarks
     (summed over its partitions) over the window, divided by the window's length. Each member's own
     results/s (the growth of its `pushworker_results_total`) and its mean `pushworker_jobs_in_flight` are
     kept too, and the assignment is watched for changes during the window;
  6. scale-in (--scale-in, on by default; only in the step of the largest N, N >= 2): the last-started
     member gets SIGTERM while the group is saturated and its backlog grows. The survivors' /status.json is
     read every 0.25 s until they hold every partition exactly once for --stable s, then the results topic
     (read from its high watermarks at the SIGTERM) until every input partition that moved has a result from
     its new owner (at most --scale-in-timeout s, default 60, --quick 30), and 3 s more;
  7. the members are stopped with SIGTERM (graceful), the producer is stopped;
  8. join and scale-in costs (--join-costs, on by default, with members started one after the other): the
     step's results are read back (from the results topic's high watermarks at the step's start). Each
     member's `partitions assigned|revoked ... partitions=...` log lines (ISO timestamps) give when a
     partition was assigned to it and released by its old owner. Per member that joined a settled group:
     the partitions that moved to it, the longest time any of them was owned by nobody (old owner's
     revocation to the new one's assignment), per moved input partition the seconds from its assignment to
     its first result (the first result of that source partition read, receivedAt, at or after the
     assignment: its old owner read everything before it let go), and the records that ran twice (results
     with one messageId; counted at the join of the last member started before the second result). At the
     scale-in, per partition that moved (input and retry): old and new owner, when the old one released it
     and the new one got it (s after the SIGTERM), the seconds from the assignment to its first result, and
     the records that ran twice with a result after the SIGTERM (of the moved partitions, and in all); the
     time from the SIGTERM to the survivors holding every partition. The retry topic stays empty (the noop
     worker never fails), so a moved retry partition has no result to wait for.

The rate is above what N members can take (N × 200/s), so every member with input partitions is saturated
and results/s measures the group's capacity. The table gives, per N: results/s, its ratio to N × one member
(the measured N = 1 step; without one, the nominal maxConcurrent × 1000 / delayMs), and per member (in
start order) the partitions of the input topic and of the retry topic it held during the window, and the
settle time. The target is results/s >= 0.9 × N × one member. Then the join costs and the scale-in.

Settings beyond the worker: consumer `session.timeout.ms` 6000 and `heartbeat.interval.ms` 500 (--session-ms,
--heartbeat-ms). librdkafka 2.0.2's mock broker makes a group's later rebalances (a member joining a group
that already has an assignment) wait session.timeout.ms - 1 s, 44 s with librdkafka's default 45 s:
6 s keeps each step short. Also `maxBufferedRecords` 2000 (a member does not hoard ten thousands of
records it cannot run; records taken but not started are handed back at a stop or revocation anyway) and
`drainTimeoutMs` 10000 (bounds a stop), and `log.progressIntervalMs` 5000 (progress lines in the logs).

--quick is for CI (about 60-90 s on a debug build): --members 1,2 --partitions 4 --window 8 --rate 600
--stable 2, each of which can still be given explicitly.

Writes OUT/results.json, OUT/scaleout.svg (matplotlib) and OUT/logs/ (the broker's and each member's
stderr and configuration); OUT is --out (default Benchmarks/out/scaleout).

Needs Debian's python3-confluent-kafka and python3-matplotlib (run with /usr/bin/python3), `setsid`
(util-linux), and a pushworker build (--pushworker, default .build/release/pushworker).

Exit status: 0 when every step ran (and, with --check, met the target); 1 when a member or the broker
failed, or with --check when some N missed the target; 2 on bad options or a missing tool. Every child
process is stopped on the way out, also on Ctrl-C and SIGTERM (the members and the broker run in sessions
of their own, so a terminal's Ctrl-C reaches only this script, which stops them gracefully).
"""
import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import confluent_kafka
    from confluent_kafka import Consumer, Producer, TopicPartition

    import benchlib
    from benchlib import INPUT_TOPIC, RECORD_TYPE, RESULTS_TOPIC
except ImportError as error:
    print(f"scaleout.py: needs confluent-kafka ({error}): apt-get install python3-confluent-kafka, and run "
          f"with /usr/bin/python3", file=sys.stderr)
    sys.exit(2)

RETRY_TOPIC = "push-retries"  # run's default retry topic; `dev --broker-only` creates it
APNS_ID_PREFIX = "scaleout-"  # the producer's apns-id header: APNS_ID_PREFIX + SEQ
DEFAULTS = {"members": "1,2,3", "partitions": 12, "window": 20.0, "rate": 1500.0, "stable": 3.0}
QUICK = {"members": "1,2", "partitions": 4, "window": 8.0, "rate": 600.0, "stable": 2.0}
TARGET = 0.9


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


# ---- one step -------------------------------------------------------------------------------------------

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


def step(args, n, broker, watch, logs, run_id, seq_start):
    """Runs N members and returns the step's row."""
    group = f"scaleout-{run_id}-n{n}"
    expected = frozenset([(INPUT_TOPIC, p) for p in range(args.partitions)] +
                         [(RETRY_TOPIC, p) for p in range(args.partitions)])
    config_path = logs / f"n{n}.json5"
    config_path.write_text(json.dumps(member_config(args, group), indent=2) + "\n")
    row = {"members": n, "group": group, "problems": []}
    producer = SteadyProducer(broker.bootstrap, args.rate, args.partitions, first=seq_start)
    producer.start()
    members = []
    snapshots = []  # after each settle: (UNIX s, the assignment of every member started so far)
    shrink = None
    try:
        watch.start_group_at_end(group)
        results_start = [high for _, high in watch.marks(RESULTS_TOPIC)]
        for i in range(n):
            if i and not args.together:
                # scale out as a deployment does: the next member joins a group whose assignment has settled
                if settle(members, expected, args, n, producer) is None:
                    row["problems"].append(f"{i} member(s) did not settle within {args.settle_timeout:.0f} s")
                snapshots.append((time.time(), tuple(m.assignment for m in members)))
            m = Member(i, args.pushworker, config_path, broker.bootstrap, logs / f"n{n}-member{i}.log")
            members.append(m)
            m.port = benchlib.metrics_port(m, timeout=30)
            if m.port is None:
                raise Failure(f"member {i} of {n} has no HTTP server (exit {m.proc.poll()}; see {m.log.name})")
        last_start = members[-1].started
        settled_at = settle(members, expected, args, n, producer)
        snapshots.append((time.time(), tuple(m.assignment for m in members)))
        row["first_assignment_s"] = [m.first_assigned_s for m in members]
        if settled_at is None:
            row["settle_s"] = row["settle_total_s"] = None
            row["problems"].append(f"not settled within {args.settle_timeout:.0f} s")
            log(f"  N={n}: the group did not settle within {args.settle_timeout:.0f} s "
                f"(first assignment per member: {row['first_assignment_s']}); measuring anyway")
        else:
            row["settle_s"] = round(settled_at - last_start, 2)
            row["settle_total_s"] = round(settled_at - members[0].started, 2)
            log(f"  N={n}: settled {row['settle_s']:.1f} s after the last member started ({row['settle_total_s']:.1f} s "
                f"after the first); each member's first assignment, s after its start: "
                f"{', '.join('-' if s is None else f'{s:.1f}' for s in row['first_assignment_s'])}")

        # ---- the window
        final = tuple(m.assignment for m in members)
        per_member_start = [benchlib.metric_sum(m.port, "pushworker_results_total") or 0.0 for m in members]
        broker_cpu = broker.cpu_seconds()
        t0 = time.monotonic()
        results0 = watch.high_sum(RESULTS_TOPIC)
        in_flight = [[] for _ in members]
        changes = 0
        end = t0 + args.window
        while time.monotonic() < end:
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))
            for i, m in enumerate(members):
                if not m.alive():
                    raise Failure(f"member {m.index} of {n} exited with {m.proc.returncode} during the window "
                                  f"(see {m.log.name})")
                running = benchlib.gauge(m.port, "pushworker_jobs_in_flight")
                if running is not None:
                    in_flight[i].append(running)
                before = m.assignment
                if m.read_assignment() != before:
                    changes += 1
        window_end_marks = [high for _, high in watch.marks(RESULTS_TOPIC)]
        results1 = sum(window_end_marks)
        t1 = time.monotonic()
        per_member_end = [benchlib.metric_sum(m.port, "pushworker_results_total") or 0.0 for m in members]
        elapsed = t1 - t0
        row["window_s"] = round(elapsed, 3)
        row["results"] = results1 - results0
        row["results_per_s"] = round((results1 - results0) / elapsed, 1)
        row["broker_cpu_share"] = round((broker.cpu_seconds() - broker_cpu) / elapsed, 3)
        row["assignment_changes_in_window"] = changes
        if changes:
            row["problems"].append(f"the assignment changed {changes} time(s) during the window")
        row["member_rows"] = []
        for i, m in enumerate(members):
            inp, retry = counts(final[i], args.partitions)
            row["member_rows"].append({
                "member": i, "pid": m.proc.pid, "http_port": m.port,
                "input_partitions": inp, "retry_partitions": retry,
                "assignment": sorted(f"{t}[{p}]" for t, p in (final[i] or ())),
                "first_assignment_s": m.first_assigned_s,
                "results_per_s": round((per_member_end[i] - per_member_start[i]) / elapsed, 1),
                "mean_jobs_in_flight": round(sum(in_flight[i]) / len(in_flight[i]), 1) if in_flight[i] else None,
            })
        row["input_partitions"] = [r["input_partitions"] for r in row["member_rows"]]
        row["retry_partitions"] = [r["retry_partitions"] for r in row["member_rows"]]
        log(f"  N={n}: {row['results_per_s']:.0f} results/s over {elapsed:.1f} s; input/retry partitions per member: "
            f"{' '.join(f'{a}/{b}' for a, b in zip(row['input_partitions'], row['retry_partitions']))}; "
            "results/s per member: " + " ".join(f"{r['results_per_s']:.0f}" for r in row["member_rows"]))

        # ---- scale-in: the last member leaves the saturated group (its backlog still growing)
        if args.scale_in and n == max(args.member_counts) and n >= 2:
            shrink = scale_in(args, members, expected, broker, watch, producer)
        end_marks = [high for _, high in watch.marks(RESULTS_TOPIC)]
    finally:
        producer.stop()
        codes = stop_members(members)
        row["sent"] = producer.sent
        row["send_failures"] = producer.failed
        row["producer_max_late_s"] = round(producer.max_late_s, 3)
        row["exit_codes"] = codes
    if producer.failed:
        row["problems"].append(f"{producer.failed} input records not delivered")
    if any(code != 0 for code in codes):
        row["problems"].append(f"exit statuses {codes} after SIGTERM")
    joins = args.join_costs and n >= 2 and not args.together
    if joins or shrink:
        began = time.monotonic()
        results = parse_results(benchlib.read_range(broker.bootstrap, RESULTS_TOPIC, results_start,
                                                    end_marks))
        row["results_read"] = len(results)
        row["results_with_apns_id"] = sum(1 for r in results if str(r["id"]).startswith(APNS_ID_PREFIX))
        row["results_expected"] = sum(end_marks) - sum(results_start)
        if row["results_read"] < row["results_expected"]:
            row["problems"].append(f"read {row['results_read']} of the step's {row['results_expected']} results "
                                   f"(the mock broker drops the oldest beyond 5 MiB per partition)")
        events = [benchlib.rebalance_events(m.log.name) for m in members]
        row["commit_failures_logged"] = commit_failures(members)
        until = shrink["sigterm_wall"] if shrink else None
        reruns = reruns_by_phase(results, members, shrink["marks"] if shrink else end_marks)
        if joins:
            row["joins"] = join_costs(members, snapshots, events, results, reruns, until)
            row["join_reruns"] = sum(j["reruns"] for j in row["joins"])
            row["steady_reruns"] = reruns["steady"]
        row["input_duplicates"] = reruns["input_duplicates"]
        row["rerun_samples"] = reruns["samples"]
        if reruns["input_duplicates"]:
            row["problems"].append(f"{reruns['input_duplicates']} apns-ids were written twice to the input topic "
                                   f"(not counted as re-runs)")
        if shrink:
            row["scale_in"] = scale_in_costs(shrink, members, events, results, reruns)
        log(f"  N={n}: read {len(results)} results for the join"
            f"{' and scale-in' if shrink else ''} costs in {time.monotonic() - began:.1f} s")
    return row, seq_start + producer.sent


# ---- join and scale-in costs ------------------------------------------------------------------------------

def commit_failures(members):
    """Lines of the members' logs saying an offset commit failed (librdkafka's `Offset commit ... failed`,
    pushworker's `committing their offsets failed`): a refused commit is what makes a record run again."""
    found = 0
    for m in members:
        try:
            with open(m.log.name, errors="replace") as f:
                found += sum(1 for line in f if ("Offset commit" in line and "failed" in line)
                             or "committing their offsets failed" in line)
        except OSError:
            pass
    return found


def parse_results(records):
    """The results read (benchlib.read_range) as dicts: the results partition and offset, `produced` (UNIX s,
    the record's timestamp, else finishedAt), `received` (the input's receivedAt, UNIX s), `tp` (its source
    topic and partition), `id` (messageId), `attempt`."""
    parsed = []
    for partition, offset, timestamp_ms, _headers, value in records:
        try:
            doc = json.loads(value)
            source = doc.get("source") or {}
            received = benchlib.wall_s(doc["receivedAt"]) if doc.get("receivedAt") else None
            finished = benchlib.wall_s(doc["finishedAt"]) if doc.get("finishedAt") else None
        except (ValueError, TypeError, KeyError):
            continue
        parsed.append({"rp": partition, "offset": offset,
                       "produced": timestamp_ms / 1000 if timestamp_ms and timestamp_ms > 0 else finished,
                       "received": received, "tp": (source.get("topic"), source.get("partition")),
                       "source_offset": source.get("offset"),
                       "id": doc.get("messageId"), "attempt": doc.get("attempt", 1)})
    return parsed


def reruns_by_phase(results, members, sigterm_marks):
    """The records that ran more than once (results of attempt 1 with the same messageId): each is counted
    where its last run's result is, `scale_in` (at or past the scale-in's SIGTERM marks of the results
    topic, with `scale_in_tps`: the source partitions of those), else the join of the last member started
    before that result was produced (`joins`: member index -> count) or `steady` (before any join)."""
    by_id = {}
    for r in results:
        if r["id"] and r["attempt"] == 1:
            by_id.setdefault(r["id"], []).append(r)
    out = {"joins": {}, "steady": 0, "scale_in": 0, "scale_in_tps": {}, "extra_runs": 0, "input_duplicates": 0,
           "samples": []}
    for copies in by_id.values():
        if len(copies) < 2:
            continue
        if len({(r["tp"], r["source_offset"]) for r in copies}) > 1:
            # the same apns-id at two input offsets: the producer wrote the record twice (a retried send), not
            # a re-run; counted apart
            out["input_duplicates"] += 1
            by_source = {}
            for r in copies:
                by_source.setdefault((r["tp"], r["source_offset"]), []).append(r)
            copies = max(by_source.values(), key=len)
            if len(copies) < 2:
                continue
        out["extra_runs"] += len(copies) - 1
        if len(out["samples"]) < 10:
            out["samples"].append([{k: r[k] for k in ("id", "rp", "offset", "source_offset", "received", "produced")}
                                   | {"tp": f"{r['tp'][0]}[{r['tp'][1]}]"} for r in copies])
        last = max(copies, key=lambda r: (r["produced"] or 0, r["offset"]))
        if any(r["offset"] >= sigterm_marks[r["rp"]] for r in copies):
            out["scale_in"] += 1
            out["scale_in_tps"][last["tp"]] = out["scale_in_tps"].get(last["tp"], 0) + 1
            continue
        joined = [m.index for m in members[1:] if m.started_wall <= (last["produced"] or 0)]
        if joined:
            out["joins"][joined[-1]] = out["joins"].get(joined[-1], 0) + 1
        else:
            out["steady"] += 1
    return out


def first_result(results, tp, after, before=None):
    """UNIX s of the first result of input partition `tp` read (receivedAt) at or after `after` (its new
    owner's assignment: everything its old owner read was read before it let the partition go) and, with
    `before`, before that."""
    times = [r["produced"] for r in results
             if r["tp"] == tp and r["received"] is not None and r["received"] >= after - 0.002
             and (before is None or r["received"] < before) and r["produced"]]
    return min(times) if times else None


def owner(assignments, tp):
    return next((i for i, a in enumerate(assignments) if a and tp in a), None)


def join_costs(members, snapshots, events, results, reruns, until):
    """Per member that joined a settled group (member i >= 1): the partitions that moved to it (held by
    another member at the settle before its start, by it at the settle after), per input partition the
    seconds from its assignment (its log's `partitions assigned` line) to its first result, and the records
    that ran twice while it joined."""
    joins = []
    for i in range(1, min(len(members), len(snapshots))):
        before, after = snapshots[i - 1][1], snapshots[i][1]
        got = sorted(after[i] or ())
        next_start = members[i + 1].started_wall if i + 1 < len(members) else until
        moved = []
        for tp in got:
            assigned = benchlib.last_assigned(events[i], tp, not_after=snapshots[i][0])
            first = first_result(results, tp, assigned, next_start) if assigned and tp[0] == INPUT_TOPIC else None
            old = owner(before, tp)
            released = None if old is None or assigned is None else \
                benchlib.last_released(events[old], tp, not_after=assigned, not_before=members[i].started_wall)
            moved.append({"partition": f"{tp[0]}[{tp[1]}]", "from": old,
                          "unowned_s": None if released is None else round(assigned - released, 2),
                          "assigned_s": None if assigned is None else round(assigned - members[i].started_wall, 2),
                          "to_first_result_s": None if first is None else round(first - assigned, 2)})
        waits = [m["to_first_result_s"] for m in moved if m["to_first_result_s"] is not None]
        inputs = [m for m in moved if m["partition"].startswith(INPUT_TOPIC + "[")]
        gaps = [m["unowned_s"] for m in moved if m["unowned_s"] is not None]
        joins.append({"member": i, "moved": moved, "input_moved": len(inputs), "retry_moved": len(moved) - len(inputs),
                      "max_unowned_s": max(gaps) if gaps else None,
                      "input_without_result": sum(1 for m in inputs if m["to_first_result_s"] is None),
                      "max_to_first_result_s": max(waits) if waits else None, "reruns": reruns["joins"].get(i, 0)})
    return joins


class ResultsTail:
    """Reads the results topic from given offsets while the scale-in runs: the first result of each source
    partition read (receivedAt) at or after a given time."""

    def __init__(self, bootstrap, marks):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "scaleout-tail",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 10})
        self.consumer.assign([TopicPartition(RESULTS_TOPIC, p, high) for p, high in enumerate(marks)])
        self.seen = {}  # (topic, partition) -> receivedAt UNIX s of every result read, in order

    def poll(self):
        for m in self.consumer.consume(5000, 0.05):
            if m.error():
                continue
            try:
                doc = json.loads(m.value())
                tp = (doc["source"]["topic"], doc["source"]["partition"])
                self.seen.setdefault(tp, []).append(benchlib.wall_s(doc["receivedAt"]))
            except (ValueError, TypeError, KeyError):
                continue

    def has_result(self, tp, after):
        return any(t >= after - 0.002 for t in self.seen.get(tp, ()))

    def close(self):
        self.consumer.close()


def scale_in(args, members, expected, broker, watch, producer):
    """SIGTERMs the last-started member of the saturated group and follows the survivors' /status.json every
    0.25 s until they hold every partition exactly once (for --stable s), then the results topic until every
    input partition that moved has a result from its new owner (or --scale-in-timeout s), and 3 s more for
    the re-runs. Returns what the costs need (scale_in_costs)."""
    leaving, survivors = members[-1], members[:-1]
    for m in members:
        m.read_assignment()
    before = tuple(m.assignment or frozenset() for m in members)
    marks = [high for _, high in watch.marks(RESULTS_TOPIC)]
    retry_records = sum(high - low for low, high in watch.marks(RETRY_TOPIC))
    load = os.getloadavg()[0]
    tail = ResultsTail(broker.bootstrap, marks)
    t0, wall0 = time.monotonic(), time.time()
    log(f"  scale-in: SIGTERM to member {leaving.index} (pid {leaving.proc.pid}, "
        f"{'/'.join(str(x) for x in counts(before[-1], args.partitions))} input/retry partitions); load {load:.1f}")
    leaving.proc.send_signal(signal.SIGTERM)
    first_seen = {}  # (topic, partition) -> (survivor index, s after the SIGTERM) when first seen held by it
    stable_since = last = held_s = exited_s = None
    timeout_at = t0 + args.settle_timeout
    waited_out = False
    while True:
        now = time.monotonic()
        if exited_s is None and not leaving.alive():
            exited_s = round(now - t0, 2)
        for m in survivors:
            if not m.alive():
                raise Failure(f"member {m.index} exited with {m.proc.returncode} during the scale-in (see {m.log.name})")
            a = m.read_assignment() or frozenset()
            for tp in a - before[m.index]:
                first_seen.setdefault(tp, (m.index, round(now - t0, 2)))
        tail.poll()
        if producer.error:
            raise Failure(f"the producer failed: {producer.error}")
        if held_s is None:
            signature = tuple(m.assignment for m in survivors)
            held = [x for a in signature for x in (a or ())]
            complete = len(held) == len(set(held)) and set(held) == expected
            if complete and signature == last:
                if now - stable_since >= args.stable:
                    held_s = round(stable_since - t0, 2)
                    final = signature
                    timeout_at = now + args.scale_in_timeout
            else:
                stable_since = now if complete else None
            last = signature
        else:
            moved = [tp for tp in expected if tp[0] == INPUT_TOPIC and owner(before, tp) != owner(final, tp)]
            waiting = []
            for tp in moved:
                j = owner(final, tp)
                assigned = benchlib.first_assigned(benchlib.rebalance_events(members[j].log.name), tp, wall0)
                if assigned is None or not tail.has_result(tp, assigned):
                    waiting.append(tp)
            if not waiting:
                break
        if now >= timeout_at:
            waited_out = True
            break
        time.sleep(0.25)
    settle_end = time.monotonic()
    while time.monotonic() < settle_end + 3.0:  # the re-runs of the moved partitions come first; give them 3 s
        tail.poll()
        time.sleep(0.25)
    tail.close()
    try:
        leaving.proc.wait(max(0.1, 30 - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        pass
    if exited_s is None and leaving.proc.poll() is not None:
        exited_s = round(time.monotonic() - t0, 2)  # at most this late
    return {"leaving": leaving.index, "before": before, "final": final if held_s is not None else None,
            "marks": marks, "sigterm_wall": wall0, "held_s": held_s, "exited_s": exited_s,
            "exit_code": leaving.proc.poll(), "first_seen": first_seen, "timed_out": waited_out,
            "retry_records": retry_records, "load_at_sigterm": round(load, 2),
            "observed_s": round(time.monotonic() - t0, 1)}


def scale_in_costs(shrink, members, events, results, reruns):
    """Per partition that moved to a survivor at the scale-in: old and new owner, seconds from the SIGTERM
    to its assignment (the new owner's log) and from there to its first result; the re-runs."""
    wall0, before, final = shrink["sigterm_wall"], shrink["before"], shrink["final"]
    if final is None:  # never settled: the survivors' last reads
        final = tuple(m.assignment for m in members[:-1])
    moved = []
    for tp in sorted(set(before[shrink["leaving"]]) | {tp for a in final for tp in (a or ())}):
        old, new = owner(before, tp), owner(final, tp)
        if new is None or old == new:
            continue
        assigned = benchlib.first_assigned(events[new], tp, wall0)
        if assigned is None and tp in shrink["first_seen"]:
            assigned = wall0 + shrink["first_seen"][tp][1]  # no log line: its first sight in /status.json
        first = first_result(results, tp, assigned) if assigned and tp[0] == INPUT_TOPIC else None
        released = None if old is None else benchlib.last_released(events[old], tp, not_after=assigned or float("inf"),
                                                                   not_before=wall0)
        moved.append({"partition": f"{tp[0]}[{tp[1]}]", "from": old, "to": new,
                      "released_after_sigterm_s": None if released is None else round(released - wall0, 2),
                      "assigned_after_sigterm_s": None if assigned is None else round(assigned - wall0, 2),
                      "seen_after_sigterm_s": shrink["first_seen"].get(tp, (None, None))[1],
                      "to_first_result_s": None if first is None else round(first - assigned, 2)})
    waits = [m["to_first_result_s"] for m in moved if m["to_first_result_s"] is not None]
    assigned = [m["assigned_after_sigterm_s"] for m in moved if m["assigned_after_sigterm_s"] is not None]
    moved_tps = {(m["partition"].rpartition("[")[0], int(m["partition"].rpartition("[")[2].rstrip("]"))) for m in moved}
    return {"leaving_member": shrink["leaving"],
            "leaving_held": [len([tp for tp in before[shrink["leaving"]] if tp[0] == INPUT_TOPIC]),
                             len([tp for tp in before[shrink["leaving"]] if tp[0] == RETRY_TOPIC])],
            "exit_code": shrink["exit_code"], "exited_after_s": shrink["exited_s"],
            "survivors_hold_all_after_s": shrink["held_s"],
            "last_assignment_after_s": max(assigned) if assigned else None,
            "moved": moved, "max_to_first_result_s": max(waits) if waits else None,
            "input_moved_without_result": sum(1 for m in moved if m["partition"].startswith(INPUT_TOPIC + "[")
                                              and m["to_first_result_s"] is None),
            "retry_topic_records": shrink["retry_records"],
            "reruns": reruns["scale_in"],
            "reruns_moved": sum(c for tp, c in reruns["scale_in_tps"].items() if tp in moved_tps),
            "reruns_by_partition": {f"{t}[{p}]": c for (t, p), c in sorted(reruns["scale_in_tps"].items())},
            "timed_out": shrink["timed_out"], "load_at_sigterm": shrink["load_at_sigterm"],
            "observed_s": shrink["observed_s"]}


# ---- output ---------------------------------------------------------------------------------------------

def judge(rows, args):
    """Adds the ratio to N × one member and the target to every row; returns one member's results/s and
    where it came from."""
    one = next((r for r in rows if r["members"] == 1 and r.get("results_per_s")), None)
    if one:
        baseline, source = one["results_per_s"], "measured (N = 1)"
    else:
        baseline = args.max_concurrent * 1000 / args.delay_ms
        source = "nominal (maxConcurrent x 1000 / delayMs)"
    for r in rows:
        r["vs_ideal"] = round(r["results_per_s"] / (r["members"] * baseline), 3) if r.get("results_per_s") else None
        r["target_met"] = r["vs_ideal"] is not None and r["vs_ideal"] >= TARGET
    return baseline, source


def table(rows):
    head = (f"{'members':>7} | {'results/s':>9} | {'÷ (N × one)':>11} | {'input partitions/member':<23} | "
            f"{'retry partitions/member':<23} | {'settle s':>8} | target")
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = "-" if r.get("vs_ideal") is None else f"{r['vs_ideal']:.2f}"
        rate = "-" if r.get("results_per_s") is None else f"{r['results_per_s']:.0f}"
        settle = "-" if r.get("settle_s") is None else f"{r['settle_s']:.1f}"
        inputs = " ".join(str(x) for x in r.get("input_partitions", [])) or "-"
        retries = " ".join(str(x) for x in r.get("retry_partitions", [])) or "-"
        target = "ok" if r.get("target_met") else "MISSED"
        if r.get("problems"):
            target += " (" + "; ".join(r["problems"]) + ")"
        lines.append(f"{r['members']:>7} | {rate:>9} | {ratio:>11} | {inputs:<23} | {retries:<23} | {settle:>8} | {target}")
    return "\n".join(lines)


def short(name):
    """`pushes[3]` -> `in3`, `push-retries[3]` -> `re3`."""
    topic, _, rest = name.rpartition("[")
    return ("in" if topic == INPUT_TOPIC else "re" if topic == RETRY_TOPIC else topic) + rest.rstrip("]")


def seconds(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def costs_table(rows):
    """The join costs of every step, and the scale-in's, as text (empty when none was measured)."""
    lines = []
    joins = [(r["members"], j) for r in rows for j in r.get("joins", [])]
    if joins:
        lines.append("join costs (a member joins the settled group; inN/reN = pushes[N]/push-retries[N]; unowned s = "
                     "max from the old owner's revocation to the new one's assignment; s = from its assignment to its "
                     "first result):")
        head = (f"{'N':>3} | {'joins':>5} | {'moved in/re':>11} | {'unowned s':>9} | {'max s':>6} | {'re-runs':>7} | "
                f"per moved input partition: s")
        lines += [head, "-" * len(head)]
        for n, j in joins:
            per = " ".join(f"{short(m['partition'])}:{seconds(m['to_first_result_s'], 1)}" for m in j["moved"]
                           if m["partition"].startswith(INPUT_TOPIC + "[")) or "-"
            lines.append(f"{n:>3} | {'#' + str(j['member']):>5} | {str(j['input_moved']) + '/' + str(j['retry_moved']):>11} | "
                         f"{seconds(j['max_unowned_s'], 1):>9} | "
                         f"{seconds(j['max_to_first_result_s']):>6} | {j['reruns']:>7} | {per}")
        failures = ", ".join(f"N={r['members']}: {r['commit_failures_logged']}" for r in rows
                             if r.get("commit_failures_logged") is not None)
        if failures:
            lines.append(f"(log lines of failed offset commits, e.g. refused during a rebalance, per step: {failures})")
        steady = sum(r.get("steady_reruns", 0) for r in rows)
        if steady:
            lines.append(f"(and {steady} records ran twice before any join)")
    for r in rows:
        c = r.get("scale_in")
        if not c:
            continue
        if lines:
            lines.append("")
        lines.append(f"scale-in from N={r['members']}: SIGTERM to member #{c['leaving_member']} (held "
                     f"{c['leaving_held'][0]}/{c['leaving_held'][1]} input/retry partitions; load {c['load_at_sigterm']:.1f}); "
                     f"it exited after {seconds(c['exited_after_s'], 1)} s with status {c['exit_code']}; the survivors held "
                     f"every partition {seconds(c['survivors_hold_all_after_s'], 1)} s after the SIGTERM "
                     f"(last assignment logged at {seconds(c['last_assignment_after_s'], 1)} s)")
        head = (f"{'partition':<16} | {'from':>4} | {'to':>4} | {'released s after SIGTERM':>24} | "
                f"{'assigned s after SIGTERM':>24} | {'s to first result':>17}")
        lines += [head, "-" * len(head)]
        for m in c["moved"]:
            first = seconds(m["to_first_result_s"])
            if m["to_first_result_s"] is None and m["partition"].startswith(RETRY_TOPIC + "["):
                first = "- (no records)" if not c["retry_topic_records"] else "- (none read)"
            elif m["to_first_result_s"] is None:
                first = "NONE"
            lines.append(f"{m['partition']:<16} | {'#' + str(m['from']):>4} | {'#' + str(m['to']):>4} | "
                         f"{seconds(m['released_after_sigterm_s']):>24} | "
                         f"{seconds(m['assigned_after_sigterm_s']):>24} | {first:>17}")
        if not c["moved"]:
            lines.append("(no partition moved)")
        lines.append(f"max s from assignment to first result: {seconds(c['max_to_first_result_s'])}"
                     f"{' (' + str(c['input_moved_without_result']) + ' moved input partition(s) without a result)' if c['input_moved_without_result'] else ''}"
                     f"{'; TIMED OUT' if c['timed_out'] else ''}; records that ran twice: {c['reruns_moved']} of the "
                     f"moved partitions, {c['reruns']} in all"
                     + (f" ({', '.join(f'{short(k)}:{v}' for k, v in c['reruns_by_partition'].items())})"
                        if c["reruns_by_partition"] else ""))
    return "\n".join(lines)


def chart(out):
    """OUT/scaleout.svg from OUT/results.json: results/s per N against N × one member, and each member's
    input and retry partitions."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "pushworker-benchmark"
    import matplotlib.pyplot as plt

    data = json.loads((out / "results.json").read_text())
    rows, bench = data["steps"], data["benchmark"]
    baseline = data["one_member_results_per_s"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.3]})
    ns = [r["members"] for r in rows]
    rates = [r.get("results_per_s") or 0 for r in rows]
    left.bar(ns, rates, color="#4878a8", width=0.6, label="measured")
    xs = [0.5, max(ns) + 0.5]
    left.plot(xs, [x * baseline for x in xs], "--", color="#444444", linewidth=1, label="N × one member")
    left.plot(xs, [x * baseline * TARGET for x in xs], ":", color="#c04040", linewidth=1,
              label=f"target {TARGET:g} × N × one")
    for n, rate, r in zip(ns, rates, rows):
        note = f"{rate:.0f}/s" + (f"\n{r['vs_ideal']:.2f}×" if r.get("vs_ideal") is not None else "")
        left.text(n, rate, note, ha="center", va="bottom", fontsize=8)
    left.set_xticks(ns)
    left.set_xlabel("members in the group")
    left.set_ylabel("results/s")
    left.set_ylim(0, max(rates + [max(ns) * baseline]) * 1.25)
    left.legend(fontsize=8, loc="upper left")
    left.set_title("results/s over the window", fontsize=10)

    labels, inputs, retries = [], [], []
    for r in rows:
        for m in r.get("member_rows", []):
            labels.append(f"N={r['members']}\n#{m['member']}")
            inputs.append(m["input_partitions"])
            retries.append(m["retry_partitions"])
    x = list(range(len(labels)))
    right.bar(x, inputs, color="#4878a8", width=0.6, label=f"{INPUT_TOPIC} (input)")
    right.bar(x, retries, bottom=inputs, color="#e0a040", width=0.6, label=f"{RETRY_TOPIC} (retry)")
    right.set_xticks(x)
    right.set_xticklabels(labels, fontsize=8)
    right.set_ylabel("partitions held")
    right.legend(fontsize=8)
    right.set_title("each member's partitions during the window", fontsize=10)
    env = data["environment"]
    version = f"{env.get('pushworker') or 'pushworker'}, {env.get('pushworker_path')}"
    fig.suptitle(f"Scale-out: {bench['partitions']} partitions per topic, {bench['rate']:g} records/s offered, "
                 f"noop {bench['delay_ms']} ms × {bench['max_concurrent']} per member\n{version}", fontsize=10)
    fig.tight_layout()
    path = out / "scaleout.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path


def environment(args):
    done = subprocess.run([args.pushworker, "--version"], capture_output=True, text=True)
    return {"cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "confluent_kafka": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0],
            "pushworker": done.stdout.strip() or None, "pushworker_path": args.pushworker,
            "load_average_at_start": os.getloadavg()}


# ---- main ------------------------------------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].split(": ", 1)[1],
                                     epilog="Defaults: " + ", ".join(f"--{k} {v}" for k, v in DEFAULTS.items())
                                            + "; --quick: " + ", ".join(f"--{k} {v}" for k, v in QUICK.items()),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", help="member counts to measure, comma-separated (default 1,2,3)")
    parser.add_argument("--partitions", type=int, help="partitions of the input, retry and results topics (default 12)")
    parser.add_argument("--rate", type=float, help="records/s produced during each step (default 1500)")
    parser.add_argument("--window", type=float, help="seconds measured once the group has settled (default 20)")
    parser.add_argument("--stable", type=float, help="seconds the assignment must stay the same to count as settled (default 3)")
    parser.add_argument("--quick", action="store_true", help="small sizes for CI: --members 1,2 --partitions 4 "
                        "--window 8 --rate 600 --stable 2 (options given explicitly still win)")
    parser.add_argument("--together", action="store_true",
                        help="start a step's members all at once (default: one after the other, each once the "
                             "group of those before it has settled, as a deployment scales out)")
    parser.add_argument("--settle-timeout", type=float, default=120.0,
                        help="seconds a step waits for its group to settle before it measures anyway (default 120)")
    parser.add_argument("--delay-ms", type=int, default=100, help="the noop worker's delayMs (default 100)")
    parser.add_argument("--max-concurrent", type=int, default=20, help="the noop worker's maxConcurrent (default 20)")
    parser.add_argument("--session-ms", type=int, default=6000, help="consumer session.timeout.ms (default 6000)")
    parser.add_argument("--heartbeat-ms", type=int, default=500, help="consumer heartbeat.interval.ms (default 500)")
    parser.add_argument("--pushworker", default=benchlib.default_exe(),
                        help="the pushworker executable, also the broker's (default .build/release/pushworker)")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "scaleout",
                        help="where results.json, scaleout.svg and logs/ go (default Benchmarks/out/scaleout)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when some N gives less than {TARGET:g} × N × one member's results/s")
    parser.add_argument("--scale-in", action=argparse.BooleanOptionalAction, default=True,
                        help="after the last step's window, SIGTERM its last-started member and measure, per partition "
                             "that moves to a survivor, the seconds from its assignment to its first result, and the "
                             "records that ran twice (default on; --no-scale-in)")
    parser.add_argument("--scale-in-timeout", type=float,
                        help="seconds the scale-in waits, once the survivors hold every partition, for the first "
                             "result of each moved input partition (default 60, --quick 30)")
    parser.add_argument("--join-costs", action=argparse.BooleanOptionalAction, default=True,
                        help="per member joining a settled group: the records that ran twice while it joined and, per "
                             "partition moved to it, the seconds from its assignment to its first result (default on; "
                             "--no-join-costs; needs the members started one after the other)")
    parser.add_argument("--plot-only", action="store_true", help="only redraw OUT/scaleout.svg from OUT/results.json")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.scale_in_timeout is None:
        args.scale_in_timeout = 30.0 if args.quick else 60.0
    try:
        args.member_counts = [int(x) for x in args.members.split(",") if x.strip()]
    except ValueError:
        parser.error(f"--members takes comma-separated counts, e.g. 1,2,3 (not {args.members!r})")
    if not args.member_counts or min(args.member_counts) < 1 or len(set(args.member_counts)) != len(args.member_counts):
        parser.error("--members takes distinct counts of at least 1")
    if args.partitions < 1 or args.rate <= 0 or args.window <= 0 or args.stable < 0 or args.settle_timeout <= 0:
        parser.error("--partitions must be at least 1, --rate, --window and --settle-timeout above 0, --stable 0 or more")
    if args.delay_ms < 1 or args.max_concurrent < 1 or args.session_ms < 1 or args.heartbeat_ms < 1:
        parser.error("--delay-ms, --max-concurrent, --session-ms and --heartbeat-ms must be at least 1")
    if max(args.member_counts) > args.partitions:
        parser.error(f"{max(args.member_counts)} members cannot all hold input partitions of {args.partitions}: "
                     f"use --partitions {max(args.member_counts)} or more")
    args.out = args.out.resolve()
    if not args.plot_only:
        path = shutil.which(args.pushworker) if os.sep not in args.pushworker else args.pushworker
        if not path or not os.access(path, os.X_OK) or os.path.isdir(path):
            parser.error(f"no pushworker executable at {args.pushworker}: build it with `swift build -c release` "
                         f"or give --pushworker PATH")
        args.pushworker = os.path.abspath(path)
        if not shutil.which("setsid"):
            parser.error("needs setsid (apt-get install util-linux)")
    return args


def main():
    args = parse_args()
    out = args.out
    if args.plot_only:
        print(f"wrote {chart(out)}")
        return 0
    benchlib.stop_children_on_sigterm()
    logs = out / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir(parents=True)
    nominal = args.max_concurrent * 1000 / args.delay_ms
    if args.rate < 1.2 * max(args.member_counts) * nominal:
        log(f"note: --rate {args.rate:g} is not well above {max(args.member_counts)} members × {nominal:.0f}/s: "
            f"the members may not be saturated, and results/s then measures the rate, not their capacity")
    load = os.getloadavg()[0]
    if load > 0.5 * os.cpu_count():
        log(f"note: the load average is {load:.1f} on {os.cpu_count()} cores: the figures will be noisy")
    env = environment(args)
    log(f"scaleout: {args.pushworker} ({env['pushworker']}); members {args.members}, {args.partitions} partitions, "
        f"{args.rate:g} records/s, window {args.window:g} s")
    run_id = time.strftime("%H%M%S")
    rows, failed = [], None
    broker = watch = None
    started = time.monotonic()
    try:
        # setsid: the broker in a session of its own, so a terminal's Ctrl-C does not stop it under the members
        broker = benchlib.Broker(args.pushworker, args.partitions, str(logs), wrap=["setsid"])
        log(f"broker at {broker.bootstrap} (pid {broker.proc.pid})")
        watch = Watch(broker.bootstrap, args.partitions)
        seq = 0
        for n in args.member_counts:
            log(f"step: {n} member{'s' if n > 1 else ''}")
            try:
                row, seq = step(args, n, broker, watch, logs, run_id, seq)
            except Failure as error:
                failed = str(error)
                log(f"scaleout.py: {failed}")
                break
            rows.append(row)
            if broker.proc.poll() is not None:
                failed = f"the broker exited with {broker.proc.returncode} (see {logs / 'broker.log'})"
                break
        if watch:
            trimmed = [low for low, _ in watch.marks(INPUT_TOPIC) if low]
            if trimmed:
                log(f"note: the mock broker dropped the oldest {sum(trimmed)} input records (5 MiB per partition)")
    finally:
        if watch:
            watch.close()
        if broker:
            broker.stop()
    baseline, source = judge(rows, args) if rows else (None, None)
    data = {"benchmark": {"members": args.member_counts, "partitions": args.partitions, "rate": args.rate,
                          "window_s": args.window, "stable_s": args.stable, "delay_ms": args.delay_ms,
                          "max_concurrent": args.max_concurrent, "session_timeout_ms": args.session_ms,
                          "heartbeat_interval_ms": args.heartbeat_ms, "target": TARGET,
                          "seconds_total": round(time.monotonic() - started, 1)},
            "environment": {**env, "load_average_at_end": os.getloadavg()},
            "one_member_results_per_s": baseline, "one_member_source": source,
            "failure": failed, "steps": rows}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    if rows:
        print(f"\n{env['pushworker'] or args.pushworker}: {args.partitions} partitions per topic, "
              f"{args.rate:g} records/s offered, noop {args.delay_ms} ms × maxConcurrent {args.max_concurrent}; "
              f"one member = {baseline:.0f} results/s, {source}; {os.cpu_count()} cores, "
              f"{benchlib.load_note()}\n")
        print(table(rows))
        costs = costs_table(rows)
        if costs:
            print("\n" + costs)
        print(f"\nwrote {chart(out)}")
    print(f"wrote {out / 'results.json'}; logs in {logs} ({data['benchmark']['seconds_total']:.0f} s in all)")
    if failed:
        return 1
    if args.check and not all(r["target_met"] for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
