import Synchronization

/// Keeps a closed descriptor from living on in a child being started.
///
/// `posix_spawn` starts the child with a copy of every descriptor of this process; the close-on-exec ones
/// go only when the child calls `exec`, which `posix_spawn` waits for. Meanwhile a socket this process has
/// just closed is still open in the child: a listener re-created on the same port then fails to bind.
/// librdkafka's mock cluster does exactly that when a test takes a broker down
/// (`rd_kafka_mock_broker_set_down` closes the listener, binds its port again, and aborts the process
/// when the bind fails: rdkafka_mock.c, "Failed to create mock broker listener"). Every ``ChildProcess``
/// start holds this gate around `posix_spawn`, and code that closes and re-binds such a socket holds it
/// too (``whileNoChildStarts(_:)``), so neither happens during the other.
///
/// Starts are serialised by it; each takes well under a millisecond.
package enum SpawnGate {
    private static let gate = Mutex<Void>(())

    /// Runs `spawn` (the `posix_spawn` call) while no ``whileNoChildStarts(_:)`` body runs.
    static func starting(_ spawn: () -> Int32) -> Int32 {
        gate.withLock { _ in spawn() }
    }

    /// Runs `body` while no child is being started, e.g. taking an embedded cluster's broker down:
    /// `try SpawnGate.whileNoChildStarts { try cluster.setBrokerDown(1) }`.
    /// - Throws: what `body` throws.
    package static func whileNoChildStarts<E: Error>(_ body: () throws(E) -> Void) throws(E) {
        var failure: E?
        gate.withLock { _ in
            do throws(E) { try body() } catch { failure = error }
        }
        if let failure { throw failure }
    }
}
