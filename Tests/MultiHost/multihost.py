#!/usr/bin/python3
"""Multi-host tests of a pushworker consumer group, with a real (virtual) network between the hosts.

What it tests
-------------
Every "host" is a Linux network namespace made for this run (names `pwb-TOKEN`, `pwm1-TOKEN` …,
`pwsw-TOKEN`), joined by veth pairs to a bridge in a namespace of its own, on a private /24
(10.X.Y.0/24, X and Y random): nothing is added to the machine's own namespace, and every namespace (with
its links and processes) is deleted at the end, also after a failure, Ctrl-C or SIGTERM.

- The broker host `pwb` runs `pushworker dev --broker-only --brokers N` (librdkafka's mock cluster; topics
  `pushes`, `push-results`, `push-retries` with 6 partitions each, from the configuration file it is
  given). The mock listens on 127.0.0.1 and advertises 127.0.0.1:PORT, so each broker port is forwarded
  by socat: in `pwb` from 10.X.Y.1:PORT to 127.0.0.1:PORT, and in every member host from 127.0.0.1:PORT to
  10.X.Y.1:PORT. A member's Kafka traffic therefore crosses its veth, where nftables rules apply.
- Three member hosts each run `pushworker run --config FILE --bootstrap-servers 127.0.0.1:PORT,…` in one
  consumer group (noop worker with a few ms of delay, `session.timeout.ms` 6000, `heartbeat.interval.ms`
  500, its HTTP server on the member's own address, port 9400).
- This script itself moves into the broker namespace (setns) and produces, at a steady rate, records with
  unique `apns-id`s straight to 127.0.0.1 (no fault on that path); it reads the results topic from the
  beginning, and every 500 ms it samples the group's committed offsets (`Consumer.committed()`, a client
  that never joins the group) followed by the results topic's end offsets.

Scenarios (`--scenarios`, default all), each against a fresh broker and group:

- `cutoff`:  one member cut off from the broker (nftables drop to/from 10.X.Y.1 in its namespace) for
  30 s (`--quick`: 25 s), then healed. Expected: the others take its partitions during the cut-off, and
  afterwards all three hold partitions again.
- `loss`:    5 % packet loss, both directions, on one member's veth (nftables `numgen random mod 100 < 5
  drop`) for 30 s (`--quick`: 12 s). Latency is not injected: `pushworker dev --broker-only` offers no RTT
  option (the mock's `rd_kafka_mock_broker_set_rtt` is not reachable from its command line) and tc netem
  is not available in this kernel.
- `kill`:    one member's pushworker killed with SIGKILL, started again 2 s later.
- `rolling`: a rolling restart of all three (SIGTERM, wait for the exit, start again, wait until it holds
  partitions, next), each member with its own `group.instance.id` (static membership).

Each scenario ends with a LEDGER check, which decides PASS/FAIL:

- every input record has at least one result on the results topic (`lost` = inputs without one), no
  result names an input that was never produced or carries another record's `messageId`; duplicates are
  counted and printed (allowed: at-least-once);
- once production stops, the group's committed offsets reach the end offset of every input partition
  while the members run, and still equal them after every member's graceful stop (exit status 0 each);
- nothing committed before its result: for every sample (committed offsets C read first, the results
  topic's end offsets H read right after), every input record of partition p below C[p] has a result at
  a results-topic offset below H of its results partition, i.e. a result the broker had appended by then;
- all three members hold partitions again after the fault (cutoff: the other two held all the cut-off
  member's partitions during the cut-off), within a time limit.

Printed per scenario: records, results, duplicates, lost, committed==end, commits ahead of their result,
time to recover (from the end of the fault until all three hold partitions again and every record
produced before the end of the fault has its result), PASS/FAIL. Exit status 0 if all pass, 1 if any
scenario fails, 2 when not root or a tool is missing (ip, nft, socat, confluent_kafka, the binary).

What it CANNOT show against a real Kafka cluster (librdkafka 2.0.2's mock broker, see
docs/architecture.md):

- All brokers are one process on one host, reached through socat: the network faults cut a member off
  from the whole cluster at once; partitions between brokers, a broker host failing, replication, ISR
  shrinking, leader elections and unclean failover do not exist (`--brokers N` are N listeners of one
  mock, "replicas" are not copies). The socat forwarders also change what a client sees at a TCP level
  (a local connection that stays up while the forwarded leg is dropped; a refused forwarded connection
  looks like a closed one).
- Static membership is not stored by the 2.0.2 mock: `group.instance.id` is sent but ignored, so the
  `rolling` scenario shows what happens with the mock (a departed static member lingers until its session
  times out, then a rebalance), not KIP-345's "same partitions back without a rebalance". Nor can it show
  fencing: pushworker runs one group member per subscribed topic (`pushes` and `push-retries` here), and
  a real coordinator fences a second member that joins with the same `group.instance.id`
  (FENCED_INSTANCE_ID); the mock accepts both.
- Group timing is the mock's: every rebalance after the first waits `session.timeout.ms` - 1 s; recovery
  times here are not a real coordinator's (`group.initial.rebalance.delay.ms`, sticky re-join).
- The mock keeps at most 5 MiB per partition, has no retention, compaction, quotas, ACLs, TLS/SASL, and no
  `read_committed`; it does not check idempotent producers' sequence numbers, so a duplicate or reordered
  batch a real broker would refuse can be appended here.
- No latency injection (see `loss`), no clock skew between hosts (all share one clock: the results'
  timestamps and the samples are comparable only because of that).

Other options: `--brokers N` (mock brokers, default 3: one socat pair per port), `--rate R` (records a
second), `--delay-ms MS` (the noop worker's delay), `--librdkafka-debug CONTEXTS` (the members' consumer
`debug`, with log level debug, e.g. `cgrp`). Logs, configurations and each scenario's `ledger.json`
(figures, failures, the members' assignment timeline) go to `--keep-logs DIR`, else to a temporary folder
that is kept only when a scenario fails.

Usage (as root, from the repository root):

    /usr/bin/python3 Tests/MultiHost/multihost.py --pushworker .build/release/pushworker
    /usr/bin/python3 Tests/MultiHost/multihost.py --quick --scenarios kill,rolling --keep-logs /tmp/mh
"""
import argparse
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hosts  # noqa: E402 - the sibling modules, found through the line above
from hosts import (ALL_PARTITIONS, INPUT, INPUT_PARTITIONS, MEMBERS, RESULTS, Cluster, Member,  # noqa: E402
                   Network, Processes, load_kafka, log, nft, nft_dropped)
