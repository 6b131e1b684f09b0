import Foundation
import Testing
@testable import PushWorkerCore

/// The built-in `exec` worker (contract section 6).
@Suite(.serialized) struct ExecWorkerTests {
    /// The budget of the tests that signal a shell script at its deadline: 1 s, long enough for the shell to
    /// have run its first lines (written its pids) on a busy machine, far shorter than the 3–5 s the scripts
    /// run. 200–250 ms was not: the CI runs of 06c50bf and earlier reached the deadline before the pid file.
    static let scriptBudget: Duration = .seconds(1)

    func run(_ worker: ExecWorker, job: Job = makeJob(), budget: Duration = .seconds(10)) async -> ExecutionReport {
        await BudgetedExecutor().run(job, on: RegisteredWorker(name: "exec", worker: worker, budget: budget))
    }

    /// Runs a `/bin/sh` script body as an exec worker.
    func runScript(_ body: String, job: Job = makeJob(), budget: Duration = .seconds(10)) async throws -> (ExecutionReport, TemporaryDirectory) {
        let dir = try TemporaryDirectory()
        let script = try dir.script("worker.sh", body)
        return (await run(ExecWorker(arguments: [script, dir.path]), job: job, budget: budget), dir)
    }

    func processExists(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    func readPid(_ dir: TemporaryDirectory, _ name: String) -> pid_t? {
        dir.read(name).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Sends SIGKILL to `pid` if it is still one of the processes this test started (cleanup after a failure).
    func killIfRunning(_ pid: pid_t, commandContains text: String) {
        // Not FileManager.contents(atPath:): it leaks its 4 KiB buffer when the file reads as empty, as a
        // zombie's cmdline does (FoundationEssentials; found by LeakSanitizer).
        guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/cmdline") else { return }
        defer { try? handle.close() }
        guard let data = try? handle.readToEnd() else { return }
        let command = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        if command.contains(text) { kill(pid, SIGKILL) }
    }

    /// Whether `pid` has exited but has not been reaped (state `Z` in /proc/PID/stat).
    func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    @Test("outcome from the first stdout line or the exit status", .timeLimit(.minutes(1)), arguments: [
        ("echo newData", WorkerOutcome.newData),
        ("echo noData; exit 0", WorkerOutcome.noData),
        ("echo 'noData someReason'", WorkerOutcome(.noData, reason: "someReason")),
        ("echo 'failed why'", WorkerOutcome(.failed, reason: "why")),
        ("echo failed", WorkerOutcome(.failed)),
        ("printf 'newData'", WorkerOutcome.newData),
        ("echo 'noData unchanged'; echo 'failed second line is ignored'; exit 7", WorkerOutcome(.noData, reason: "unchanged")),
        ("echo newData; exit 4", WorkerOutcome.newData),
        ("exit 0", WorkerOutcome.newData),
        ("echo 'fetched 3 items'; exit 0", WorkerOutcome.newData),
        ("echo 'fetched 3 items'", WorkerOutcome.newData),
        ("exit 3", WorkerOutcome.failed(.workerError, detail: "exit status 3")),
        ("echo 'something odd'; exit 1", WorkerOutcome.failed(.workerError, detail: "exit status 1")),
        ("echo; echo newData; exit 2", WorkerOutcome.failed(.workerError, detail: "exit status 2")),
        // Retryable: EX_TEMPFAIL, or a first line `retry [reason]`.
        ("exit 75", WorkerOutcome.failed(.workerError, detail: "exit status 75 (EX_TEMPFAIL: a temporary failure)", retryable: true)),
        ("echo 'retry backendDown'; exit 1", WorkerOutcome.failed("backendDown", detail: "the program asked for a retry", retryable: true)),
        ("echo retry", WorkerOutcome.failed(.workerError, detail: "the program asked for a retry", retryable: true)),
    ])
    func outcome(_ body: String, _ expected: WorkerOutcome) async throws {
        let (report, dir) = try await runScript(body)
        defer { dir.remove() }
        #expect(report.outcome == expected)
        #expect(!report.timedOut)
    }

    @Test(.timeLimit(.minutes(1)))
    func exitStatusReasonSpelling() async throws {
        let (report, dir) = try await runScript("exit 3")
        defer { dir.remove() }
        #expect(report.outcome.result.rawValue == "failed")
        #expect(report.outcome.reason?.rawValue == "workerError")
        #expect(report.outcome.detail == "exit status 3")
    }

    @Test(.timeLimit(.minutes(1)))
    func valueOnStdinAndEnvironment() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let script = try dir.script("worker.sh", """
            cat > "$1/stdin"
            printf '%s\\n' "$PUSHWORKER_MESSAGE_ID" "$PUSHWORKER_TYPE" "$PUSHWORKER_DEADLINE_MS" "$TRACEPARENT" "$EXTRA_SETTING" "$PUSHWORKER_ATTEMPT" > "$1/env"
            echo newData
            """)
        let value = Payload.silent(extra: #","contentId":"article-123","text":"Grüße \"quoted\" 🚀""#)
        var job = makeJob(type: "content-update", value: value, messageId: "apns-42", traceparent: "00-abc-def-01")
        job.attempt = 2
        let budget = Duration.seconds(7)
        let report = await run(ExecWorker(arguments: [script, dir.path], environment: ["EXTRA_SETTING": "on"]), job: job, budget: budget)
        #expect(report.outcome == .newData)
        #expect(FileManager.default.contents(atPath: dir.file("stdin")).map(Array.init) == value)
        let env = try #require(dir.read("env")).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(env.count >= 6)
        #expect(env[0] == "apns-42")
        #expect(env[1] == "content-update")
        // The deadline is the run's start plus the budget, in UNIX milliseconds.
        let deadlineMs = try #require(Int64(env[2]))
        #expect(abs(deadlineMs - (report.startedAtMs + 7000)) <= 250, "PUSHWORKER_DEADLINE_MS \(deadlineMs), started \(report.startedAtMs)")
        #expect(env[3] == "00-abc-def-01")
        #expect(env[4] == "on")
        #expect(env[5] == "2", "PUSHWORKER_ATTEMPT")
    }

    /// Runs a job through a script that records that it ran; returns the report and whether it ran.
    func runRecordingScript(_ job: Job) async throws -> (ExecutionReport, Bool) {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let script = try dir.script("worker.sh", """
            touch "$1/ran"
            echo newData
            """)
        let report = await run(ExecWorker(arguments: [script, dir.path]), job: job)
        return (report, FileManager.default.fileExists(atPath: dir.file("ran")))
    }

    @Test("a value its environment cannot carry whole is refused, naming the field and the variable", .timeLimit(.minutes(1)), arguments: [
        ("apns-id", "PUSHWORKER_MESSAGE_ID"), ("type", "PUSHWORKER_TYPE"), ("traceparent", "TRACEPARENT"), ("traceparent not UTF-8", "TRACEPARENT"),
    ])
    func nulValuesAreRefused(_ field: String, _ variable: String) async throws {
        var job = makeJob()
        switch field {
        case "apns-id": job.messageId = "ok\u{0}evil"
        case "type": job.type = "ok\u{0}evil"
        case "traceparent": job.traceparentHeader = Array("00-abc".utf8) + [0] + Array("-01".utf8)
        default: job.traceparentHeader = [0xFF, 0xFE, 0xFD]
        }
        let (report, ran) = try await runRecordingScript(job)
        #expect(!ran, "the program never runs")
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason == .invalidPayload)
        let detail = try #require(report.outcome.detail)
        #expect(detail.contains(String(field.prefix { $0 != " " })) && detail.contains(variable), "\(detail)")
    }

    @Test(.timeLimit(.minutes(1)))
    func valuesWithoutANulReachTheProgramWhole() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let script = try dir.script("worker.sh", """
            printf '%s' "$PUSHWORKER_MESSAGE_ID" > "$1/id"
            printf '%s' "$PUSHWORKER_TYPE" > "$1/type"
            echo newData
            """)
        let job = makeJob(type: "ok\n\u{1}evil é", messageId: "id\r\nwith lines")
        let report = await run(ExecWorker(arguments: [script, dir.path]), job: job)
        #expect(report.outcome == .newData)
        #expect(dir.read("id") == "id\r\nwith lines")
        #expect(dir.read("type") == "ok\n\u{1}evil é")
    }

