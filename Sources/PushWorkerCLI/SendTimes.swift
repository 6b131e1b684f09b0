import Synchronization

/// Send times of the latency run, by token, then by partition and offset.
final class SendTimes: Sendable {
    private struct State {
        var sentAt: [UInt64] = []
        var byPlace: [Int32: [Int64: UInt64]] = [:]
    }
    private let state = Mutex(State())

    func reserve(_ count: Int) { state.withLock { $0.sentAt = Array(repeating: 0, count: count) } }
    func sent(token: Int, atNs: UInt64) { state.withLock { $0.sentAt[token] = atNs } }
    func placed(token: Int, partition: Int32, offset: Int64) {
        state.withLock { state in state.byPlace[partition, default: [:]][offset] = state.sentAt[token] }
    }
    func time(partition: Int32, offset: Int64) -> UInt64? { state.withLock { $0.byPlace[partition]?[offset] } }
}
