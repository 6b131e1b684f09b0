#!/usr/bin/python3
"""Many concurrent slow jobs: how long `pushworker run` takes for N jobs that each sleep, and its memory.

usage: Benchmarks/concurrency.py [-n N] [--sleep-ms MS] [--max-in-flight M] [--runs R] [--exe PATH]
                                 [--consumer PROP=VALUE ...] [--set KEY=JSON ...]

Starts a broker (`pushworker dev --broker-only`, topics sized for N results), fills the input topic with N
records (distinct keys, so none waits for another), then starts `pushworker run --config FILE` with a noop
worker that sleeps MS (`delayMs`, default 1000) and `maxInFlight` M (default N) and `maxBufferedRecords`
N + 1 (so that the consumer never pauses). Once the results topic holds N results it reads pushworker's
peak RSS (VmHWM in /proc/PID/status) and CPU seconds (utime + stime in /proc/PID/stat), stops it with
SIGTERM, reads the results and prints:

  span          = last result's timestamp (its CreateTime: when pushworker produced it) - the first record
                  taken (min receivedAt over the results); also to max finishedAt (the last job's end)
  taken         = max receivedAt - min receivedAt (how long taking the N records took)

The configuration sets only the broker, the worker, maxInFlight, maxBufferedRecords, a free HTTP port, and
consumer `fetch.wait.max.ms=10` (librdkafka 2.0.2's mock broker holds an empty Fetch that long; run's
default is 500 ms). The budget is run's default (30 s).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import benchlib
from benchlib import RESULTS_TOPIC


def measure(args):
    count = args.count
    partitions = args.partitions or benchlib.partitions_for(count)
    consumer = {"fetch.wait.max.ms": "10"}
    for pair in args.consumer or []:
        name, _, value = pair.partition("=")
        consumer[name] = value
    extra = {"consumer": consumer, "maxInFlight": args.max_in_flight or count,
             "maxBufferedRecords": max(50_000, count + 1)}
    for item in args.set or []:
        key, _, value = item.partition("=")
        extra[key] = json.loads(value)
    with benchlib.workdir(args, "pw-concurrency-") as workdir:
        broker = benchlib.Broker(args.exe, partitions, workdir)
        try:
            fill_seconds = benchlib.fill(broker.bootstrap, count, partitions)
            workers = {benchlib.RECORD_TYPE: {"kind": "noop", "result": "newData", "delayMs": args.sleep_ms}}
            worker = benchlib.Worker(args.exe, benchlib.run_config(broker.bootstrap, workers, **extra), workdir, wrap=args.wrap and args.wrap.split())
            try:
                trace = [] if args.trace else None
                seen = benchlib.wait_for_results(worker, broker.bootstrap, partitions, count, timeout=120 + count / 2000, trace=trace)
                cpu, hwm = worker.usage() if worker.alive() else (float("nan"), 0)
            finally:
                code = worker.stop()
            if seen < count:
                benchlib.fail(f"only {seen} of {count} results (exit {code}); see {workdir}/run.log")
            results = benchlib.read_topic(broker.bootstrap, RESULTS_TOPIC, partitions, count)
            from confluent_kafka import Consumer
            check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-check"})
            benchlib.check_not_trimmed(check, benchlib.INPUT_TOPIC, partitions)
            benchlib.check_not_trimmed(check, RESULTS_TOPIC, partitions)
            check.close()
        finally:
            broker.stop()
    received, finished, stamps, outcomes = [], [], [], {}
    for _, _, ts, _, _, value in results:
        result = json.loads(value)
        received.append(benchlib.iso_ms(result["receivedAt"]))
        finished.append(benchlib.iso_ms(result["finishedAt"]))
        stamps.append(ts)
        outcomes[(result["result"], result.get("reason"))] = outcomes.get((result["result"], result.get("reason")), 0) + 1
    first = min(received)
    if args.trace:
        print("  trace: seconds since the worker started, VmRSS MiB, jobs in flight, results on the topic")
        for at, rss, running, done in trace[::max(1, len(trace) // 40)]:
            print(f"    {at:6.2f} s {rss:6.0f} MiB {running if running is not None else '-':>8} {done:>8}")
    return {
        "records": count, "sleepMs": args.sleep_ms, "maxInFlight": extra["maxInFlight"], "partitions": partitions,
        "fillSeconds": fill_seconds, "results": len(results),
        "outcomes": {f"{r}/{reason}" if reason else r: n for (r, reason), n in outcomes.items()},
        "spanSeconds": (max(stamps) - first) / 1000, "toLastFinishSeconds": (max(finished) - first) / 1000,
        "takenSeconds": (max(received) - first) / 1000, "cpuSeconds": cpu, "peakRssMiB": hwm / 1024, "exit": code,
    }


def show(figures):
    print(f"{figures['records']} jobs sleeping {figures['sleepMs']} ms, maxInFlight {figures['maxInFlight']}, "
          f"{figures['partitions']} partitions: {figures['results']} results {figures['outcomes']}")
    print(f"  first taken -> last result {figures['spanSeconds']:.3f} s (-> last finishedAt "
          f"{figures['toLastFinishSeconds']:.3f} s; all taken within {figures['takenSeconds']:.3f} s)")
    print(f"  pushworker: {figures['cpuSeconds']:.2f} CPU s, peak RSS {figures['peakRssMiB']:.0f} MiB, exit {figures['exit']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", default=benchlib.default_exe(), help="the pushworker executable (default: .build/release/pushworker)")
    ap.add_argument("-n", "--count", type=int, default=100_000, help="records, one job each (default 100000)")
    ap.add_argument("--sleep-ms", type=int, default=1000, help="the noop worker's delayMs (default 1000)")
    ap.add_argument("--max-in-flight", type=int, help="maxInFlight (default: N)")
    ap.add_argument("--partitions", type=int, help="partitions per topic (default: sized for the mock's 5 MiB limit)")
    ap.add_argument("--runs", type=int, default=1, help="repeat N times and print the medians (default 1)")
    ap.add_argument("--consumer", action="append", metavar="PROP=VALUE", help="another consumer property of run")
    ap.add_argument("--set", action="append", metavar="KEY=JSON", help="a top-level key of run's configuration")
    ap.add_argument("--trace", action="store_true", help="print VmRSS and jobs in flight (/metrics) over the run")
    ap.add_argument("--wrap", help="run pushworker under this command, e.g. 'heaptrack -o /tmp/ht' (profiling)")
    ap.add_argument("--keep", action="store_true", help="keep the working folder (configurations, logs) and print its path")
    ap.add_argument("--json", action="store_true", help="also print each run's figures as one JSON line")
    args = ap.parse_args()
    benchlib.stop_children_on_sigterm()
    if not os.access(args.exe, os.X_OK):
        benchlib.fail(f"{args.exe} is not an executable: build with `swift build -c release` or pass --exe")
    print(f"concurrency.py: {benchlib.load_note()}; {args.exe}", flush=True)
    runs = []
    for _ in range(args.runs):
        figures = measure(args)
        runs.append(figures)
        show(figures)
        if args.json:
            print("JSON " + json.dumps(figures), flush=True)
    if args.runs > 1:
        def median(key):
            return sorted(f[key] for f in runs)[len(runs) // 2]
        print(f"median of {args.runs} runs: span {median('spanSeconds'):.3f} s, peak RSS {median('peakRssMiB'):.0f} MiB, "
              f"{median('cpuSeconds'):.2f} CPU s; {benchlib.load_note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
