"""The ledger of a multihost.py scenario: it produces the input records, reads the results topic, samples
the group's committed offsets, and checks them (lost, duplicates, commits ahead of their result).

The confluent_kafka names are read from `hosts` (set there by `hosts.load_kafka()`)."""
import json
import threading
import time

import hosts
from hosts import INPUT, PARTITIONS, RESULTS


class Ledger:
    def __init__(self, bootstrap, group, token, scenario):
        self.bootstrap, self.group = bootstrap, group
        self.prefix = f"{scenario}-{token}-"
        self.lock = threading.Lock()
        self.inputs = {}          # (partition, offset) -> (id, produced at)
        self.produce_errors = []
        self.results = {}         # (partition, offset) -> [(results partition, results offset, timestamp s, messageId)]
        self.unexpected = []
        self.result_count = 0
        self.read_upto = [0] * PARTITIONS
        self.samples = []         # (unix time, committed[6], results end offsets[6])
        self.stop_producing = threading.Event()
        self.stop_reading = threading.Event()
        self.stop_sampling = threading.Event()
        self.threads = []
        self.errors = []

    # producer ---------------------------------------------------------------------------------------
    def produce(self, rate):
        def body():
            producer = hosts.Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "enable.idempotence": True})
            seq = 0
            start = time.monotonic()
            try:
                while not self.stop_producing.is_set():
                    due = int((time.monotonic() - start) * rate) + 1
                    while seq < due:
                        ident = f"{self.prefix}{seq}"
                        value = json.dumps({"aps": {"content-available": 1}, "type": "job", "seq": seq}).encode()

                        def report(err, msg, ident=ident, at=time.time()):
                            with self.lock:
                                if err is not None:
                                    self.produce_errors.append((ident, str(err)))
                                else:
                                    self.inputs[(msg.partition(), msg.offset())] = (ident, at)
                        producer.produce(INPUT, value=value, key=f"device-{seq}", partition=seq % PARTITIONS,
                                         headers=[("apns-id", ident.encode())], on_delivery=report)
                        seq += 1
                    producer.poll(0.01)
                left = producer.flush(60)
                if left:
                    self.errors.append(f"producer: {left} records not delivered at the end")
            except Exception as error:  # noqa: BLE001 — reported as a harness error
                self.errors.append(f"producer: {error!r}")
        self._thread(body)

    def produced(self):
        with self.lock:
            return len(self.inputs)

    # results reader ---------------------------------------------------------------------------------
    def read_results(self):
        def body():
            reader = hosts.Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"{self.group}-reader",
                               "enable.auto.commit": False, "fetch.wait.max.ms": 10})
            reader.assign([hosts.TopicPartition(RESULTS, p, hosts.OFFSET_BEGINNING) for p in range(PARTITIONS)])
            try:
                while not self.stop_reading.is_set():
                    for m in reader.consume(1000, 0.2):
                        if m.error():
                            continue
                        self._result(m)
            except Exception as error:  # noqa: BLE001
                self.errors.append(f"results reader: {error!r}")
            finally:
                reader.close()
        self._thread(body)

    def _result(self, m):
        ts = m.timestamp()[1] / 1000.0
        try:
            value = json.loads(m.value())
            source = value["source"]
            key = (int(source["partition"]), int(source["offset"]))
            message_id, topic = value.get("messageId"), source["topic"]
        except (ValueError, KeyError, TypeError):
            value, key, message_id, topic = None, None, None, None
        with self.lock:
            self.result_count += 1
            self.read_upto[m.partition()] = m.offset() + 1
            if key is None or topic != INPUT:
                self.unexpected.append(("unreadable or not from the input topic", m.partition(), m.offset()))
                return
            self.results.setdefault(key, []).append((m.partition(), m.offset(), ts, message_id))

    # committed-offset sampler -----------------------------------------------------------------------
    def sample(self, interval=0.5):
        def body():
            client = hosts.Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False})
            try:
                while not self.stop_sampling.is_set():
                    self.take_sample(client)
                    self.stop_sampling.wait(interval)
                self.take_sample(client)
            finally:
                client.close()
        self._thread(body)

    def take_sample(self, client):
        """Committed offsets first, then the results topic's end offsets (a commit seen here was made
        after its results were appended, so they lie below these end offsets)."""
        try:
            committed = client.committed([hosts.TopicPartition(INPUT, p) for p in range(PARTITIONS)], timeout=5)
            offsets = [max(0, tp.offset) for tp in sorted(committed, key=lambda tp: tp.partition)]
            taken = time.time()
            ends = [client.get_watermark_offsets(hosts.TopicPartition(RESULTS, p), timeout=5)[1] for p in range(PARTITIONS)]
        except hosts.KafkaException:
            return None
        with self.lock:
            self.samples.append((taken, offsets, ends))
        return offsets

    def committed_now(self):
        with self.lock:
            return list(self.samples[-1][1]) if self.samples else None

    # helpers ----------------------------------------------------------------------------------------
    def _thread(self, body):
        thread = threading.Thread(target=body, daemon=True)
        thread.start()
        self.threads.append(thread)

    def end_offsets(self, client, topic):
        return [client.get_watermark_offsets(hosts.TopicPartition(topic, p), timeout=10) for p in range(PARTITIONS)]

    def answered_all(self):
        with self.lock:
            return all(k in self.results for k in self.inputs)

    def caught_up(self, result_ends):
        with self.lock:
            return all(self.read_upto[p] >= result_ends[p] for p in range(PARTITIONS))

    # the checks -------------------------------------------------------------------------------------
    def evaluate(self, input_ends):
        with self.lock:
            inputs = dict(self.inputs)
            results = {k: list(v) for k, v in self.results.items()}
            samples = list(self.samples)
            unexpected = list(self.unexpected)
        out = {"records": len(inputs), "results": self.result_count, "produce_errors": len(self.produce_errors)}
        # Every input offset 0..end-1 must be one of ours (the producer is the only writer).
        gaps = [(p, o) for p in range(PARTITIONS) for o in range(input_ends[p]) if (p, o) not in inputs]
        out["unknown_inputs"] = gaps[:10]
        lost = sorted(k for k in inputs if k not in results)
        out["lost"] = len(lost)
        out["lost_sample"] = [(p, o, inputs[(p, o)][0]) for p, o in lost[:10]]
        for key, entries in results.items():
            if key not in inputs:
                unexpected.append(("result for an offset never produced", key))
                continue
            for (_, _, _, mid) in entries:
                if mid != inputs[key][0]:
                    unexpected.append(("messageId does not match the record", key, mid, inputs[key][0]))
        out["unexpected"] = unexpected[:10]
        out["unexpected_count"] = len(unexpected)
        out["duplicates"] = sum(len(v) - 1 for k, v in results.items() if k in inputs)
        # Nothing committed before its result was appended. Results-topic end offsets only grow, so an
        # input once seen answered stays answered: check each partition's offsets once, in order.
        ok_upto = [0] * PARTITIONS
        violations = []
        for taken, committed, ends in samples:
            for p in range(PARTITIONS):
                o = ok_upto[p]
                while o < committed[p]:
                    entries = results.get((p, o), [])
                    if any(ro < ends[rp] for rp, ro, _, _ in entries):
                        o += 1
                        continue
                    violations.append({"time": taken, "partition": p, "committed": committed[p], "offset": o,
                                       "id": inputs.get((p, o), ("?",))[0],
                                       "results": [(rp, ro, ends[rp]) for rp, ro, _, _ in entries]})
                    break
                ok_upto[p] = o
        out["early_commits"] = len(violations)
        out["early_sample"] = violations[:5]
        out["samples"] = len(samples)
        # Result latency (first result's timestamp minus the record's produce time).
        latencies = sorted(min(e[2] for e in results[k]) - inputs[k][1] for k in inputs if k in results)
        out["latency_max"] = latencies[-1] if latencies else None
        out["latency_p50"] = latencies[len(latencies) // 2] if latencies else None
        self._first = {k: min(e[2] for e in results[k]) for k in inputs if k in results}
        self._inputs = inputs
        return out

    def caught_up_after(self, t):
        """Seconds after `t` at which every record produced before `t` had its first result."""
        latest = max((self._first.get(k, float("inf")) for k, (_, at) in self._inputs.items() if at <= t), default=t)
        return max(0.0, latest - t)