    @Test func programsDoNotInheritPushworkerVariablesOrWithheldSecrets() {
        let worker = ExecWorker(arguments: ["/bin/true"], environment: ["API_BASE": "https://api.example.com"], withheldVariables: ["HOOK_TOKEN"])
        let env = worker.programEnvironment(for: makeJob(messageId: "apns-9"), inherited: [
            "PATH": "/usr/bin:/bin", "PUSHWORKER_KAFKA_SASL_PASSWORD": "s3cret", "PUSHWORKER_BOOTSTRAP_SERVERS": "b:9092",
            "HOOK_TOKEN": "Bearer t0ken", "TRACEPARENT": "00-service-own-01",
        ])
        #expect(env["PATH"] == "/usr/bin:/bin")
        #expect(env["PUSHWORKER_KAFKA_SASL_PASSWORD"] == nil && env["PUSHWORKER_BOOTSTRAP_SERVERS"] == nil)
        #expect(env["HOOK_TOKEN"] == nil)
        #expect(env["TRACEPARENT"] == nil, "the service's own trace context never leaks into a job")
        #expect(env["API_BASE"] == "https://api.example.com")
        #expect(env["PUSHWORKER_MESSAGE_ID"] == "apns-9")
    }

    @Test(.timeLimit(.minutes(1)))
    func typeIsEmptyWhenTheJobHasNone() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let script = try dir.script("worker.sh", #"printf '[%s]' "${PUSHWORKER_TYPE-unset}" > "$1/type""#)
        let report = await run(ExecWorker(arguments: [script, dir.path]), job: makeJob(type: nil))
        #expect(report.outcome == .newData)
        #expect(dir.read("type") == "[]")
    }

