#!/usr/bin/python3
"""Produce-to-result latency of `pushworker run` under an open-loop load at a fixed rate.

usage: Benchmarks/latency.py [--rate R | --find-max] [--seconds S] [--runs N] [--exe PATH]
                             [--consumer PROP=VALUE ...] [--producer PROP=VALUE ...] [--set KEY=JSON ...]

Starts a broker (`pushworker dev --broker-only`, topics with the fewest partitions the run's records fit
in: the single-threaded mock's CPU grows with them, and at 22 partitions it, not pushworker, was the
bottleneck) and `pushworker run --config FILE` with a noop worker (`newData`) for the records' type, waits
until one warm-up record per partition has its result (the group's first join takes ~3 s on the mock), then produces R records/s for S seconds
with an open-loop producer: record i is due at i/R s from the start, whatever pushworker does; each
carries its send time (header `bench-sent-ns`, wall clock nanoseconds, and the same time in ms as its Kafka
timestamp). Once every result is on the results topic it reads both topics and prints:

  latency       = result record's timestamp - input's send time
                  (the result's timestamp is its CreateTime: set by pushworker's librdkafka producer when
                  pushworker hands it the result, in whole ms; the mock broker keeps it. The send time is
                  taken just before the input's produce() call. Both are this machine's wall clock.)
  stages        = input send -> receivedAt (librdkafka producer, broker, consumer fetch, poll), and for
                  comparison input send -> its delivery report served here (the load generator's side);
                  receivedAt -> finishedAt (validation, dispatch, worker); finishedAt -> result timestamp
                  (the publisher's queue until produce)
  rates         = records sent / send span (and how late the producer ever was against its schedule);
                  results / span from the first send to the last result.

--find-max first measures the largest rate pushworker sustains with the same configuration, then latency at
half of it. Two steps: the drain rate (the topic filled with --max-records records, a new `run`, records
divided by the span from the first record taken, min receivedAt, to the last result's timestamp: pushworker
alone on the machine), then a bisection between 1000/s and the drain rate with open-loop runs
(--search-steps of --search-seconds each): a rate is sustained when the producer sent at it, results came at
98 % of it or more, and p99 stayed under 100 ms (no growing backlog). The load generator and the broker share
the machine's cores, so the sustained rate is the lower one; it is the maximum the latency is measured at
half of.

The `run` configuration sets only the broker, the worker, a free HTTP port, and consumer
`fetch.wait.max.ms=10` (`--fetch-wait-ms`): librdkafka 2.0.2's mock broker holds every Fetch for
fetch.wait.max.ms (a real broker answers once fetch.min.bytes have arrived), so with run's default (500 ms)
latency would measure the mock. --consumer/--producer add librdkafka properties; --set KEY=JSON sets a
top-level configuration key (e.g. --set maxInFlight=4096).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import benchlib
from benchlib import INPUT_TOPIC, RESULTS_TOPIC


def parse_properties(pairs):
    properties = {}
    for pair in pairs or []:
        name, _, value = pair.partition("=")
        properties[name] = value
    return properties


def make_config(args, bootstrap):
    consumer = {"fetch.wait.max.ms": str(args.fetch_wait_ms)} if args.fetch_wait_ms >= 0 else {}
    consumer.update(parse_properties(args.consumer))
    extra = {}
    if consumer:
        extra["consumer"] = consumer
    producer = parse_properties(args.producer)
    if producer:
        extra["producer"] = producer
    for item in args.set or []:
        key, _, value = item.partition("=")
        extra[key] = json.loads(value)
    return benchlib.run_config(bootstrap, {benchlib.RECORD_TYPE: {"kind": "noop", "result": "newData"}}, **extra)


def find_max(args):
    """Records per second `run` drains from a pre-filled topic, first record taken to last result."""
    count = args.max_records
    partitions = args.partitions or benchlib.partitions_for(count)
    with benchlib.workdir(args, "pw-latency-") as workdir:
        broker = benchlib.Broker(args.exe, partitions, workdir)
        try:
            benchlib.fill(broker.bootstrap, count, partitions)
            worker = benchlib.Worker(args.exe, make_config(args, broker.bootstrap), workdir, name="find-max")
            try:
                seen = benchlib.wait_for_results(worker, broker.bootstrap, partitions, count, timeout=120 + count / 5000)
            finally:
                code = worker.stop()
            if seen < count:
                benchlib.fail(f"find-max: only {seen} of {count} results (exit {code}); see {workdir}")
            results = benchlib.read_topic(broker.bootstrap, RESULTS_TOPIC, partitions, count)
        finally:
            broker.stop()
    first = min(benchlib.iso_ms(json.loads(value)["receivedAt"]) for *_, value in results)
    last = max(ts for _, _, ts, _, _, _ in results)
    rate = count / max(0.001, (last - first) / 1000)
    print(f"find-max: {count} pre-filled records in {(last - first) / 1000:.3f} s: {rate:,.0f} records/s "
          f"({partitions} partitions)")
    return rate


def sustained(figures):
    """Whether a run kept up: the producer sent at the rate, results came at 98 % of it or more, and no
    backlog grew (p99 under 100 ms: a backlog that grows for the whole run shows as latency rising from the
    first records to the last, far past the mock's 10 ms Fetch hold)."""
    return (figures["achieved"] >= 0.97 * figures["rate"] and figures["resultRate"] >= 0.98 * figures["rate"]
            and figures["latency"][2] < 100)


def search_sustainable(args, drained):
    """The highest open-loop rate (in steps of 1000/s) that `sustained` accepts, between 1000/s and the
    drain rate, by bisection over --search-steps runs of --search-seconds each. On this machine the load
    generator and the broker share the cores with pushworker, so this is below the drain rate."""
    low, high = 1000, int(drained)
    for _ in range(args.search_steps):
        if high - low < 1000:
            break
        rate = (low + high) // 2 // 1000 * 1000 or 1000
        probe = argparse.Namespace(**vars(args))
        probe.seconds = args.search_seconds
        figures = measure(probe, rate)
        ok = sustained(figures)
        print(f"find-max: {rate:,}/s {'sustained' if ok else 'not sustained'} (sent {figures['achieved']:,.0f}/s, "
              f"results {figures['resultRate']:,.0f}/s, p99 {figures['latency'][2]:.0f} ms, {figures['partitions']} partitions, "
              f"CPU s pushworker {figures['runCpuSeconds']:.2f} broker {figures['brokerCpuSeconds']:.2f})", flush=True)
        if ok:
            low = rate
        else:
            high = rate
    return low


def produce_open_loop(bootstrap, rate, seconds, partitions, linger_ms, acks=True):
    """Produces rate*seconds records, record i at i/rate s after the start. Returns (sent, first send ns,
    last send ns, the most the producer was ever behind its schedule in ms, {(partition, offset): when its
    delivery report was served, ns}; reports are served at least every ms, by poll(0) in the loop)."""
    failed = [0]
    acked = {}

    def report(err, msg):
        if err:
            failed[0] += 1
        else:
            acked[(msg.partition(), msg.offset())] = time.time_ns()

    settings = {"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "queue.buffering.max.messages": 1_000_000,
                "on_delivery": report}
    if not acks:
        # Delivery reports only for failures: no Python callback per record (less CPU in the load generator).
        settings["delivery.report.only.error"] = True
    producer = benchlib.Producer(settings)
    total = int(rate * seconds)
    value = benchlib.payload(0)
    start = time.perf_counter_ns()
    first_ns = None
    lag_ns = 0
    i = 0
    while i < total:
        elapsed = time.perf_counter_ns() - start
        due = min(total, elapsed * rate // 1_000_000_000 + 1)
        if due - 1 > i:
            lag_ns = max(lag_ns, elapsed - i * 1_000_000_000 // rate)
        while i < due:
            sent = time.time_ns()
            if first_ns is None:
                first_ns = sent
            try:
                producer.produce(INPUT_TOPIC, value=value, key=f"device-{i}", partition=i % partitions,
                                 timestamp=sent // 1_000_000, headers={"bench-sent-ns": str(sent)})
            except BufferError:
                producer.poll(0.001)
                continue
            i += 1
        last_ns = sent
        producer.poll(0)
        # Sleep until the next record is due (Python's sleep overshoots by ~0.1 ms).
        wait = (i * 1_000_000_000 // rate) - (time.perf_counter_ns() - start)
        if wait > 200_000:
            time.sleep((wait - 100_000) / 1e9)
    left = producer.flush(60)
    if left or failed[0]:
        benchlib.fail(f"producer: {failed[0]} records failed, {left} undelivered")
    return total, first_ns, last_ns, lag_ns / 1e6, acked


def measure(args, rate):
    seconds = args.seconds
    total = int(rate * seconds)
    partitions = args.partitions or benchlib.partitions_for(total)
    with benchlib.workdir(args, "pw-latency-") as workdir:
        broker = benchlib.Broker(args.exe, partitions, workdir, wrap=["taskset", "-c", "0"] if args.pin else None)
        try:
            config = make_config(args, broker.bootstrap)
            wrap = (["taskset", "-c", "1"] if args.pin else []) + (args.wrap.split() if args.wrap else [])
            worker = benchlib.Worker(args.exe, config, workdir, wrap=wrap or None)
            try:
                # Warm-up: one record per partition; the group's first join takes ~3 s on the mock.
                benchlib.fill(broker.bootstrap, partitions, partitions)
                if benchlib.wait_for_results(worker, broker.bootstrap, partitions, partitions, timeout=60) < partitions:
                    benchlib.fail(f"warm-up results did not arrive; see {workdir}/run.log")
                cpu_before = worker.usage()[0] if worker.alive() else float("nan")
                broker_before = broker.cpu_seconds()
                sent, first_ns, last_ns, lag_ms, acked = produce_open_loop(broker.bootstrap, rate, seconds, partitions, args.linger_ms, acks=not args.no_acks)
                seen = benchlib.wait_for_results(worker, broker.bootstrap, partitions, partitions + sent, timeout=60 + seconds)
                cpu, hwm = worker.usage() if worker.alive() else (float("nan"), 0)
                broker_cpu = broker.cpu_seconds() - broker_before
                run_cpu = cpu - cpu_before
            finally:
                code = worker.stop()
            if seen < partitions + sent:
                benchlib.fail(f"only {seen - partitions} of {sent} results arrived (exit {code}); see {workdir}/run.log")
            inputs = benchlib.read_topic(broker.bootstrap, INPUT_TOPIC, partitions, partitions + sent)
            results = benchlib.read_topic(broker.bootstrap, RESULTS_TOPIC, partitions, partitions + sent)
            from confluent_kafka import Consumer
            check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-check"})
            benchlib.check_not_trimmed(check, INPUT_TOPIC, partitions)
            benchlib.check_not_trimmed(check, RESULTS_TOPIC, partitions)
            check.close()
        finally:
            broker.stop()
    sent_at = {}
    for partition, offset, _, _, headers, _ in inputs:
        for name, value in headers or []:
            if name == "bench-sent-ns":
                sent_at[(partition, offset)] = int(value)
    latencies, acks, fetched, taken, run, publish, timeline = [], [], [], [], [], [], []
    last_result = 0
    for _, _, ts, kind, _, value in results:
        result = json.loads(value)
        source = result["source"]
        sent_ns = sent_at.get((source["partition"], source["offset"]))
        if sent_ns is None:
            continue  # a warm-up record
        if kind != 1:
            benchlib.fail(f"result timestamp type {kind} is not CreateTime")
        received, finished = benchlib.iso_ms(result["receivedAt"]), benchlib.iso_ms(result["finishedAt"])
        latencies.append(ts - sent_ns / 1e6)
        timeline.append((sent_ns, ts - sent_ns / 1e6, received - sent_ns / 1e6))
        taken.append(received - sent_ns / 1e6)
        ack_ns = acked.get((source["partition"], source["offset"]))
        if ack_ns is not None:
            acks.append((ack_ns - sent_ns) / 1e6)
            fetched.append(received - ack_ns / 1e6)
        run.append(finished - received)
        publish.append(ts - finished)
        last_result = max(last_result, ts)
    if len(latencies) != sent:
        benchlib.fail(f"{len(latencies)} results for {sent} records sent")
    if args.timeline:
        print("  timeline: by 100 ms of send time, max produce->result and max produce->receivedAt, ms")
        buckets = {}
        for sent_ns, latency, to_taken in timeline:
            bucket = (sent_ns - first_ns) // 100_000_000
            worst = buckets.get(bucket, (0, 0))
            buckets[bucket] = (max(worst[0], latency), max(worst[1], to_taken))
        line = []
        for bucket in sorted(buckets):
            line.append(f"{bucket / 10:4.1f}s {buckets[bucket][0]:5.0f}/{buckets[bucket][1]:<5.0f}")
        for i in range(0, len(line), 6):
            print("    " + "  ".join(line[i:i + 6]))
    send_span = (last_ns - first_ns) / 1e9
    figures = {
        "rate": rate, "sent": sent, "seconds": seconds, "partitions": partitions,
        "achieved": sent / send_span if send_span > 0 else float("nan"),
        "resultRate": sent / ((last_result - first_ns / 1e6) / 1000),
        "producerLagMs": lag_ms, "cpuSeconds": cpu, "runCpuSeconds": run_cpu, "brokerCpuSeconds": broker_cpu,
        "peakRssMiB": hwm / 1024, "exit": code,
        "latency": benchlib.percentiles(latencies), "taken": benchlib.percentiles(taken), "acked": benchlib.percentiles(acks), "fetched": benchlib.percentiles(fetched),
        "run": benchlib.percentiles(run), "publish": benchlib.percentiles(publish),
    }
    return figures


def show(figures):
    def row(name, values):
        return f"  {name:<28} p50 {values[0]:7.1f}  p90 {values[1]:7.1f}  p99 {values[2]:7.1f}  max {values[3]:7.1f} ms"

    print(f"rate {figures['rate']:,.0f}/s for {figures['seconds']} s: {figures['sent']} records, "
          f"{figures['partitions']} partitions; achieved {figures['achieved']:,.0f}/s sent "
          f"(producer at most {figures['producerLagMs']:.1f} ms behind schedule), "
          f"{figures['resultRate']:,.0f}/s results")
    print(row("produce -> result", figures["latency"]))
    print(row("  produce -> receivedAt", figures["taken"]))
    print(row("    (produce -> input acked)", figures["acked"]))
    print(row("    (input acked -> receivedAt)", figures["fetched"]))
    print(row("  receivedAt -> finishedAt", figures["run"]))
    print(row("  finishedAt -> result", figures["publish"]))
    print(f"  pushworker: {figures['cpuSeconds']:.2f} CPU s ({figures['runCpuSeconds']:.2f} s while producing and "
          f"until the last result; the broker {figures['brokerCpuSeconds']:.2f} s), peak RSS "
          f"{figures['peakRssMiB']:.0f} MiB, exit {figures['exit']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", default=benchlib.default_exe(), help="the pushworker executable (default: .build/release/pushworker)")
    ap.add_argument("--rate", type=int, default=20_000, help="records per second (default 20000)")
    ap.add_argument("--find-max", action="store_true", help="measure the maximum rate first, then latency at half of it")
    ap.add_argument("--max-records", type=int, default=200_000, help="records of the --find-max drain run (default 200000)")
    ap.add_argument("--search-steps", type=int, default=4, help="open-loop runs of the --find-max bisection (default 4)")
    ap.add_argument("--search-seconds", type=float, default=3, help="length of each of them (default 3)")
    ap.add_argument("--seconds", type=float, default=3, help="length of the open-loop run (default 3: few records, few partitions)")
    ap.add_argument("--runs", type=int, default=1, help="repeat the latency run N times and print the median (default 1)")
    ap.add_argument("--partitions", type=int, help="partitions per topic (default: sized for the mock's 5 MiB limit)")
    ap.add_argument("--fetch-wait-ms", type=int, default=10, help="run's consumer fetch.wait.max.ms (default 10; the mock holds each Fetch this long; -1: not set, run's own default)")
    ap.add_argument("--linger-ms", type=float, default=1, help="the load generator's own linger.ms (default 1)")
    ap.add_argument("--consumer", action="append", metavar="PROP=VALUE", help="another consumer property of run")
    ap.add_argument("--producer", action="append", metavar="PROP=VALUE", help="a producer property of run")
    ap.add_argument("--set", action="append", metavar="KEY=JSON", help="a top-level key of run's configuration")
    ap.add_argument("--wrap", help="run pushworker under this command, e.g. 'heaptrack -o /tmp/ht' (profiling)")
    ap.add_argument("--keep", action="store_true", help="keep the working folder (configurations, logs) and print its path")
    ap.add_argument("--timeline", action="store_true", help="print the worst latency per 100 ms of send time")
    ap.add_argument("--no-acks", action="store_true", help="no delivery report per record in the load generator (less CPU; no send -> delivery report stage)")
    ap.add_argument("--pin", action="store_true", help="pushworker on CPU 1, the broker and this load generator on CPU 0 (taskset)")
    ap.add_argument("--json", action="store_true", help="also print each run's figures as one JSON line")
    args = ap.parse_args()
    benchlib.stop_children_on_sigterm()
    if args.pin:
        os.sched_setaffinity(0, {0})
    if not os.access(args.exe, os.X_OK):
        benchlib.fail(f"{args.exe} is not an executable: build with `swift build -c release` or pass --exe")
    print(f"latency.py: {benchlib.load_note()}; {args.exe}", flush=True)
    rate = args.rate
    if args.find_max:
        drained = find_max(args)
        maximum = search_sustainable(args, drained)
        rate = int(maximum / 2)
        print(f"find-max: highest sustained open-loop rate {maximum:,}/s; measuring at half of it: {rate:,}/s", flush=True)
    runs = []
    for index in range(args.runs):
        figures = measure(args, rate)
        runs.append(figures)
        show(figures)
        if args.json:
            print("JSON " + json.dumps(figures))
    if args.runs > 1:
        middle = sorted(runs, key=lambda f: f["latency"][2])[len(runs) // 2]
        print(f"median of {args.runs} runs by p99 (run {runs.index(middle) + 1}): "
              f"p50 {middle['latency'][0]:.1f} p90 {middle['latency'][1]:.1f} p99 {middle['latency'][2]:.1f} "
              f"max {middle['latency'][3]:.1f} ms; {benchlib.load_note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
