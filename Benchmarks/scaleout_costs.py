"""scaleout.py's join and scale-in costs: the scale-in itself (SIGTERM to the last-started member, then
following the survivors and the results topic), and reading back per moved partition the time to its first
result and the records that ran twice."""
import json
import os
import signal
import subprocess
import time

from confluent_kafka import Consumer, TopicPartition

import benchlib
from benchlib import INPUT_TOPIC, RESULTS_TOPIC
from scaleout_group import RETRY_TOPIC, Failure, counts, log


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
