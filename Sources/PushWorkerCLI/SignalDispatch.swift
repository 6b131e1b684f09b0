/// What ``ProcessSignals`` does with each SIGTERM or SIGINT, as a value with no side effects (the caller runs
/// what it returns, after its lock): the stop actions of ``SignalWatcher``s, a signal kept for the first one,
/// the default action, or the immediate exit.
struct SignalDispatch {
    /// What a watcher does on the first signal, and on the second (`nil`: the second exits at once).
    struct Actions: Sendable {
        var first: @Sendable () -> Void
        var second: (@Sendable () -> Void)?
    }

    /// What to do with a signal just received.
    enum Reaction {
        /// Nothing (kept for the first watcher, or already handled).
        case nothing
        /// Call these actions.
        case run([@Sendable () -> Void])
        /// End the process by the signal's default action.
        case defaultAction
        /// Exit at once with status 130.
        case exitNow
    }

    /// What the dispatcher does with the first signal.
    private enum Phase {
        /// No stop action yet; `pending` is the first signal received meanwhile.
        case waiting(pending: Int32?)
        /// Stop actions registered by ``SignalWatcher``s, by id.
        case watching([Int: Actions])
        /// The command has no graceful stop: signals take their default action.
        case defaultAction
        /// The first signal has been handed to the stop actions.
        case stopping
    }

    private var phase = Phase.waiting(pending: nil)
    private var nextId = 0
    private var received = 0
    /// The second actions of the watchers the first signal was handed to (or that registered after it), by
    /// id, until the second signal calls them or their watcher is freed.
    private var secondActions: [Int: @Sendable () -> Void] = [:]

    /// Registers a watcher's actions.
    /// - Returns: its id for ``unregister(_:)``, and what to call now: its first action when a signal has
    ///   already arrived, and its second too when two have.
    mutating func register(_ actions: Actions) -> (id: Int, runNow: [@Sendable () -> Void]) {
        let id = nextId
        nextId += 1
        switch phase {
        case .waiting(let pending):
            if pending != nil {
                phase = .stopping
                secondActions[id] = actions.second
                return (id, [actions.first])
            }
            phase = .watching([id: actions])
        case .watching(var watching):
            watching[id] = actions
            phase = .watching(watching)
        case .defaultAction:
            phase = .watching([id: actions])
        case .stopping:
            if received < 2 {
                secondActions[id] = actions.second
                return (id, [actions.first])
            }
            return (id, [actions.first] + (actions.second.map { [$0] } ?? []))
        }
        return (id, [])
    }

    /// Removes a watcher's actions.
    mutating func unregister(_ id: Int) {
        secondActions[id] = nil
        guard case .watching(var actions) = phase else { return }
        actions[id] = nil
        phase = actions.isEmpty ? .waiting(pending: nil) : .watching(actions)
    }

    /// Says that the running command has no graceful stop.
    /// - Returns: the signal received before, which must now end the process by its default action.
    mutating func useDefaultAction() -> Int32? {
        defer { phase = .defaultAction }
        if case .waiting(let pending) = phase { return pending }
        return nil
    }

    /// The reaction to one more signal: the first calls every watcher's first action (or is kept for the
    /// first watcher); the second calls the second actions if any watcher has one, else exits; any later
    /// one exits. Once the command has no graceful stop, every signal takes its default action.
    mutating func received(_ number: Int32) -> Reaction {
        received += 1
        if received > 1, case .defaultAction = phase { return .defaultAction }
        if received == 2, !secondActions.isEmpty {
            defer { secondActions.removeAll() }
            return .run(Array(secondActions.values))
        }
        if received > 1 { return .exitNow }
        switch phase {
        case .waiting:
            phase = .waiting(pending: number)
            return .nothing
        case .watching(let actions):
            phase = .stopping
            secondActions = actions.compactMapValues(\.second)
            return .run(actions.values.map(\.first))
        case .defaultAction:
            return .defaultAction
        case .stopping:
            return .nothing
        }
    }
}