from ledger import Ledger  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------------------------------------
# A scenario run

class Scenario:
    def __init__(self, name, args, net, procs, workdir):
        self.name, self.args, self.net, self.procs = name, args, net, procs
        self.workdir = os.path.join(workdir, name)
        os.makedirs(self.workdir, exist_ok=True)
        self.group = f"mh-{name}-{net.token}"
        self.cluster = None
        self.members = []
        self.ledger = None
        self.notes = []
        self.failures = []
        self.fault_end = None
        self.regroup = None
        self.regroup_done = False   # a fault that waits for the regroup itself sets it
        self.started = time.time()

    # monitoring -------------------------------------------------------------------------------------
    def poll(self):
        for m in self.members:
            m.poll()

    def holdings(self):
        self.poll()
        return {m.name: m.holds() for m in self.members}

    def stable(self):
        """All members alive, each holds a partition, every partition held exactly once."""
        held = self.holdings()
        if not all(m.alive() for m in self.members) or not all(held.values()):
            return False
        union = [p for parts in held.values() for p in parts]
        return len(union) == len(set(union)) and set(union) == ALL_PARTITIONS

    def wait(self, condition, timeout, step=0.2):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(step)
            self.check_harness()
        return condition()

    def sleep(self, seconds, tick=None):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll()
            if tick:
                tick()
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            self.check_harness()

    def check_harness(self):
        if self.ledger and self.ledger.errors:
            raise RuntimeError("; ".join(self.ledger.errors))

    def distribution(self):
        held = self.holdings()
        return " ".join(f"{n}:{len(h & INPUT_PARTITIONS)}+{len(h - INPUT_PARTITIONS)}" for n, h in held.items())

    def victim(self):
        """The member holding the most input partitions (the first of them on a tie)."""
        held = self.holdings()
        return max(self.members, key=lambda m: (len(held[m.name] & INPUT_PARTITIONS), -m.index))

    # the run ----------------------------------------------------------------------------------------
    def run(self, fault):
        args = self.args
        try:
            self.cluster = Cluster(self.procs, self.net, args.pushworker, self.workdir, args.brokers)
            self.members = [Member(i + 1, ns, ip, args.pushworker, self.workdir, self.cluster, self.group,
                                   self.name == "rolling", self.procs, args.delay_ms, args.librdkafka_debug)
                            for i, (ns, ip) in enumerate(self.net.members)]
            for m in self.members:
                m.start()
            if not self.wait(self.stable, 60):
                raise RuntimeError(f"the group did not form (holdings {self.distribution()})")
            log(f"[{self.name}] group formed after {time.time() - self.started:.1f}s: {self.distribution()} "
                f"(members: input+retry partitions)")
            self.ledger = Ledger(self.cluster.bootstrap, self.group, self.net.token, self.name)
            self.ledger.read_results()
            self.ledger.sample()
            self.ledger.produce(args.rate)
            self.sleep(args.warmup)
            fault(self)
            # All three hold partitions again.
            if not self.regroup_done:
                if self.wait(self.stable, args.regroup_timeout):
                    self.regroup = time.time() - self.fault_end
                else:
                    self.failures.append(f"not all members hold partitions {args.regroup_timeout}s after the fault "
                                         f"ended ({self.distribution()})")
            log(f"[{self.name}] after the fault: {self.distribution()}")
            self.sleep(args.tail)
            self.ledger.stop_producing.set()
            for t in self.ledger.threads[2:]:
                t.join(90)
            produced_at = time.time()
            self.settle()
            log(f"[{self.name}] settled {time.time() - produced_at:.1f}s after production stopped")
            for m in self.members:
                metrics = m.metrics()
                if metrics is not None:
                    self.notes.append(f"{m.name} metrics: " + " ".join(
                        f"{k.replace('_total', '').replace('rebalances{event=', 'rebalances{')}={v:g}"
                        for k, v in sorted(metrics.items())))
            self.stop_members()
            return self.finish()
        finally:
            self.teardown()

    def settle(self):
        """Waits until every input has a result and the committed offsets reach the end offsets."""
        client = hosts.Consumer({"bootstrap.servers": self.cluster.bootstrap, "group.id": f"{self.group}-watch",
                           "enable.auto.commit": False})
        try:
            ends = [hi for _, hi in self.ledger.end_offsets(client, INPUT)]

            def settled():
                committed = self.ledger.committed_now()
                return self.ledger.answered_all() and committed is not None and committed == ends
            self.settled_running = self.wait(settled, self.args.settle_timeout)
            self.input_ends = ends
            self.committed_running = self.ledger.committed_now()
        finally:
            client.close()

    def stop_members(self):
        statuses = []
        for m in self.members:
            if m.alive():
                os.kill(m.proc.pid, signal.SIGTERM)
        for m in self.members:
            status, _ = m.stop(timeout=60, signalled=True)
            statuses.append(status)
        self.stop_statuses = statuses

    def finish(self):
        ledger = self.ledger
        client = hosts.Consumer({"bootstrap.servers": self.cluster.bootstrap, "group.id": f"{self.group}-watch",
                           "enable.auto.commit": False})
        try:
            result_ends = [hi for _, hi in ledger.end_offsets(client, RESULTS)]
            result_lows = [lo for lo, _ in ledger.end_offsets(client, RESULTS)]
            input_lows = [lo for lo, _ in ledger.end_offsets(client, INPUT)]
            self.wait(lambda: ledger.caught_up(result_ends), 30)
        finally:
            client.close()
        # The last sample, after the graceful stops, with a client of the group (that never joins it).
        group_client = hosts.Consumer({"bootstrap.servers": self.cluster.bootstrap, "group.id": self.group,
                                 "enable.auto.commit": False})
        try:
            final = None
            for _ in range(10):
                final = ledger.take_sample(group_client)
                if final is not None:
                    break
                time.sleep(0.5)
        finally:
            group_client.close()
        ledger.stop_sampling.set()
        ledger.stop_reading.set()
        for t in ledger.threads[:2]:
            t.join(30)
        out = ledger.evaluate(self.input_ends)
        out["committed_running"] = self.committed_running
        out["committed_final"] = final
        out["input_ends"] = self.input_ends
        out["committed_eq_end"] = bool(self.settled_running) and final == self.input_ends
        if any(result_lows) or any(input_lows):
            self.failures.append(f"the mock dropped old records (low watermarks results {result_lows}, inputs {input_lows})")
        if out["lost"]:
            self.failures.append(f"{out['lost']} inputs without a result, e.g. {out['lost_sample']}")
        if out["unexpected_count"]:
            self.failures.append(f"{out['unexpected_count']} unexpected results, e.g. {out['unexpected']}")
        if out["unknown_inputs"] or out["produce_errors"]:
            self.failures.append(f"harness: input offsets not produced by this run {out['unknown_inputs']}, "
                                 f"produce errors {ledger.produce_errors[:3]}")
        if not self.settled_running:
            self.failures.append(f"committed offsets {self.committed_running} did not reach the end offsets "
                                 f"{self.input_ends} within {self.args.settle_timeout}s (while the members ran)")
        if final != self.input_ends:
            self.failures.append(f"after the graceful stops the committed offsets are {final}, the end offsets {self.input_ends}")
        if out["early_commits"]:
            self.failures.append(f"{out['early_commits']} samples committed an input before its result was on the "
                                 f"results topic, e.g. {out['early_sample'][:2]}")
        if any(s != 0 for s in self.stop_statuses):
            self.failures.append(f"graceful stops exited {self.stop_statuses} (0 expected)")
        out["caught_up"] = ledger.caught_up_after(self.fault_end) if self.fault_end else None
        out["regroup"] = self.regroup
        out["recover"] = max(self.regroup or 0.0, out["caught_up"] or 0.0) if self.regroup is not None else None
        out["seconds"] = time.time() - self.started
        out["stop_statuses"] = self.stop_statuses
        out["notes"] = self.notes
        out["failures"] = self.failures
        out["problems"] = {m.name: m.problems[:5] for m in self.members if m.problems}
        out["events"] = sorted(e for m in self.members for e in m.events)
        with open(os.path.join(self.workdir, "ledger.json"), "w") as f:
            json.dump(out, f, indent=1, default=str)
        return out

    def teardown(self):
        for m in self.members:
            if m.proc is not None and m.alive():
                Processes.stop(m.proc, signal.SIGKILL)
        if self.ledger:
            self.ledger.stop_producing.set()
            self.ledger.stop_sampling.set()
            self.ledger.stop_reading.set()
            for t in self.ledger.threads:
                t.join(30)
        if self.cluster:
            self.cluster.stop()
        for ns, _ in self.net.members:
            Network.kill_inside(ns)
        # The machine's PID 1 reaps slowly; our own children are reaped here.
        for proc in self.procs.procs:
            proc.poll()
        self.procs.procs = [p for p in self.procs.procs if p.returncode is None]


