import Foundation
import PushWorkerKafka
import PushWorkerTesting
import Testing

/// The dead-letter topic end to end: `dev` with `deadLetter` and a worker that always fails, then
/// `pushworker redrive --dry-run` and `pushworker redrive`, as an operator runs them.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct RedriveTests {
    static func json(_ line: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    /// Runs `redrive --dry-run` until it lists `count` dead letters (they are produced beside the results,
    /// so they may land a moment after the results are printed); returns them.
    static func dryRun(_ arguments: [String], count: Int, timeout: Duration = .seconds(30)) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var listed: [[String: Any]] = []
        repeat {
            let run = try await runPushworker(["redrive", "--dry-run"] + arguments)
            #expect(run.status == 0, "\(run.stderr)")
            listed = run.stdout.compactMap(json)
            #expect(listed.count == run.stdout.count, "every dry-run line is one JSON object: \(run.stdout)")
            if listed.count >= count { return listed }
            try await Task.sleep(for: .milliseconds(200))
        } while ContinuousClock.now < deadline
        return listed
    }

    /// Starts `pushworker dev` with one partition, a dead-letter topic and a `fail` worker that always
    /// returns `failed`/`downstreamDown`; returns it with its bootstrap servers, input and dead-letter topics.
    static func startDevWithFailingWorker() async throws -> (dev: RunningCommand, servers: String, input: String, dlt: String) {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let input = "pushes-\(suffix)", dlt = "dead-\(suffix)"
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: suffix, workers: #""fail": { kind: "noop", result: "failed", reason: "downstreamDown" }"#,
            extra: #"deadLetter: { topic: "\#(dlt)" }, dev: { partitions: 1 },"#))
        let dev = try startPushworker(["dev", "--config", config])
        let servers = String((try await dev.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        return (dev, servers, input, dlt)
    }

    @Test func deadLettersAreListedRedrivenOnceAndRunAsTheNextAttempt() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let input = "pushes-\(suffix)", dlt = "dead-\(suffix)"
        let broken = PushWorkerExecutable.packageRoot.appendingPathComponent("Examples/workers/broken.sh").path
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: suffix, workers: #""broken": { kind: "exec", command: ["\#(broken)"] }"#,
            extra: #"deadLetter: { topic: "\#(dlt)" }, dev: { partitions: 1 },"#))
        let dev = try startPushworker(["dev", "--config", config])
        let first = try await dev.waitForLines(1).first ?? ""
        #expect(first.hasPrefix("bootstrap.servers=127.0.0.1:"))
        let servers = String(first.dropFirst("bootstrap.servers=".count))

        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", input, "--type", "broken",
                                                 "--key", "device-1", "--header", "x-trace=abc", "--count", "3"])
        #expect(produced.status == 0, "\(produced.stderr)")
        let firstRun = try await dev.waitForLines(1 + 3, timeout: .seconds(60)).dropFirst().compactMap(Self.json)
        #expect(firstRun.count == 3)
        for result in firstRun {
            #expect(result["result"] as? String == "failed")
            #expect(result["reason"] as? String == "workerError")
            #expect(result["attempt"] as? Int == 1)
        }

        // --dry-run lists them, sends nothing back and commits nothing.
        let listed = try await Self.dryRun(["--bootstrap-servers", servers, "--topic", dlt], count: 3)
        #expect(listed.count == 3, "\(listed)")
        for (index, letter) in listed.enumerated() {
            let deadLetter = letter["deadLetter"] as? [String: Any]
            #expect(deadLetter?["topic"] as? String == dlt)
            #expect(deadLetter?["partition"] as? Int == 0)
            #expect(deadLetter?["offset"] as? Int == index)
            let source = letter["source"] as? [String: Any]
            #expect(source?["topic"] as? String == input)
            #expect(source?["partition"] as? Int == 0)
            #expect(source?["offset"] as? Int == index)
            #expect(letter["messageId"] as? String == "\(input)-0-\(index)")
            #expect(letter["reason"] as? String == "workerError")
            #expect((letter["detail"] as? String)?.contains("exit status 3") == true, "\(letter)")
            #expect(letter["worker"] as? String == "exec:broken")
            #expect(letter["attempts"] as? Int == 1)
            let failedAt = letter["failedAt"] as? String
            #expect(failedAt?.hasSuffix("Z") == true && failedAt?.count == 24, "\(failedAt ?? "nil")")
            #expect(failedAt == firstRun.first { ($0["source"] as? [String: Any])?["offset"] as? Int == index }?["finishedAt"] as? String)
            #expect(letter["key"] as? String == "device-1")
            let value = try #require((letter["value"] as? String).flatMap(Self.json), "\(letter)")
            #expect(value["type"] as? String == "broken")
        }
        #expect(Set(listed.map { Array(($0.keys)).sorted() }) == [[
            "attempts", "deadLetter", "detail", "droppedBecause", "droppedValueBytes", "failedAt", "headers", "key", "messageId", "reason",
            "source", "value", "worker",
        ]])
        #expect(listed.allSatisfy { $0["droppedBecause"] is NSNull && $0["droppedValueBytes"] is NSNull }, "not stubs")
        // The record's own headers, without pushworker's (shown as fields above).
        #expect(listed.allSatisfy { ($0["headers"] as? [[String]]) == [["x-trace", "abc"]] }, "\(listed.map { $0["headers"] ?? "none" })")

        // The real thing: each goes back to its input topic once, and runs as attempt 2.
        let redriven = try await runPushworker(["redrive", "--bootstrap-servers", servers, "--topic", dlt])
        #expect(redriven.status == 0, "\(redriven.stderr)")
        #expect(redriven.stdout.last == "redriven 3 dead letter(s) from \(dlt): \(input)=3", "\(redriven.stdout)")
        let secondRun = try await dev.waitForLines(1 + 6, timeout: .seconds(60)).dropFirst(4).compactMap(Self.json)
        #expect(secondRun.map { $0["attempt"] as? Int } == [2, 2, 2], "\(secondRun)")
        #expect(Set(secondRun.compactMap { ($0["source"] as? [String: Any])?["offset"] as? Int }) == [3, 4, 5])
        #expect(Set(secondRun.compactMap { $0["reason"] as? String }) == ["workerError"])

        // They failed again: the dead-letter topic has them as attempt 2, and a dry run from the committed
        // position lists only those.
        let again = try await Self.dryRun(["--bootstrap-servers", servers, "--topic", dlt], count: 3)
        #expect(again.count == 3, "\(again)")
        #expect(again.map { $0["attempts"] as? Int } == [2, 2, 2])
        #expect(again.map { ($0["deadLetter"] as? [String: Any])?["offset"] as? Int } == [3, 4, 5])
        #expect(again.map { ($0["source"] as? [String: Any])?["offset"] as? Int } == [3, 4, 5])
        #expect(again.map { $0["key"] as? String } == ["device-1", "device-1", "device-1"])
        #expect(again.map { $0["value"] as? String } == listed.map { $0["value"] as? String }, "the value went round unchanged")

        // --count 1 sends back the first of them only, and commits just that one.
        let one = try await runPushworker(["redrive", "--bootstrap-servers", servers, "--topic", dlt, "--count", "1"])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stdout.last == "redriven 1 dead letter(s) from \(dlt): \(input)=1", "\(one.stdout)")
        let fourth = try await dev.waitForLines(1 + 7, timeout: .seconds(60)).dropFirst(7).compactMap(Self.json)
        #expect(fourth.map { $0["attempt"] as? Int } == [3])
        #expect(fourth.map { ($0["source"] as? [String: Any])?["offset"] as? Int } == [6])
        let left = try await Self.dryRun(["--bootstrap-servers", servers, "--topic", dlt], count: 3)
        #expect(left.map { ($0["deadLetter"] as? [String: Any])?["offset"] as? Int } == [4, 5, 6], "\(left)")
        #expect(left.map { $0["attempts"] as? Int } == [2, 2, 3])

        // The next redrive sends back the dead letters present when it starts, once each, and stops: those
        // that fail again while it runs wait for the next run instead of looping.
        let rest = try await runPushworker(["redrive", "--bootstrap-servers", servers, "--topic", dlt], timeout: .seconds(60))
        #expect(rest.status == 0, "\(rest.stderr)")
        #expect(rest.stdout.last == "redriven 3 dead letter(s) from \(dlt): \(input)=3", "\(rest.stdout)")
        let fifth = try await dev.waitForLines(1 + 10, timeout: .seconds(60)).dropFirst(8).compactMap(Self.json)
        #expect(fifth.map { $0["attempt"] as? Int } == [3, 3, 4], "in dead-letter order: \(fifth)")
        #expect(fifth.map { ($0["source"] as? [String: Any])?["offset"] as? Int } == [7, 8, 9])
        let last = try await Self.dryRun(["--bootstrap-servers", servers, "--topic", dlt], count: 3)
        #expect(last.map { ($0["deadLetter"] as? [String: Any])?["offset"] as? Int } == [7, 8, 9], "\(last)")
        #expect(last.map { $0["attempts"] as? Int } == [3, 3, 4])

        // Every input record, the redriven ones included, kept the producer's key and headers; the redriven
        // ones carry pushworker-attempts and none of the other pushworker-* headers of their dead letter.
        let inputRecords = try await Self.read(input, servers: servers, count: 10)
        #expect(inputRecords.map(\.offset) == Array(0..<10))
        let expectedAttempts: [Int64: [String]] = [3: ["1"], 4: ["1"], 5: ["1"], 6: ["2"], 7: ["2"], 8: ["2"], 9: ["3"]]
        for record in inputRecords {
            let names = record.headers.map(\.name)
            #expect(record.headers.first { $0.name == "x-trace" }?.value == Array("abc".utf8), "offset \(record.offset): \(names)")
            #expect(record.key == Array("device-1".utf8))
            let attempts = record.headers.filter { $0.name == "pushworker-attempts" }.map { String(decoding: $0.value ?? [], as: UTF8.self) }
            #expect(attempts == expectedAttempts[record.offset, default: []], "offset \(record.offset): \(names)")
            #expect(names.filter { $0.hasPrefix("pushworker-") && $0 != "pushworker-attempts" }.isEmpty, "offset \(record.offset): \(names)")
        }

        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0, "\(dev.stderr.suffix(2000))")
    }

    @Test func redriveKeepsTheOrderOfEachKey() async throws {
        let (dev, servers, input, dlt) = try await Self.startDevWithFailingWorker()
        let count = 300
        let lines = (0..<count).map { #"{"aps":{"content-available":1},"type":"fail","n":\#($0)}"# }.joined(separator: "\n")
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", input, "--key", "one-device", "--file", "-"],
                                               stdin: Data(lines.utf8))
        #expect(produced.status == 0, "\(produced.stderr)")
        _ = try await dev.waitForLines(1 + count, timeout: .seconds(60))
        let listed = try await Self.dryRun(["--bootstrap-servers", servers, "--topic", dlt], count: count)
        #expect(listed.count == count)
        let deadLetterOrder = listed.compactMap { $0["value"] as? String }
        #expect(Set(deadLetterOrder).count == count)

        let redriven = try await runPushworker(["redrive", "--bootstrap-servers", servers, "--topic", dlt])
        #expect(redriven.stdout.last == "redriven \(count) dead letter(s) from \(dlt): \(input)=\(count)", "\(redriven.stderr)")
        // One key: the records must reach the input partition, and so run, in the order they failed.
        let records = try await Self.read(input, servers: servers, count: 2 * count)
        let redrivenOrder = records.dropFirst(count).map { String(decoding: $0.value ?? [], as: UTF8.self) }
        #expect(redrivenOrder.count == count)
        let moved = zip(redrivenOrder, deadLetterOrder).filter { $0 != $1 }.count
        #expect(moved == 0, "\(moved) of \(count) redriven records are out of dead-letter order")
        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0, "\(dev.stderr.suffix(2000))")
    }

    /// A stub (what pushworker writes in place of a dead letter too large to produce) has nothing to run
    /// again: redrive skips it, counts it, and goes on with the next dead letter.
    @Test func aStubDeadLetterIsSkippedAndCounted() async throws {
        let (dev, servers, input, dlt) = try await Self.startDevWithFailingWorker()
        let list = ["--bootstrap-servers", servers, "--topic", dlt]
        // Dead-letter offsets: 0 a stub, 1 from pushworker.
        let stub = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", dlt, "--type", "fail",
                                            "--header", "pushworker-dropped-because=MSG_SIZE_TOO_LARGE",
                                            "--header", "pushworker-dropped-value-bytes=999800",
                                            "--header", "pushworker-source-topic=\(input)", "--header", "pushworker-source-offset=41"])
        #expect(stub.status == 0, "\(stub.stderr)")
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", input, "--type", "fail"])
        #expect(produced.status == 0, "\(produced.stderr)")
        let two = try await Self.dryRun(list, count: 2)
        #expect(two.map { $0["droppedBecause"] as? String } == ["MSG_SIZE_TOO_LARGE", nil], "\(two)")
        #expect(two.first?["droppedValueBytes"] as? Int == 999_800)

        let redriven = try await runPushworker(["redrive"] + list)
        #expect(redriven.status == 0, "\(redriven.stderr)")
        #expect(redriven.stdout.last == "redriven 1 dead letter(s) from \(dlt): \(input)=1; skipped 1 stub(s) without a value (their records were too large to keep: look them up by their pushworker-source-topic, -partition and -offset headers)", "\(redriven.stdout)")
        #expect(redriven.stderr.contains("skipping a stub dead letter"), "\(redriven.stderr)")
        #expect(redriven.stderr.contains("sourceOffset=41"), "\(redriven.stderr)")
        // Both were committed: only the redriven record's new dead letter (attempt 2) is left.
        let left = try await Self.dryRun(list, count: 1)
        #expect(left.map { ($0["deadLetter"] as? [String: Any])?["offset"] as? Int } == [2], "\(left)")
        #expect(left.first?["attempts"] as? Int == 2)
        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0, "\(dev.stderr.suffix(2000))")
    }

    @Test func aDeadLetterThatCannotBeSentBackStopsItsPartitionUntilTheNextRun() async throws {
        let (dev, servers, input, dlt) = try await Self.startDevWithFailingWorker()
        func produce(to topic: String) async throws {
            let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", topic, "--type", "fail"])
            #expect(produced.status == 0, "\(produced.stderr)")
        }
        let list = ["--bootstrap-servers", servers, "--topic", dlt]
        // Dead-letter offsets: 0 from pushworker, 1 written by someone else (no source header), 2 from pushworker.
        try await produce(to: input)
        #expect(try await Self.dryRun(list, count: 1).count == 1)
        try await produce(to: dlt)
        try await produce(to: input)
        let three = try await Self.dryRun(list, count: 3)
        #expect(three.map { ($0["source"] as? [String: Any])?["topic"] as? String } == [input, nil, input], "\(three)")

        let stopped = try await runPushworker(["redrive"] + list)
        #expect(stopped.status == 1, "\(stopped.stderr)")
        #expect(stopped.stdout.last == "redriven 1 dead letter(s) from \(dlt): \(input)=1", "\(stopped.stdout)")
        #expect(stopped.stderr.contains("has no pushworker-source-topic header"), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("--to"))
        // Offset 0 was committed; 1 and the one behind it stay (with the dead letter of offset 0's new run
        // after them).
        let left = try await Self.dryRun(list, count: 3)
        #expect(left.map { ($0["deadLetter"] as? [String: Any])?["offset"] as? Int } == [1, 2, 3], "\(left)")
        #expect(left.last?["attempts"] as? Int == 2)

        // --to sends every one of them to the given topic.
        let forced = try await runPushworker(["redrive", "--to", input] + list)
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(forced.stdout.last == "redriven 3 dead letter(s) from \(dlt): \(input)=3", "\(forced.stdout)")
        // No key: their results may come in any order.
        let results = try await dev.waitForLines(1 + 6, timeout: .seconds(60)).dropFirst(4).compactMap(Self.json)
            .sorted { (($0["source"] as? [String: Any])?["offset"] as? Int ?? 0) < (($1["source"] as? [String: Any])?["offset"] as? Int ?? 0) }
        #expect(results.map { ($0["source"] as? [String: Any])?["offset"] as? Int } == [3, 4, 5])
        #expect(results.map { $0["attempt"] as? Int } == [1, 2, 3], "the foreign record runs as a first attempt: \(results)")
        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0, "\(dev.stderr.suffix(2000))")
    }

    /// The first `count` records of a one-partition topic, from the beginning.
    static func read(_ topic: String, servers: String, count: Int) async throws -> [KafkaRecord] {
        try await DedicatedThread.run(name: "e2e-read") { () throws -> [KafkaRecord] in
            let consumer = try KafkaConsumer.reader(configuration: KafkaConfiguration(["bootstrap.servers": servers]))
            try consumer.assign([TopicPartitionOffset(TopicPartition(topic: topic, partition: 0), offset: KafkaConsumer.offsetBeginning)])
            let deadline = ContinuousClock.now.advanced(by: .seconds(15))
            var records: [KafkaRecord] = []
            while records.count < count && ContinuousClock.now < deadline {
                if let record = try consumer.poll(timeoutMs: 50) { records.append(record) }
            }
            try? consumer.close()
            return records
        }
    }

    @Test func usageErrorsExitTwo() async throws {
        let help = try await runPushworker(["redrive", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.first?.hasPrefix("Usage: pushworker redrive") == true)
        // No --topic and no deadLetter.topic in the configuration: nothing to read.
        let noTopic = try await runPushworker(["redrive", "--bootstrap-servers", "127.0.0.1:1"])
        #expect(noTopic.status == 2, "\(noTopic.stderr)")
        #expect(noTopic.stderr.contains("no dead-letter topic"), "\(noTopic.stderr)")
        #expect(noTopic.stderr.contains("--topic"))
        // --to naming the dead-letter topic itself would loop.
        let loop = try await runPushworker(["redrive", "--bootstrap-servers", "127.0.0.1:1", "--topic", "dead", "--to", "dead"])
        #expect(loop.status == 2, "\(loop.stderr)")
        #expect(loop.stderr.contains("--to"), "\(loop.stderr)")
        let badCount = try await runPushworker(["redrive", "--bootstrap-servers", "127.0.0.1:1", "--topic", "dead", "--count", "0"])
        #expect(badCount.status == 2, "\(badCount.stderr)")
        // Topics that are not dead-letter topics, or must not get records back; empty values.
        for (arguments, says) in [
            (["--topic", "push-results"], "results topic"), (["--topic", "pushes"], "input topic"),
            (["--topic", "dead", "--to", "push-results"], "results topic"), (["--topic", "dead", "--to", ""], "--to needs"),
            (["--topic", ""], "--topic needs"), (["--topic", "dead", "--group", ""], "--group needs"),
        ] {
            let run = try await runPushworker(["redrive", "--bootstrap-servers", "127.0.0.1:1"] + arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(says), "\(arguments): \(run.stderr)")
        }
        // No broker: one line saying what to check, exit 1.
        let unreachable = try await runPushworker(["redrive", "--bootstrap-servers", "127.0.0.1:1", "--topic", "dead", "--timeout", "1"])
        #expect(unreachable.status == 1, "\(unreachable.stderr)")
        #expect(unreachable.stderr.hasPrefix("pushworker redrive: no broker at 127.0.0.1:1 — is `pushworker dev` running?"), "\(unreachable.stderr)")
        #expect(unreachable.stderr.split(separator: "\n").count == 1, "\(unreachable.stderr)")
    }
}
