#!/usr/bin/python3
"""Benchmarks/startup.py: where `pushworker run`'s start-up time goes, from process start to its first result.

One embedded broker (`pushworker dev --broker-only`) holds --records pushes (default 2000) in 16 partitions.
Each run starts `pushworker run` with a fresh consumer group and debug logs, and reads the time of each
milestone from its own log lines (ISO timestamps, against the moment this script started the process):

  first log     the process is up (configuration read)
  cluster       it has asked the brokers whether they are an embedded cluster (`run` then applies the
                settings `dev` uses for it)
  consuming     producer and consumer group members created, output topics prepared, subscribed
  assigned      the first `partitions assigned` (the group coordinator answered the JoinGroup and SyncGroup;
                librdkafka's mock waits 3 s for more members before the first assignment of a new group,
                as a broker's `group.initial.rebalance.delay.ms` does)
  joined        every member (one per subscribed topic) has its first assignment
  first result  the first `result` log line (the first record taken, run and its result made)

and then how long a SIGTERM takes to end it. Compare with the C reference worker's `total_s - seconds`
(the independent benchmark's C worker, or Benchmarks/reference/c_worker.c: start to first record).

usage: /usr/bin/python3 Benchmarks/startup.py [--pushworker PATH] [--runs N] [--records N]
Exit status: 0, or 1 when a run did not reach its first result within 60 s.
"""
import argparse
import json
import re
import signal
import subprocess
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

MILESTONES = [("first log", ""), ("cluster", "embedded cluster"), ("consuming", "] consuming"),
              ("assigned", "partitions assigned"), ("joined", "joined the consumer group"), ("first result", "] result ")]


def stamp(line):
    match = re.match(r"(\S+Z) ", line)
    return datetime.fromisoformat(match.group(1).replace("Z", "+00:00")).timestamp() if match else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pushworker", default=str(Path(__file__).resolve().parent.parent / ".build/release/pushworker"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=2000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pushworker-startup-"))
    base = {"inputTopics": ["pushes"], "resultsTopic": "results", "groupId": "startup", "httpServer": {"enabled": False},
            "log": {"level": "debug"}, "dev": {"partitions": 16},
            "workers": {"content-update": {"kind": "noop", "result": "newData"}}}
    (work / "broker.json5").write_text(json.dumps(base))
    broker = subprocess.Popen([args.pushworker, "dev", "--broker-only", "--config", str(work / "broker.json5")],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    failed = False
    try:
        servers = broker.stdout.readline().strip().split("=", 1)[1]
        subprocess.run([args.pushworker, "produce", "-b", servers, "--topic", "pushes", "--type", "content-update",
                        "--count", str(args.records)], check=True, capture_output=True)
        rows = []
        for run in range(args.runs):
            config = dict(base, groupId=f"startup-{run}-{time.time_ns()}")
            (work / "run.json5").write_text(json.dumps(config))
            started = time.time()
            process = subprocess.Popen([args.pushworker, "run", "--config", str(work / "run.json5"), "--bootstrap-servers", servers],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            marks = {}
            deadline = started + 60
            for line in process.stderr:
                at = stamp(line)
                if at is not None:
                    for name, text in MILESTONES:
                        if name not in marks and text in line:
                            marks[name] = at - started
                if "first result" in marks or time.time() > deadline:
                    break
            # Keep reading (debug logs must not fill the pipe and block the process), then stop it.
            threading.Thread(target=process.stderr.read, daemon=True).start()
            time.sleep(0.5)
            stopping = time.time()
            process.send_signal(signal.SIGTERM)
            process.wait(60)
            marks["SIGTERM to exit"] = time.time() - stopping
            failed |= "first result" not in marks
            rows.append(marks)
            print(f"run {run}: " + "  ".join(f"{name} {marks[name]:.2f} s" for name, _ in MILESTONES + [("SIGTERM to exit", "")] if name in marks))
        for name, _ in MILESTONES + [("SIGTERM to exit", "")]:
            values = sorted(row[name] for row in rows if name in row)
            if values:
                print(f"median {name}: {values[len(values) // 2]:.2f} s")
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(30)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
