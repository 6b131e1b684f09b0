import Foundation
@testable import PushWorkerCLI
import Synchronization
import Testing

/// What `ProcessSignals` does with each SIGTERM/SIGINT (`SignalDispatch`, without touching the process).
@Suite struct SignalDispatchTests {
    /// Records which actions ran.
    final class Calls: Sendable {
        private let names = Mutex<[String]>([])
        func action(_ name: String) -> @Sendable () -> Void { { self.names.withLock { $0.append(name) } } }
        var all: [String] { names.withLock { $0 } }
    }

    func run(_ reaction: SignalDispatch.Reaction) -> String {
        switch reaction {
        case .nothing: return "nothing"
        case .run(let actions): actions.forEach { $0() }; return "run"
        case .defaultAction: return "default"
        case .exitNow: return "exit"
        }
    }

    @Test func withoutASecondActionTheSecondSignalExits() {
        let calls = Calls()
        var dispatch = SignalDispatch()
        _ = dispatch.register(.init(first: calls.action("stop"), second: nil))
        #expect(run(dispatch.received(SIGTERM)) == "run")
        #expect(calls.all == ["stop"])
        #expect(run(dispatch.received(SIGTERM)) == "exit")
    }

    @Test func withASecondActionTheSecondSignalCallsItAndTheThirdExits() {
        let calls = Calls()
        var dispatch = SignalDispatch()
        _ = dispatch.register(.init(first: calls.action("graceful"), second: calls.action("fast")))
        #expect(run(dispatch.received(SIGTERM)) == "run")
        #expect(calls.all == ["graceful"])
        #expect(run(dispatch.received(SIGINT)) == "run")
        #expect(calls.all == ["graceful", "fast"])
        #expect(run(dispatch.received(SIGTERM)) == "exit")
    }

    @Test func signalsBeforeTheWatcherAreHandedToIt() {
        let calls = Calls()
        var dispatch = SignalDispatch()
        #expect(run(dispatch.received(SIGTERM)) == "nothing")
        let (_, now) = dispatch.register(.init(first: calls.action("graceful"), second: calls.action("fast")))
        now.forEach { $0() }
        #expect(calls.all == ["graceful"])
        #expect(run(dispatch.received(SIGTERM)) == "run")
        #expect(calls.all == ["graceful", "fast"])
        // A watcher registered after two signals gets both actions at once.
        let (_, late) = dispatch.register(.init(first: calls.action("late-graceful"), second: calls.action("late-fast")))
        late.forEach { $0() }
        #expect(calls.all == ["graceful", "fast", "late-graceful", "late-fast"])
    }

    @Test func aFreedWatchersSecondActionIsNotCalled() {
        let calls = Calls()
        var dispatch = SignalDispatch()
        let (id, _) = dispatch.register(.init(first: calls.action("graceful"), second: calls.action("fast")))
        #expect(run(dispatch.received(SIGTERM)) == "run")
        dispatch.unregister(id)
        #expect(run(dispatch.received(SIGTERM)) == "exit")
        #expect(calls.all == ["graceful"])
    }

    @Test func withoutAGracefulStopSignalsTakeTheirDefaultAction() {
        var dispatch = SignalDispatch()
        #expect(dispatch.useDefaultAction() == nil)
        #expect(run(dispatch.received(SIGTERM)) == "default")
        #expect(run(dispatch.received(SIGTERM)) == "default")
        var early = SignalDispatch()
        _ = early.received(SIGINT)
        #expect(early.useDefaultAction() == SIGINT)
    }
}