# --------------------------------------------------------------------------------------------------------
# Faults

CUT = """table inet pwcut {{
  chain out {{ type filter hook output priority 0; policy accept; ip daddr {ip} counter drop; }}
  chain in {{ type filter hook input priority 0; policy accept; ip saddr {ip} counter drop; }}
}}
"""
LOSS = """table inet pwloss {{
  chain out {{ type filter hook output priority 0; policy accept; oifname "eth0" numgen random mod 100 < {pct} counter drop; }}
  chain in {{ type filter hook input priority 0; policy accept; iifname "eth0" numgen random mod 100 < {pct} counter drop; }}
}}
"""


def fault_cutoff(s):
    s.regroup_done = True
    victim = s.victim()
    others = [m for m in s.members if m is not victim]
    before = s.holdings()[victim.name]
    nft(victim.ns, CUT.format(ip=s.net.broker_ip))
    cut = time.time()
    log(f"[cutoff] {victim.name} cut off from the broker for {s.args.cutoff}s (held {','.join(sorted(before & INPUT_PARTITIONS))})")
    state = {"takeover": None}

    def tick():
        # Until the cut-off member holds partitions again: the mock moves partitions one rebalance
        # (session.timeout.ms - 1 s) at a time, so with a short cut-off the last may move after the heal.
        if state["takeover"] is None and not victim.holds():
            held = set().union(*(m.holds() for m in others))
            if INPUT_PARTITIONS <= held:
                state["takeover"] = time.time() - cut
    s.sleep(s.args.cutoff, tick)
    dropped = nft_dropped(victim.ns, "pwcut")
    nft(victim.ns, None, "delete", "table", "inet", "pwcut")
    s.fault_end = time.time()
    lost_at = next((e[0] - cut for e in victim.events if e[2] == "lost" and e[0] >= cut), None)
    log(f"[cutoff] healed after {s.args.cutoff}s ({dropped} packets dropped); {victim.name} reported its partitions lost "
        + (f"at +{lost_at:.1f}s" if lost_at is not None else "never during the cut-off"))
    if s.wait(lambda: (tick(), s.stable() and bool(victim.holds()))[1], s.args.regroup_timeout):
        s.regroup = time.time() - s.fault_end
    else:
        s.failures.append(f"{victim.name} did not hold partitions again {s.args.regroup_timeout}s after the heal ({s.distribution()})")
    takeover = state["takeover"]
    s.notes.append(f"{victim.name} cut off {s.args.cutoff}s ({dropped} packets dropped); it reported its partitions lost "
                   + (f"at +{lost_at:.1f}s" if lost_at is not None else "never during the cut-off")
                   + "; the others held all input partitions "
                   + (f"at +{takeover:.1f}s" + (" (during the cut-off)" if takeover <= s.args.cutoff else " (after the heal, before it rejoined)")
                      if takeover is not None else "never before it rejoined")
                   + (f"; it held partitions again {s.regroup:.1f}s after the heal" if s.regroup is not None else ""))
    if takeover is None:
        s.failures.append(f"the other members did not take all of {victim.name}'s input partitions before it rejoined")
    log(f"[cutoff] {s.notes[-1]}")


