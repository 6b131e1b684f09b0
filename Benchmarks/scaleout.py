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
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import confluent_kafka

    import benchlib
    from benchlib import INPUT_TOPIC, RESULTS_TOPIC
except ImportError as error:
    print(f"scaleout.py: needs confluent-kafka ({error}): apt-get install python3-confluent-kafka, and run "
          f"with /usr/bin/python3", file=sys.stderr)
    sys.exit(2)

from scaleout_costs import (commit_failures, join_costs, parse_results, reruns_by_phase, scale_in,  # noqa: E402
                            scale_in_costs)
from scaleout_group import (APNS_ID_PREFIX, RETRY_TOPIC, Failure, Member, SteadyProducer, Watch,  # noqa: E402
                            counts, log, member_config, settle, stop_members)
from scaleout_report import TARGET, chart, costs_table, judge, table  # noqa: E402

DEFAULTS = {"members": "1,2,3", "partitions": 12, "window": 20.0, "rate": 1500.0, "stable": 3.0}
QUICK = {"members": "1,2", "partitions": 4, "window": 8.0, "rate": 600.0, "stable": 2.0}


# ---- one step -------------------------------------------------------------------------------------------

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
