#!/usr/bin/python3
"""py_worker: pushworker's job written in Python with confluent-kafka.

The job, per input record (the consumer reads INPUT_TOPIC in consumer group GROUP):
- parse the value as JSON; aps.content-available must be the integer 1 (not 1.0, true or "1");
- read "type" and call its handler (a no-op that answers newData);
- produce a result to RESULTS_TOPIC, keyed by the input key: {"messageId", "type", "result", "reason",
  "source": {topic, partition, offset}, "durationMs"}, with pushworker's outcomes: newData; noData with
  reason notSilent; failed with invalidPayload or unknownType;
- store the input offset for commit (Consumer.store_offsets) only once the result's delivery report says
  the broker has it, and only up to the first record whose result is not yet delivered (results go to
  several partitions, so their reports arrive out of input order).
enable.auto.offset.store=false; auto commit at librdkafka's default interval; the producer is idempotent
(as pushworker's). One thread, Consumer.poll() one record at a time.

Once RECORDS results are delivered it commits the stored offsets synchronously, closes, and prints one line:
  BENCH-RESULT {"worker": "py", "records": N, "seconds": S, "firstTakenMs": T0, "lastDeliveredMs": T1}
seconds = from the first record taken (poll() returned it) to the last delivery report, on the monotonic
clock; the two *Ms fields are the same instants on the wall clock (UNIX milliseconds).
Exit status 0 on success, 1 on a Kafka error, 2 on bad arguments.

Debian: apt-get install python3-confluent-kafka (1.7.0, on the system's librdkafka).
"""
import argparse
import collections
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def content_update(push):
    """A no-op handler, as pushworker's noop worker with result newData."""
    return "newData"


HANDLERS = {"content-update": content_update}


def result_for(record):
    """The result (bytes) of one input record."""
    result, reason, type_, duration_ms = "failed", "invalidPayload", None, 0.0
    try:
        push = json.loads(record.value())
    except (TypeError, ValueError):  # no value, not UTF-8, not JSON
        push = None
    if isinstance(push, dict):
        type_ = push.get("type")
        if not isinstance(type_, str):
            type_ = None
        aps = push.get("aps")
        available = aps.get("content-available") if isinstance(aps, dict) else None
        handler = HANDLERS.get(type_)
        if not isinstance(aps, dict):
            pass  # failed, invalidPayload
        elif type(available) is not int or available != 1:  # bool is an int subclass: exclude True
            result, reason = "noData", "notSilent"
        elif handler is None:
            reason = "unknownType"
        else:
            started = time.monotonic()
            result = handler(push)
            duration_ms = round((time.monotonic() - started) * 1e3, 3)
            reason = None
    topic, partition, offset = record.topic(), record.partition(), record.offset()
    return json.dumps({
        "messageId": f"{topic}-{partition}-{offset}",
        "type": type_,
        "result": result,
        "reason": reason,
        "source": {"topic": topic, "partition": partition, "offset": offset},
        "durationMs": duration_ms,
    }, separators=(",", ":")).encode()


class Taken:
    """One input record whose result is produced; `delivered` once the broker has the result."""
    __slots__ = ("offset", "delivered", "worker", "partition")

    def __init__(self, worker, partition, offset):
        self.worker, self.partition, self.offset, self.delivered = worker, partition, offset, False

    def on_delivery(self, err, _result):
        self.worker.delivery(self, err)