    @Test(.timeLimit(.minutes(1)))
    func argumentsArePassedAsIsWithoutAShell() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let script = try dir.script("worker.sh", #"out="$1"; shift; printf '%s\n' "$#" "$@" > "$out/args""#)
        let report = await run(ExecWorker(arguments: [script, dir.path, "two words", "$HOME", "*", "; rm -rf /"]))
        #expect(report.outcome == .newData)
        #expect(dir.read("args") == "4\ntwo words\n$HOME\n*\n; rm -rf /\n")
    }

    @Test(.timeLimit(.minutes(1)))
    func programIsLookedUpInPath() async {
        let report = await run(ExecWorker(arguments: ["sh", "-c", "echo 'noData viaPath'"]))
        #expect(report.outcome == WorkerOutcome(.noData, reason: "viaPath"))
        #expect(ExecWorker.resolve("sh", path: "/nonexistent:/bin:/usr/bin") != nil)
        #expect(ExecWorker.resolve("sh", path: "/nonexistent") == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func workingDirectory() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let report = await run(ExecWorker(arguments: ["/bin/sh", "-c", "pwd > cwd"], workingDirectory: dir.path))
        #expect(report.outcome == .newData)
        let cwd = try #require(dir.read("cwd")).trimmingCharacters(in: .newlines)
        #expect(URL(fileURLWithPath: cwd).resolvingSymlinksInPath().path == URL(fileURLWithPath: dir.path).resolvingSymlinksInPath().path)
    }

    @Test(.timeLimit(.minutes(1)))
    func missingProgramFailsWithWorkerError() async {
        let report = await run(ExecWorker(arguments: ["/nonexistent/pushworker-test-program"]))
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason?.rawValue == "workerError")
        #expect(report.outcome.detail?.contains("/nonexistent/pushworker-test-program") == true)
        #expect(!report.timedOut)

        let notInPath = await run(ExecWorker(arguments: ["pushworker-no-such-program-\(UUID().uuidString)"]))
        #expect(notInPath.outcome.result == .failed)
        #expect(notInPath.outcome.reason?.rawValue == "workerError")

