#!/usr/bin/env python3
"""Instructions per record for each stage of pushworker's per-record path, from a callgrind profile.

Usage: scripts/callgrind-stages.py RECORDS PROFILE...

PROFILE: the files of one callgrind dump of a `pushworker run` that handled RECORDS records with the
noop worker, one per thread (`--separate-threads=yes`; what scripts/callgrind-stages.sh makes). Reads the
inclusive cost of every function in each thread (`callgrind_annotate --inclusive=yes`, names demangled
with `swift demangle --simplified`) and prints, per stage, the instructions per record of the functions
that make it up (docs/performance-profiling.md lists them), the rest of the process as "other", and the
whole process.

A function's inclusive cost is its own instructions and those of everything it calls on its thread.
Stages are reckoned per thread, so that a function is subtracted from another only where it runs inside
it (e.g. a result is published inside `JobDispatcher.submit` when the consumer's thread publishes it,
and on a thread of its own in later builds). callgrind_annotate splits a Swift function into one line
per source file its inlined code comes from; the line with the whole inclusive cost is the largest, so
the largest is taken.
"""
import re
import subprocess
import sys

if len(sys.argv) < 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) == 0:
    sys.exit(__doc__.split("\n\n")[1])
records, profiles = int(sys.argv[1]), sys.argv[2:]

# "1,234 (5.6%)  file:function [object]"; a thread that ran nothing in the window has "." for its costs.
line_re = re.compile(r"^\s*([\d,]+|\.)\s+(?:\(\s*[\d.]+%\)\s+)?(.*?)\s*$")
object_re = re.compile(r"\s\[/[^\]]*\]$")


def read(profile):
    """The thread's total and its functions' inclusive costs, by demangled name."""
    annotate = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--auto=no", "--threshold=100", profile],
                              capture_output=True, text=True, check=True)
    demangled = subprocess.run(["swift", "demangle", "--simplified"], input=annotate.stdout,
                               capture_output=True, text=True, check=True).stdout
    total, cost = None, {}
    for line in demangled.splitlines():
        match = line_re.match(line)
        if not match:
            continue
        value = 0 if match.group(1) == "." else int(match.group(1).replace(",", ""))
        rest = match.group(2)
        if rest.startswith("PROGRAM TOTALS"):
            total = value
            continue
        rest = object_re.sub("", rest)
        if ":" in rest:
            function = rest.split(":", 1)[1]
            cost[function] = max(cost.get(function, 0), value)
    if total is None:
        sys.exit(f"{profile}: no PROGRAM TOTALS line in callgrind_annotate's output")
    return total, cost


threads = [read(profile) for profile in profiles]
total = sum(thread_total for thread_total, _ in threads)
seen = set()
swift = r"(?:specialized )?"
patterns = {
    "rd_kafka_consumer_poll": r"rd_kafka_consumer_poll",
    "ConsumerLoop.run": swift + r"ConsumerLoop\.run\(until:\)",
    "JobDispatcher.submit": swift + r"JobDispatcher\.submit\(_:\)",
    "OffsetTracker.track": swift + r"OffsetTracker\.track\(_:\)",
    "PayloadValidator.check": swift + r"PayloadValidator\.check\(value:apnsExpiration:nowMs:\)",
    "PushHeaders.init": swift + r"PushHeaders\.init\(_:\)",
    # One result at a time (builds before the dispatcher handed its outputs over in batches), or a batch.
    "ResultPublisher.publish(result)": swift + r"ResultPublisher\.publish\(_:deadLetter:retry:\)",
    "ResultPublisher.publish(batch)": swift + r"ResultPublisher\.publish\(_:\)",
    "ResultRecord.jsonBytes": swift + r"ResultRecord\.jsonBytes\(\)",
    "KafkaProducer.pollLoop": swift + r"KafkaProducer\.pollLoop\(\)",
    "OffsetTracker.complete": swift + r"OffsetTracker\.complete\(_:\)",
    "KafkaConsumer.storeOffsets": swift + r"KafkaConsumer\.storeOffsets\(_:\)",
    "KafkaRecord.init(copying:topic:)": swift + r"KafkaRecord\.init\(copying:topic:\)",
    "cJSON_ParseWithLengthOpts": r"cJSON_ParseWithLengthOpts",
    "JSONScanner.readEnvelope": swift + r"JSONScanner\.readEnvelope\(\)",
    # The validator's single pass (builds from the perf-validate branch on; readEnvelope and cJSON then run
    # only for values it refuses).
    "JSONScanner.strictEnvelope": swift + r"JSONScanner\.strictEnvelope\(\)",
    "rd_kafka_produceva": r"rd_kafka_produceva",
    "rd_kafka_offsets_store": r"rd_kafka_offsets_store",
}
compiled = {name: re.compile(pattern) for name, pattern in patterns.items()}