def fault_loss(s):
    victim = s.victim()
    nft(victim.ns, LOSS.format(pct=s.args.loss_percent))
    start = time.time()
    log(f"[loss] {s.args.loss_percent}% packet loss both ways on {victim.name}'s veth for {s.args.loss}s")
    s.sleep(s.args.loss)
    dropped = nft_dropped(victim.ns, "pwloss")
    nft(victim.ns, None, "delete", "table", "inet", "pwloss")
    s.fault_end = time.time()
    during = [e for m in s.members for e in m.events if start <= e[0] <= s.fault_end and e[2] in ("assigned", "revoked", "lost")]
    s.notes.append(f"{victim.name}: {s.args.loss}s of {s.args.loss_percent}% loss, {dropped} packets dropped; "
                   f"{len(during)} assignment changes meanwhile" + (f" ({'; '.join(f'{e[1]} {e[2]}' for e in during[:6])})" if during else ""))
    log(f"[loss] loss removed; {s.notes[-1]}")


def fault_kill(s):
    s.regroup_done = True
    victim = s.victim()
    log(f"[kill] SIGKILL {victim.name} (pid {victim.proc.pid}, held {','.join(sorted(victim.holds() & INPUT_PARTITIONS))})")
    killed = time.time()
    victim.kill()
    s.sleep(2)
    victim.start()
    s.fault_end = time.time()
    others = [m for m in s.members if m is not victim]
    state = {"takeover": None}

    def tick():
        if state["takeover"] is None and INPUT_PARTITIONS <= set().union(*(m.holds() for m in others)):
            state["takeover"] = time.time() - killed
    if s.wait(lambda: (tick(), s.stable() and bool(victim.holds()))[1], s.args.regroup_timeout):
        s.regroup = time.time() - s.fault_end
    else:
        s.failures.append(f"{victim.name} did not hold partitions again {s.args.regroup_timeout}s after its restart ({s.distribution()})")
    s.notes.append(f"{victim.name} killed, restarted 2s later; "
                   + (f"the others held all input partitions at +{state['takeover']:.1f}s after the kill; " if state["takeover"] else
                      "the others never held all input partitions in between; ")
                   + (f"all three hold partitions {s.regroup:.1f}s after the restart" if s.regroup is not None else ""))
    log(f"[kill] {s.notes[-1]}")


