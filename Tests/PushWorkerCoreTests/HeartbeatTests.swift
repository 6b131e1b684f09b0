import Testing
import PushWorkerCore

/// ``Heartbeat``: beaten when created, `nil` once ended, beaten again by ``Heartbeat/beat()``.
@Suite struct HeartbeatTests {
    @Test func countsItsCreationAsABeatAndReadsNilOnceEnded() async throws {
        let heartbeat = Heartbeat()
        let fresh = try #require(heartbeat.sinceLastBeat, "a new heartbeat counts as just beaten")
        #expect(fresh < .seconds(5))
        try await Task.sleep(for: .milliseconds(200))
        #expect((heartbeat.sinceLastBeat ?? .zero) >= .milliseconds(200))
        heartbeat.beat()
        #expect((heartbeat.sinceLastBeat ?? .seconds(99)) < .milliseconds(200), "a beat starts the count again")
        heartbeat.end()
        #expect(heartbeat.sinceLastBeat == nil)
        heartbeat.beat()
        #expect(heartbeat.sinceLastBeat != nil)
    }
}
