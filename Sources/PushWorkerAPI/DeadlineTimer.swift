import Foundation

/// Fires actions at deadlines on one dedicated thread, with O(1) schedule and cancel.
///
/// Deadlines are kept in one first-in first-out list per budget: jobs with the same budget that start
/// later end later, so each list stays in deadline order and the next deadline is always at a list head.
///
/// `@unchecked Sendable`: all mutable state (the lists and each entry's links) is read and written only
/// while holding `condition`'s lock.
final class DeadlineTimer: @unchecked Sendable {
    /// A scheduled action. Its links are guarded by the timer's lock.
    ///
    /// A subclass that overrides ``fire()`` is its own entry (``schedule(_:)``): an object that has to exist
    /// for each job anyway (a running job, a sleep) then needs no second allocation for its deadline.
    class Entry: @unchecked Sendable {
        let deadline: ContinuousClock.Instant
        let budget: Duration
        fileprivate var previous: Entry?
        fileprivate var next: Entry?
        fileprivate var linked = false

        init(deadline: ContinuousClock.Instant, budget: Duration) {
            self.deadline = deadline
            self.budget = budget
        }

        /// Runs at the deadline, on the timer's thread: a subclass's own action (nothing here).
        func fire() {}
    }

    /// An entry that runs a closure (``schedule(at:budget:_:)``). Its own class, so that the entries that are
    /// their own action (a running job, a sleep: one per job) carry no closure field.
    private final class ActionEntry: Entry, @unchecked Sendable {
        private let action: @Sendable () -> Void

        init(deadline: ContinuousClock.Instant, budget: Duration, action: @escaping @Sendable () -> Void) {
            self.action = action
            super.init(deadline: deadline, budget: budget)
        }

        override func fire() { action() }
    }

    private struct List {
        var head: Entry?
        var tail: Entry?
    }

    /// The longest the thread sleeps without a due deadline.
    static let idleWait: Duration = .milliseconds(500)

    private let condition = NSCondition()
    private var lists: [Duration: List] = [:]
    private var waitingUntil: ContinuousClock.Instant?
    private var stopped = false
    /// Beats each time the thread looks at its lists; ended once the thread has ended.
    private let heartbeat = Heartbeat()

    /// Starts the timer's thread, named `threadName`.
    init(threadName: String = "pushworker-deadlines") {
        let thread = Thread { [self] in self.loop() }
        thread.name = threadName
        thread.start()
    }

    /// Schedules `action` at `deadline`; `budget` names the list it joins.
    func schedule(at deadline: ContinuousClock.Instant, budget: Duration, _ action: @escaping @Sendable () -> Void) -> Entry {
        let entry = ActionEntry(deadline: deadline, budget: budget, action: action)
        schedule(entry)
        return entry
    }

    /// Schedules `entry` (not scheduled before) at its deadline, in the list of its budget: its ``Entry/fire()``
    /// runs then unless it is cancelled first.
    func schedule(_ entry: Entry) {
        let deadline = entry.deadline
        let budget = entry.budget
        condition.lock()
        var list = lists[budget] ?? List()
        if let tail = list.tail {
            tail.next = entry
            entry.previous = tail
        } else {
            list.head = entry
        }
        list.tail = entry
        entry.linked = true
        lists[budget] = list
        if let waitingUntil, deadline < waitingUntil {
            condition.signal()
        }
        condition.unlock()
    }

    /// How long ago the thread last looked for due deadlines (it does at least every ``idleWait``, and after
    /// firing each batch), or `nil` once it has ended. Far above ``idleWait``: an action is stuck.
    var sinceLastRound: Duration? { heartbeat.sinceLastBeat }

    /// Cancels an entry that has not fired. Cancelling a fired or cancelled entry does nothing.
    func cancel(_ entry: Entry) {
        condition.lock()
        unlink(entry)
        condition.unlock()
    }

    /// Stops the thread once every scheduled action has fired or been cancelled.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func unlink(_ entry: Entry) {
        guard entry.linked, var list = lists[entry.budget] else { return }
        if let previous = entry.previous { previous.next = entry.next } else { list.head = entry.next }
        if let next = entry.next { next.previous = entry.previous } else { list.tail = entry.previous }
        entry.previous = nil
        entry.next = nil
        entry.linked = false
        if list.head == nil { lists[entry.budget] = nil } else { lists[entry.budget] = list }
    }

    private func loop() {
        condition.lock()
        while !stopped || !lists.isEmpty {
            heartbeat.beat()
            let now = ContinuousClock.now
            var due: [Entry] = []
            var earliest: ContinuousClock.Instant?
            for list in lists.values {
                var entry = list.head
                while let current = entry, current.deadline <= now {
                    due.append(current)
                    entry = current.next
                }
                if let entry { earliest = min(earliest ?? entry.deadline, entry.deadline) }
            }
            if !due.isEmpty {
                due.forEach(unlink)
                condition.unlock()
                for entry in due { entry.fire() }
                condition.lock()
                continue
            }
            // With nothing due sooner, look again after at most `idleWait`: a new deadline later than that
            // needs no wake-up, so scheduling a job (deadlines are seconds away) rarely signals this thread.
            let target = min(earliest ?? now.advanced(by: Self.idleWait), now.advanced(by: Self.idleWait))
            waitingUntil = target
            _ = condition.wait(until: Date(timeIntervalSinceNow: now.duration(to: target).timeInterval))
            waitingUntil = nil
        }
        heartbeat.end()
        condition.unlock()
    }
}
