#!/usr/bin/python3
"""Exec workers at scale: threads and memory while N programs run at once, and the spawn rate.

usage: Benchmarks/exec.py [-n N] [--sleep S] [--spawn N2] [--budget-ms MS] [--exe PATH] [--nofile LIMIT] [--keep] [--check]

Two measurements on one broker (`pushworker dev --broker-only`), in one run:

1. Running programs. N records (distinct keys), an exec worker `sh -c 'sleep S'` (default 3 s),
   `maxInFlight` N. While the results come, samples pushworker's thread count (`Threads:` in
   /proc/PID/status) and resident set (VmRSS); prints the peaks and whether all N results are `newData`.
2. Spawn rate. N2 records (default 2000) with an exec worker `true` and `maxInFlight` 64: programs/s from
   the first record taken to the last result, against `xargs -P 64` running `true` N2 times on the same
   machine right after (the baseline of the same run).

With --check it exits 1 unless every result is right, the thread peak is at most 64 and (for N >= 1000) the
RSS peak at most 150 MB.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import benchlib
from benchlib import RESULTS_TOPIC


def sample(worker, stop_when, timeout):
    """Samples (threads, VmRSS KiB) of the worker until `stop_when()` or `timeout`; returns the peaks."""
    peak_threads = peak_rss = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and worker.alive() and not stop_when():
        try:
            with open(f"/proc/{worker.pid}/status") as f:
                for line in f:
                    if line.startswith("Threads:"):
                        peak_threads = max(peak_threads, int(line.split()[1]))
                    elif line.startswith("VmRSS:"):
                        peak_rss = max(peak_rss, int(line.split()[1]))
        except OSError:
            break
        time.sleep(0.05)
    return peak_threads, peak_rss


def run_programs(args, exe, workdir, count, command, max_in_flight, name):
    """Runs `count` records through an exec worker running `command`; returns (results, peaks, span s)."""
    partitions = benchlib.partitions_for(count)
    broker = benchlib.Broker(exe, partitions, workdir)
    try:
        benchlib.fill(broker.bootstrap, count, partitions)
        workers = {benchlib.RECORD_TYPE: {"kind": "exec", "command": command, "budgetMs": args.budget_ms}}
        config = benchlib.run_config(broker.bootstrap, workers, maxInFlight=max_in_flight,
                                     maxBufferedRecords=max(50_000, count + 1), consumer={"fetch.wait.max.ms": "10"})
        wrap = ["prlimit", f"--nofile={args.nofile}:{args.nofile}"] if args.nofile else None
        worker = benchlib.Worker(exe, config, workdir, name=name, wrap=wrap)
        from confluent_kafka import Consumer
        watch = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-watch-" + name, "enable.auto.commit": False})
        try:
            seen = [0]

            def done():
                seen[0] = benchlib.total_results(watch, partitions)
                return seen[0] >= count
            threads, rss = sample(worker, done, timeout=120 + count / 100)
        finally:
            watch.close()
            code = worker.stop()
        if seen[0] < count:
            benchlib.fail(f"{name}: only {seen[0]} of {count} results (exit {code}); see {workdir}/{name}.log")
        results = benchlib.read_topic(broker.bootstrap, RESULTS_TOPIC, partitions, count)
    finally:
        broker.stop()
    parsed = [json.loads(record[-1]) for record in results]
    received = [benchlib.iso_ms(r["receivedAt"]) for r in parsed]
    finished = [benchlib.iso_ms(r["finishedAt"]) for r in parsed]
    span = (max(finished) - min(received)) / 1000
    outcomes = {}
    for r in parsed:
        key = r["result"] + ("/" + r["reason"] if r.get("reason") else "")
        outcomes[key] = outcomes.get(key, 0) + 1
    return outcomes, threads, rss, span


def xargs_rate(count, parallel=64):
    """Programs/s of `xargs -P parallel` running `true` `count` times."""
    start = time.perf_counter()
    subprocess.run(["xargs", "-P", str(parallel), "-n", "1", "true"], input="\n".join(["x"] * count).encode(),
                   check=True, stdout=subprocess.DEVNULL)
    return count / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--count", type=int, default=1000, help="programs running at once (default 1000)")
    parser.add_argument("--sleep", type=float, default=3.0, help="seconds each of them sleeps (default 3)")
    parser.add_argument("--budget-ms", type=int, default=30_000, help="the worker's budget (default 30000, run's default)")
    parser.add_argument("--spawn", type=int, default=2000, help="programs for the spawn rate (default 2000; 0: skip)")
    parser.add_argument("--exe", default=benchlib.default_exe())
    parser.add_argument("--keep", action="store_true", help="keep the work directory (its configurations and logs)")
    parser.add_argument("--nofile", type=int, help="run pushworker under `prlimit --nofile=N:N` (root may raise the hard "
                        "limit; each running program holds up to four descriptors)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the targets are met")
    args = parser.parse_args()
    benchlib.stop_children_on_sigterm()
    ok = True
    with benchlib.workdir(args, "pw-exec-") as workdir:
        outcomes, threads, rss, span = run_programs(args, args.exe, workdir, args.count,
                                                    ["sh", "-c", f"sleep {args.sleep}"], args.count, "sleeping")
        right = outcomes == {"newData": args.count}
        print(f"running programs: {args.count} x sleep {args.sleep} s, maxInFlight {args.count}: "
              f"peak threads {threads}, peak RSS {rss / 1024:.0f} MiB ({rss * 1024 / 1e6:.0f} MB), "
              f"all done in {span:.1f} s, results {outcomes}")
        ok = ok and right and threads <= 64 and (args.count < 1000 or rss * 1024 <= 150e6)
        if args.spawn:
            outcomes, _, _, span = run_programs(args, args.exe, workdir, args.spawn, ["true"], 64, "spawning")
            pushworker = args.spawn / span
            baseline = xargs_rate(args.spawn)
            print(f"spawn rate: {args.spawn} x true, maxInFlight 64: pushworker {pushworker:.0f}/s, "
                  f"xargs -P 64 {baseline:.0f}/s: {pushworker / baseline:.2f}x; results {outcomes}")
            ok = ok and outcomes == {"newData": args.spawn}
    if args.check and not ok:
        print("check failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