def costs(cost):
    """The inclusive cost in one thread of each function above (summed over its specializations)."""
    found = {}
    for name, regex in compiled.items():
        matches = [function for function in cost if regex.fullmatch(function)]
        if matches:
            seen.add(name)
        found[name] = sum(cost[function] for function in matches)
    # In builds with both, the one-result `publish` hands its result to the batch one: the larger counts.
    found["publish"] = max(found["ResultPublisher.publish(result)"], found["ResultPublisher.publish(batch)"])
    return found


stage_names = ["poll", "copy-out", "validate", "route + dispatch", "encode result", "produce", "delivery report", "offset store"]
stages = dict.fromkeys(stage_names, 0)
details = dict.fromkeys(["KafkaRecord.init(copying:topic:)", "cJSON_ParseWithLengthOpts", "JSONScanner.readEnvelope", "JSONScanner.strictEnvelope",
                         "rd_kafka_produceva", "OffsetTracker.complete", "rd_kafka_offsets_store"], 0)
for _, cost in threads:
    c = costs(cost)
    validate = c["PayloadValidator.check"] + c["PushHeaders.init"]
    stages["poll"] += c["rd_kafka_consumer_poll"]
    if c["ConsumerLoop.run"]:
        stages["copy-out"] += c["ConsumerLoop.run"] - c["rd_kafka_consumer_poll"] - c["JobDispatcher.submit"] - c["OffsetTracker.track"]
    stages["validate"] += validate
    if c["JobDispatcher.submit"]:
        # A result published on the submitting thread is published inside submit.
        stages["route + dispatch"] += c["JobDispatcher.submit"] - validate - c["publish"]
    stages["encode result"] += c["ResultRecord.jsonBytes"]
    stages["produce"] += c["publish"] - c["ResultRecord.jsonBytes"]
    if c["KafkaProducer.pollLoop"]:
        stages["delivery report"] += c["KafkaProducer.pollLoop"] - c["OffsetTracker.complete"] - c["KafkaConsumer.storeOffsets"]
    stages["offset store"] += c["OffsetTracker.track"] + c["OffsetTracker.complete"] + c["KafkaConsumer.storeOffsets"]
    for name in details:
        details[name] += c[name]

what = {
    "poll": "rd_kafka_consumer_poll",
    "copy-out": "ConsumerLoop.run less poll, dispatch and tracking: KafkaRecord copy, InputRecord, batches",
    "validate": "PayloadValidator.check + PushHeaders.init",
    "route + dispatch": "JobDispatcher.submit less validate (and publish where it runs inside): noop worker, result handler",
    "encode result": "ResultRecord.jsonBytes",
    "produce": "ResultPublisher.publish less encode (lanes, rd_kafka_produceva)",
    "delivery report": "KafkaProducer.pollLoop less offset store (dr_msg_cb, report batches, publisher bookkeeping)",
    "offset store": "OffsetTracker.track + OffsetTracker.complete + KafkaConsumer.storeOffsets (rd_kafka_offsets_store)",
}
staged = sum(stages.values())
print(f"{profiles[0]} and {len(profiles) - 1} more threads: {records} records, {total:,} instructions in the profile")
print(f"{'stage':<18} {'instr/record':>12} {'share':>7}  functions (inclusive)")
for name in stage_names:
    print(f"{name:<18} {stages[name] / records:>12,.0f} {stages[name] / total * 100:>6.1f}%  {what[name]}")
print(f"{'other':<18} {(total - staged) / records:>12,.0f} {(total - staged) / total * 100:>6.1f}%  "
      "the rest of the process: librdkafka's own threads, hand-overs between threads, timers, HTTP server, runtime")
print(f"{'total':<18} {total / records:>12,.0f} {100:>6.1f}%  the whole process")
print("of which:")
where = {"KafkaRecord.init(copying:topic:)": "copy-out", "cJSON_ParseWithLengthOpts": "validate; and the statistics callback's",
         "JSONScanner.readEnvelope": "validate",
         "JSONScanner.strictEnvelope": "validate",
         "rd_kafka_produceva": "produce", "OffsetTracker.complete": "offset store", "rd_kafka_offsets_store": "offset store"}
for name, value in details.items():
    print(f"  {name:<34} {value / records:>8,.0f} instr/record  (in {where[name]})")
required = ["rd_kafka_consumer_poll", "ConsumerLoop.run", "JobDispatcher.submit", "OffsetTracker.track", "PayloadValidator.check",
            "PushHeaders.init", "ResultRecord.jsonBytes", "KafkaProducer.pollLoop", "OffsetTracker.complete", "KafkaConsumer.storeOffsets"]
missing = [name for name in required if name not in seen]
if "ResultPublisher.publish(result)" not in seen and "ResultPublisher.publish(batch)" not in seen:
    missing.append("ResultPublisher.publish")
if missing:
    print("functions not found in the profile (their stages are wrong; inlined or renamed?): " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