def fault_rolling(s):
    s.regroup_done = True
    for m in s.members:
        t0 = time.time()
        status, took = m.stop(timeout=60)
        if status != 0:
            s.failures.append(f"{m.name}'s graceful stop exited {status}")
        m.start()
        s.fault_end = time.time()
        if s.wait(lambda: s.stable() and bool(m.holds()), s.args.regroup_timeout):
            back = time.time() - s.fault_end
            changes = [e for o in s.members if o is not m for e in o.events if e[0] >= t0 and e[2] in ("assigned", "revoked", "lost")]
            s.notes.append(f"{m.name}: stop {took:.1f}s (exit {status}), partitions back {back:.1f}s after the start; "
                           f"the others had {len(changes)} assignment changes ({', '.join(sorted(set(e[1] + ' ' + e[2] for e in changes)))})")
            log(f"[rolling] {s.notes[-1]}")
        else:
            s.failures.append(f"{m.name} did not hold partitions again {s.args.regroup_timeout}s after its restart ({s.distribution()})")
            return
        s.regroup = back   # the last member's: from its start until all three hold partitions


FAULTS = {"cutoff": fault_cutoff, "loss": fault_loss, "kill": fault_kill, "rolling": fault_rolling}


# --------------------------------------------------------------------------------------------------------