        let empty = await run(ExecWorker(arguments: []))
        #expect(empty.outcome.reason?.rawValue == "workerError")
    }

    @Test(.timeLimit(.minutes(1)))
    func nonExecutableFileFailsWithWorkerError() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.file("not-executable.sh")
        try Data("#!/bin/sh\necho newData\n".utf8).write(to: URL(fileURLWithPath: file))
        let report = await run(ExecWorker(arguments: [file]))
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason?.rawValue == "workerError")
    }

    @Test(.timeLimit(.minutes(1)))
    func programKilledBySignal() async throws {
        let (report, dir) = try await runScript("kill -9 $$")
        defer { dir.remove() }
        #expect(report.outcome == .failed(.workerError, detail: "killed by signal 9"))
    }

    @Test(.timeLimit(.minutes(1)))
    func programIgnoringSIGTERMIsKilledAfterTheGrace() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Ignores SIGTERM; short sleeps so no long-lived child outlives the shell.
        let script = try dir.script("stubborn.sh", """
            trap '' TERM
            echo $$ > "$1/pid"
            i=0; while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
            """)
        // A 1 s grace: wide enough that a loaded machine still sees the process alive during it. The program
        // ignores SIGTERM from its start (`env --ignore-signal`, inherited across exec), not only once the
        // shell has run its `trap`: on a loaded machine the deadline's SIGTERM came before the shell got
        // there, it died at once and never wrote its pid (a CI failure). ``scriptBudget`` gives it time to.
        let worker = ExecWorker(arguments: ["/usr/bin/env", "--ignore-signal=TERM", script, dir.path], terminationGrace: .seconds(1))
        let executor = BudgetedExecutor()
        let start = ContinuousClock.now
        let report = await executor.run(makeJob(), on: RegisteredWorker(name: "exec", worker: worker, budget: Self.scriptBudget))
        let elapsed = elapsedMs(since: start)
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason?.rawValue == "timeout")
        #expect(report.timedOut)
        #expect(elapsed >= 995)
        #expect(elapsed < 1600, "timeout reported after \(elapsed) ms, not near the 1 s deadline")
        let pid = try #require(readPid(dir, "pid"))
        defer { killIfRunning(pid, commandContains: dir.path) } // cleanup, should the test fail
        // SIGTERM was sent and ignored: the process is still there during the grace…
        #expect(processExists(pid), "the program died before SIGKILL; did it really ignore SIGTERM?")
        // …and SIGKILL ends it shortly after.
        #expect(await eventually(timeout: .seconds(3)) { !processExists(pid) }, "process \(pid) still exists")
        let goneAfter = elapsedMs(since: start)
        #expect(goneAfter < 3700)
    }

    @Test(.timeLimit(.minutes(1)))
    func programGetsSIGTERMAtTheDeadline() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let script = try dir.script("polite.sh", """
            trap 'echo TERM > "$1/signal"; exit 0' TERM
            echo $$ > "$1/pid"
            i=0; while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
            """)
        let worker = ExecWorker(arguments: [script, dir.path], terminationGrace: .seconds(10))
        let executor = BudgetedExecutor()
        let report = await executor.run(makeJob(), on: RegisteredWorker(name: "exec", worker: worker, budget: Self.scriptBudget))
        #expect(report.outcome.reason?.rawValue == "timeout")
        // The program saw SIGTERM (long before the 10 s grace would have sent SIGKILL).
        #expect(await eventually(timeout: .seconds(2)) { dir.read("signal") == "TERM\n" })
        let pid = try #require(readPid(dir, "pid"))
        defer { killIfRunning(pid, commandContains: dir.path) } // cleanup, should the test fail
        #expect(await eventually(timeout: .seconds(2)) { !processExists(pid) })
    }

    @Test(.timeLimit(.minutes(1)))
    func programWithoutSignalHandlingEndsAtSIGTERM() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // `sleep` installs no handler and keeps the signal mask it was started with.
        let script = try dir.script("sleeper.sh", """
            echo $$ > "$1/pid"
            exec sleep 5
            """)
        let worker = ExecWorker(arguments: [script, dir.path], terminationGrace: .seconds(20))
        let start = ContinuousClock.now
        let report = await BudgetedExecutor().run(makeJob(), on: RegisteredWorker(name: "exec", worker: worker, budget: Self.scriptBudget))
        #expect(report.outcome.reason?.rawValue == "timeout")
        let pid = try #require(readPid(dir, "pid"))
        defer { killIfRunning(pid, commandContains: "sleep") } // cleanup
        // Ended by SIGTERM, long before the 20 s grace runs out and long before its 5 s sleep ends.
        #expect(await eventually(timeout: .seconds(1)) { !processExists(pid) }, "the program did not end at SIGTERM")
        #expect(elapsedMs(since: start) < 3000)
    }

    @Test(.timeLimit(.minutes(1)))
    func childrenOfTheProgramAreKilledToo() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // The program starts a child that also ignores SIGTERM, then waits for it.
        let script = try dir.script("parent.sh", """
            trap '' TERM
            echo $$ > "$1/pid"
            sleep 3 > /dev/null 2>&1 &
            echo $! > "$1/child"
            wait
            """)
        let worker = ExecWorker(arguments: [script, dir.path], terminationGrace: .milliseconds(100))
        let report = await BudgetedExecutor().run(makeJob(), on: RegisteredWorker(name: "exec", worker: worker, budget: Self.scriptBudget))
        #expect(report.outcome.reason?.rawValue == "timeout")
        let pid = try #require(readPid(dir, "pid"))
        let child = try #require(readPid(dir, "child"))
        defer { killIfRunning(child, commandContains: "sleep"); killIfRunning(pid, commandContains: dir.path) } // cleanup
        // The program and the child it started are both gone (the child holds no pipe of ours, so only the
        // signal can have ended it before its 2 s sleep).
        // (An orphan is reaped by PID 1, possibly late: a zombie counts as ended.)
        #expect(await eventually(timeout: .seconds(1)) { !processExists(child) || isZombie(child) }, "child \(child) outlived its parent's deadline")
        #expect(await eventually(timeout: .seconds(1)) { !processExists(pid) }, "program \(pid) still exists (zombie: \(isZombie(pid)))")
    }

    @Test(.timeLimit(.minutes(1)))
    func childrenOfTheProgramGetSIGTERMToo() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // The child notes SIGTERM and exits; the program ignores SIGTERM and waits for the child.
        let script = try dir.script("parent.sh", """
            ( trap 'echo TERM > "$1/childsignal"; exit 0' TERM; i=0; while [ $i -lt 60 ]; do sleep 0.05; i=$((i+1)); done ) &
            echo $! > "$1/child"
            trap '' TERM
            echo $$ > "$1/pid"
            wait
            """)
        // A long grace: within this test only SIGTERM can end the child early.
        let worker = ExecWorker(arguments: [script, dir.path], terminationGrace: .seconds(20))
        let report = await BudgetedExecutor().run(makeJob(), on: RegisteredWorker(name: "exec", worker: worker, budget: Self.scriptBudget))
        #expect(report.outcome.reason?.rawValue == "timeout")
        let pid = try #require(readPid(dir, "pid"))
        let child = try #require(readPid(dir, "child"))
        defer { killIfRunning(child, commandContains: dir.path); killIfRunning(pid, commandContains: dir.path) } // cleanup
        #expect(await eventually(timeout: .seconds(1)) { dir.read("childsignal") == "TERM\n" }, "the program's child did not get SIGTERM")
        // Once its child is gone, the program's `wait` returns and it exits by itself.
        #expect(await eventually(timeout: .seconds(1)) { !processExists(pid) })
    }

    #if os(Linux)
    /// The `SigBlk` and `SigIgn` masks (hex) of an exec'd program, as it starts.
    func signalMasks(of dir: TemporaryDirectory, run index: Int) async -> (blocked: UInt64, ignored: UInt64)? {
        let file = dir.file("status-\(index)")
        let worker = ExecWorker(arguments: ["/bin/sh", "-c", "exec grep -E '^Sig(Blk|Ign):' /proc/self/status > '\(file)'"])
        _ = await BudgetedExecutor().run(makeJob(), on: RegisteredWorker(name: "exec", worker: worker, budget: .seconds(10)))
        guard let text = dir.read("status-\(index)") else { return nil }
        var masks: [String: UInt64] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { masks[parts[0]] = UInt64(parts[1], radix: 16) }
        }
        guard let blocked = masks["SigBlk"], let ignored = masks["SigIgn"] else { return nil }
        return (blocked, ignored)
    }

    @Test(.timeLimit(.minutes(1)))
    func programStartsWithAnEmptySignalMask() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Several runs from different tasks (and so, likely, different threads of the pool).
        let masks = await withTaskGroup(of: (blocked: UInt64, ignored: UInt64)?.self) { group in
            for index in 0..<10 { group.addTask { await signalMasks(of: dir, run: index) } }
            var all: [(blocked: UInt64, ignored: UInt64)?] = []
            for await mask in group { all.append(mask) }
            return all
        }
        #expect(masks.allSatisfy { $0 != nil })
        let sigterm = UInt64(1) << (SIGTERM - 1)
        // A program that inherited a blocked SIGTERM (the pool threads' mask) would never see the deadline's SIGTERM.
        #expect(masks.compactMap { $0 }.allSatisfy { $0.blocked & sigterm == 0 }, "SigBlk: \(masks.compactMap { $0.map { String($0.blocked, radix: 16) } })")
    }

    @Test(.timeLimit(.minutes(1)))
    func programStartsWithDefaultSIGPIPE() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let mask = try #require(await signalMasks(of: dir, run: 0))
        let sigpipe = UInt64(1) << (SIGPIPE - 1)
        #expect(mask.ignored & sigpipe == 0, "SigIgn: \(String(mask.ignored, radix: 16))")
    }
    #endif

    @Test(.timeLimit(.minutes(1)))
    func largeOutputDoesNotBlockTheProgram() async throws {
        // 200 KB of output (more than a pipe buffer and more than the 64 KiB kept): the program still finishes.
        let (report, dir) = try await runScript("echo 'noData big'; head -c 200000 /dev/zero; exit 0")
        defer { dir.remove() }
        #expect(report.outcome == WorkerOutcome(.noData, reason: "big"))
    }

    @Test(.timeLimit(.minutes(1)))
    func programThatDoesNotReadStdin() async throws {
        // It closes stdin at once: writing the value then fails (EPIPE), which must not take pushworker down.
        let (report, dir) = try await runScript("exec 0<&-; echo 'noData ignoredInput'", job: makeJob(value: Payload.silent(ofSize: 4096)))
        defer { dir.remove() }
        #expect(report.outcome == WorkerOutcome(.noData, reason: "ignoredInput"))
    }

    // ExecWorker.outcome(status:signaled:stdout:) directly.

    @Test("outcome(status:signaled:stdout:)", arguments: [
        (Int32(0), false, "newData\n", WorkerOutcome.newData),
        (1, false, "newData\n", WorkerOutcome.newData),
        (0, false, "noData\n", WorkerOutcome.noData),
        (0, false, "noData someReason\n", WorkerOutcome(.noData, reason: "someReason")),
        (0, false, "noData  padded reason  \n", WorkerOutcome(.noData, reason: "padded reason")),
        (0, false, "failed why\n", WorkerOutcome(.failed, reason: "why")),
        (0, false, "failed why\r\nmore\n", WorkerOutcome(.failed, reason: "why")),
        (0, false, "newData\r\n", WorkerOutcome.newData),
        (0, false, "newData ", WorkerOutcome.newData),
        (0, false, "failed", WorkerOutcome(.failed)),
        (0, false, "", WorkerOutcome.newData),
        (0, false, "hello\nnewData\n", WorkerOutcome.newData),
        (3, false, "", WorkerOutcome.failed(.workerError, detail: "exit status 3")),
        (3, false, "hello\nnewData\n", WorkerOutcome.failed(.workerError, detail: "exit status 3")),
        (3, false, "newdata\n", WorkerOutcome.failed(.workerError, detail: "exit status 3")),
        (3, false, "newDataX\n", WorkerOutcome.failed(.workerError, detail: "exit status 3")),
        (3, false, " newData\n", WorkerOutcome.failed(.workerError, detail: "exit status 3")),
        (255, false, "", WorkerOutcome.failed(.workerError, detail: "exit status 255")),
        (75, false, "", WorkerOutcome.failed(.workerError, detail: "exit status 75 (EX_TEMPFAIL: a temporary failure)", retryable: true)),
        (75, true, "", WorkerOutcome.failed(.workerError, detail: "killed by signal 75")),
        (0, false, "retry later\n", WorkerOutcome.failed("later", detail: "the program asked for a retry", retryable: true)),
        (0, false, "retrying\n", WorkerOutcome.newData),
        (9, true, "", WorkerOutcome.failed(.workerError, detail: "killed by signal 9")),
        (15, true, "noData late\n", WorkerOutcome(.noData, reason: "late")),
        // A reason starting with a combining mark (found by Fuzz/FuzzExecOutcome): the space before it is
        // still the separator, so the result word is read.
        (3, false, "failed \u{347}x\n", WorkerOutcome(.failed, reason: "\u{347}x")),
        (0, false, "newData\u{301}\n", WorkerOutcome.newData),
        (3, false, "newData\u{301}\n", WorkerOutcome.failed(.workerError, detail: "exit status 3")),
    ])
    func outcomeMapping(_ status: Int32, _ signaled: Bool, _ stdout: String, _ expected: WorkerOutcome) {
        #expect(ExecWorker.outcome(status: status, signaled: signaled, stdout: Data(stdout.utf8)) == expected)
    }

    @Test func outcomeReasonsSpelledAsTheContract() {
        let outcome = ExecWorker.outcome(status: 3, signaled: false, stdout: Data())
        #expect(outcome.result.rawValue == "failed")
        #expect(outcome.reason?.rawValue == "workerError")
        #expect(outcome.detail == "exit status 3")
    }

    @Test(.timeLimit(.minutes(1)))
    func aCrashReportsTheLastStderrLinesInItsDetail() async throws {
        // A Python-style traceback: the detail keeps the status and the last three lines, not the payload.
        let (report, dir) = try await runScript("""
        cat >/dev/null
        echo 'Traceback (most recent call last):' >&2
        echo '  File "worker.py", line 3, in <module>' >&2
        echo '    refresh(job)' >&2
        echo 'ValueError: bad contentId' >&2
        exit 1
        """)
        defer { dir.remove() }
        #expect(report.outcome.reason == .workerError)
        #expect(report.outcome.detail == "exit status 1; stderr:   File \"worker.py\", line 3, in <module>\n    refresh(job)\nValueError: bad contentId")
    }

    @Test(.timeLimit(.minutes(1)))
    func theStderrInTheDetailIsBoundedAndTheSuccessfulRunKeepsItsDetail() async throws {
        // 600 bytes of 'é' (two bytes each) on one line, after 70 KiB that pushworker does not log.
        let (crash, dir) = try await runScript("""
        cat >/dev/null
        head -c 71680 /dev/zero | tr '\\0' 'x' >&2; echo >&2
        i=0; while [ $i -lt 300 ]; do printf '\\303\\251' >&2; i=$((i+1)); done; echo >&2
        kill -9 $$
        """)
        defer { dir.remove() }
        let detail = try #require(crash.outcome.detail)
        #expect(detail.hasPrefix("killed by signal 9; stderr: …é"), "\(detail.prefix(80))")
        let stderr = detail.dropFirst("killed by signal 9; stderr: ".count)
        #expect(stderr.utf8.count <= StderrTail.detailBytes)
        #expect(stderr.dropFirst().allSatisfy { $0 == "é" })
        // A program that succeeds, or says why it failed on stdout, keeps its own detail.
        let (ok, okDir) = try await runScript("echo 'progress' >&2; echo noData")
        defer { okDir.remove() }
        #expect(ok.outcome == .noData)
    }

    @Test func stderrTailKeepsTheLastLinesWithinItsBounds() {
        let tail = StderrTail()
        #expect(tail.detail == nil)
        for number in 1...30 { tail.add("line \(number)") }
        tail.add("   ")
        #expect(tail.lines.count == StderrTail.keptLines)
        #expect(tail.lines.last == "line 30")
        #expect(tail.detail == "line 28\nline 29\nline 30")
        #expect(StderrTail.suffix("abcdef", bytes: 10) == "abcdef")
        #expect(StderrTail.suffix("abcdef", bytes: 5) == "…ef")
        // Never cuts a character: "e\u{301}" (e + combining acute) is one.
        #expect(StderrTail.suffix("xxxxe\u{301}", bytes: 6) == "…e\u{301}")
        #expect(StderrTail.suffix("éééé", bytes: 6) == "…é")
    }
}