class Worker:
    def __init__(self, args):
        self.args = args
        self.pending = collections.defaultdict(collections.deque)  # input partition -> Taken, in offset order
        self.dirty = set()  # partitions with a report since the last store
        self.delivered = 0
        self.failed = None
        self.last_delivery = (0.0, 0.0)
        extra = dict(self.properties(args.property))
        self.producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True, **extra})
        self.consumer = Consumer({
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.offset.store": False,
            **extra,
        })

    @staticmethod
    def properties(items):
        for item in items:
            name, eq, value = item.partition("=")
            if not eq:
                sys.exit(f"py_worker: -X {item}: expected NAME=VALUE")
            yield name, value

    def delivery(self, taken, err):
        if err is not None:
            print(f"py_worker: result not delivered: {err}", file=sys.stderr)
            self.failed = err
            return
        taken.delivered = True
        self.dirty.add(taken.partition)
        self.delivered += 1
        self.last_delivery = (time.monotonic(), time.time() * 1e3)

    def store_delivered(self):
        """Stores, per partition, the offset after the last record of the delivered prefix."""
        if self.failed is not None or not self.dirty:
            return
        offsets = []
        for partition in self.dirty:
            queue, last = self.pending[partition], None
            while queue and queue[0].delivered:
                last = queue.popleft().offset
            if last is not None:
                offsets.append(TopicPartition(self.args.topic, partition, last + 1))
        self.dirty.clear()
        if offsets:
            try:
                self.consumer.store_offsets(offsets=offsets)
            except KafkaException as error:  # e.g. a partition revoked meanwhile
                print(f"py_worker: store_offsets: {error}", file=sys.stderr)

    def commit(self, when):
        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException as error:
            if error.args[0].code() != KafkaError._NO_OFFSET:  # nothing stored since the last commit
                print(f"py_worker: commit {when}: {error}", file=sys.stderr)
                return False
        return True

    def on_revoke(self, _consumer, partitions):
        """Before partitions go: deliver what is in flight, store and commit it, forget the rest (the
        next owner starts at the commit). confluent-kafka unassigns them after this returns."""
        self.producer.flush(30)
        self.store_delivered()
        if self.failed is None:
            self.commit("at revocation")
        for tp in partitions:
            self.pending.pop(tp.partition, None)

    def run(self):
        args = self.args
        # Learn the results topic's partitions before the first result: a producer that first hears of a
        # topic from produce() asks for its metadata only at its next topic scan (librdkafka does that once
        # a second), and holds the results until then.
        self.producer.list_topics(args.results, timeout=10)
        self.consumer.subscribe([args.topic], on_revoke=self.on_revoke)
        taken, first = 0, None
        while self.delivered < args.records and self.failed is None:
            if taken < args.records:
                record = self.consumer.poll(0.1)
                if record is not None and record.error():
                    print(f"py_worker: consume: {record.error()}", file=sys.stderr)
                elif record is not None:
                    if first is None:
                        first = (time.monotonic(), time.time() * 1e3)
                    taken += 1
                    entry = Taken(self, record.partition(), record.offset())
                    self.pending[entry.partition].append(entry)
                    value = result_for(record)
                    while True:
                        try:
                            self.producer.produce(args.results, value=value, key=record.key(),
                                                  on_delivery=entry.on_delivery)
                            break
                        except BufferError:  # the producer's queue is full: serve reports
                            self.producer.poll(0.01)
                self.producer.poll(0)
            else:
                self.producer.poll(0.1)  # the last reports
            self.store_delivered()
        if self.failed is not None or not self.commit("at the end"):
            return 1
        self.consumer.close()
        self.producer.flush(30)
        print("BENCH-RESULT " + json.dumps({
            "worker": "py", "records": self.delivered,
            "seconds": round(self.last_delivery[0] - first[0], 6),
            "firstTakenMs": round(first[1], 3), "lastDeliveredMs": round(self.last_delivery[1], 3),
        }), flush=True)
        return 0


def main():
    parser = argparse.ArgumentParser(description="pushworker's job in Python with confluent-kafka")
    parser.add_argument("-b", "--bootstrap", required=True, help="bootstrap.servers")
    parser.add_argument("-g", "--group", required=True, help="consumer group")
    parser.add_argument("-t", "--topic", required=True, help="input topic")
    parser.add_argument("-r", "--results", required=True, help="results topic")
    parser.add_argument("-n", "--records", type=int, required=True, help="stop after this many results")
    parser.add_argument("-X", dest="property", action="append", default=[], metavar="PROPERTY=VALUE",
                        help="an extra librdkafka property for both clients")
    args = parser.parse_args()
    if args.records < 1:
        parser.error("--records must be at least 1")
    return Worker(args).run()


if __name__ == "__main__":
    sys.exit(main())