def report(name, out, verdict):
    def sec(v):
        return f"{v:.1f}s" if isinstance(v, (int, float)) else "-"
    lat = f"latency p50 {sec(out.get('latency_p50'))} max {sec(out.get('latency_max'))}"
    print(f"== {name:8s} {verdict}  records={out['records']} results={out['results']} duplicates={out['duplicates']} "
          f"lost={out['lost']} committed==end={'yes' if out['committed_eq_end'] else 'no'} "
          f"commits-ahead-of-result={out['early_commits']} (of {out['samples']} samples) "
          f"recover={sec(out['recover'])} (regroup {sec(out['regroup'])}, caught-up {sec(out['caught_up'])}) "
          f"{lat} stops={out['stop_statuses']} took={sec(out['seconds'])}", flush=True)
    for note in out["notes"]:
        print(f"   {note}", flush=True)
    for failure in out["failures"]:
        print(f"   FAIL: {failure}", flush=True)
    for member, lines in out["problems"].items():
        for line in lines[:3]:
            print(f"   {member} logged: {line}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pushworker", default=os.path.join(REPO, ".build", "debug", "pushworker"),
                        help="the pushworker binary (default: .build/debug/pushworker of the repository)")
    parser.add_argument("--scenarios", default="cutoff,loss,kill,rolling")
    parser.add_argument("--quick", action="store_true", help="CI size: shorter faults, fewer records (about 3-4 min)")
    parser.add_argument("--keep-logs", metavar="DIR", help="keep every log, configuration and ledger in DIR")
    parser.add_argument("--brokers", type=int, default=3, help="brokers of the mock cluster (default 3)")
    parser.add_argument("--rate", type=float, help="records per second (default 200, --quick 100)")
    parser.add_argument("--delay-ms", type=int, default=5, help="the noop worker's delay (default 5)")
    parser.add_argument("--librdkafka-debug", metavar="CONTEXTS", help="the members' consumer `debug` property (e.g. cgrp)")
    args = parser.parse_args()
    q = args.quick
    args.rate = args.rate or (100 if q else 200)
    args.warmup = 4 if q else 10
    args.tail = 3 if q else 10
    # 25 s in --quick: the mock hands a lost member's partitions over in up to two rebalances, each
    # session.timeout.ms - 1 s after the last (about +11 s and +16-21 s after the cut); with 15 s the second
    # one came after the heal and the check failed (CI, December 2026).
    args.cutoff = 25 if q else 30
    args.loss = 12 if q else 30
    args.loss_percent = 5
    args.regroup_timeout = 60 if q else 90
    args.settle_timeout = 60 if q else 90
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = [s for s in scenarios if s not in FAULTS]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; known: {','.join(FAULTS)}")
    args.pushworker = os.path.abspath(args.pushworker)

    missing = []
    if os.geteuid() != 0:
        missing.append("root (network namespaces and nftables)")
    for tool in ("ip", "nft", "socat"):
        if shutil.which(tool) is None:
            missing.append(tool)
    try:
        load_kafka()
    except ImportError:
        missing.append(f"confluent_kafka for {sys.executable} (Debian: python3-confluent-kafka, run with /usr/bin/python3)")
    if not os.access(args.pushworker, os.X_OK):
        missing.append(f"the pushworker binary {args.pushworker} (--pushworker PATH)")
    if missing:
        print("multihost: cannot run: missing " + "; ".join(missing), file=sys.stderr)
        return 2

    if args.keep_logs:
        workdir = os.path.abspath(args.keep_logs)
        os.makedirs(workdir, exist_ok=True)
        workdir = tempfile.mkdtemp(prefix=time.strftime("run-%Y%m%d-%H%M%S-"), dir=workdir)
    else:
        workdir = tempfile.mkdtemp(prefix="pushworker-multihost-")
    procs = Processes()
    net = Network(MEMBERS)
    cleaned = []

    def cleanup():
        if cleaned:
            return
        cleaned.append(True)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        procs.stop_all()
        net.teardown()
    atexit.register(cleanup)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)

    results = {}
    failed = False
    try:
        Network.remove_stale()
        try:
            net.setup()
            net.enter_broker()
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
            print(f"multihost: cannot build the network: {error}", file=sys.stderr)
            return 2
        log(f"pushworker {args.pushworker}; network {net.net}.0/24 (token {net.token}); broker {net.broker} "
            f"{net.broker_ip}; members " + ", ".join(f"{ns} {ip}" for ns, ip in net.members) + f"; logs {workdir}")
        for name in scenarios:
            log(f"[{name}] starting")
            scenario = Scenario(name, args, net, procs, workdir)
            try:
                out = scenario.run(FAULTS[name])
            except Exception as error:  # noqa: BLE001 — a harness error fails the scenario, the run goes on
                out = {"records": 0, "results": 0, "duplicates": 0, "lost": 0, "committed_eq_end": False,
                       "early_commits": 0, "samples": 0, "recover": None, "regroup": None, "caught_up": None,
                       "stop_statuses": [], "seconds": time.time() - scenario.started, "notes": scenario.notes,
                       "failures": scenario.failures + [f"harness error: {error}"],
                       "problems": {m.name: m.problems[:5] for m in scenario.members if m.problems}}
            verdict = "PASS" if not out["failures"] else "FAIL"
            failed |= verdict == "FAIL"
            results[name] = (verdict, out)
            report(name, out, verdict)
        print("summary: " + " ".join(f"{n}={v}" for n, (v, _) in results.items()), flush=True)
    finally:
        cleanup()
        if failed and not args.keep_logs:
            print(f"logs kept in {workdir}", flush=True)
        elif not args.keep_logs:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs in {workdir}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
