import Testing
@testable import PushWorkerCore

/// `DedupeWindow`: repeats within the window, expiry, the bound on entries, forgetting failed firsts.
@Suite struct DedupeWindowTests {
    func id(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aRepeatWithinTheWindowNamesTheFirst() {
        var window = DedupeWindow(DedupeConfiguration(window: .milliseconds(1000), maxEntries: 10))
        #expect(window.admit(id("a"), source: source(0), nowMs: 0) == nil)
        #expect(window.admit(id("a"), source: source(5), nowMs: 999) == source(0))
        #expect(window.admit(id("b"), source: source(6), nowMs: 999) == nil)
        #expect(window.count == 2)
    }

    @Test func anIdLeavesAtTheEndOfItsWindow() {
        var window = DedupeWindow(DedupeConfiguration(window: .milliseconds(1000), maxEntries: 10))
        _ = window.admit(id("a"), source: source(0), nowMs: 0)
        _ = window.admit(id("b"), source: source(1), nowMs: 500)
        // At 1000 ms a's window has ended (b's has not): a is a first again.
        #expect(window.admit(id("a"), source: source(2), nowMs: 1000) == nil)
        #expect(window.admit(id("b"), source: source(3), nowMs: 1000) == source(1))
        #expect(window.admit(id("a"), source: source(4), nowMs: 1999) == source(2))
        window.expire(nowMs: 10_000)
        #expect(window.count == 0)
    }

    @Test func whenFullTheOldestIsForgotten() {
        var window = DedupeWindow(DedupeConfiguration(window: .seconds(300), maxEntries: 3))
        for (offset, name) in ["a", "b", "c", "d"].enumerated() {
            #expect(window.admit(id(name), source: source(Int64(offset)), nowMs: Int64(offset)) == nil)
        }
        #expect(window.count == 3)
        #expect(window.admit(id("a"), source: source(10), nowMs: 10) == nil, "a was evicted")
        #expect(window.admit(id("d"), source: source(11), nowMs: 11) == source(3))
        #expect(window.count == 3)
    }

    @Test func aForgottenFirstMakesTheNextRepeatTheFirstAndMemoryStaysBounded() {
        var window = DedupeWindow(DedupeConfiguration(window: .seconds(300), maxEntries: 4))
        // x stays at the front of the admission queue, inside its window, the whole time.
        _ = window.admit(id("x"), source: source(100_000), nowMs: 0)
        _ = window.admit(id("a"), source: source(0), nowMs: 0)
        window.forget(id("a"), ifFirstIs: source(99))
        #expect(window.admit(id("a"), source: source(1), nowMs: 1) == source(0), "only the first's own failure forgets it")
        window.forget(id("a"), ifFirstIs: source(0))
        #expect(window.admit(id("a"), source: source(2), nowMs: 2) == nil)
        // Failing over and over leaves stale queue items behind; they are dropped, so the queue stays small.
        // One expectation over the loop: 10 000 of them kept a thread of the cooperative pool busy for seconds.
        var repeatsTakenForDuplicates: [Int] = []
        for offset in 3..<10_000 {
            window.forget(id("a"), ifFirstIs: source(Int64(offset - 1)))
            if window.admit(id("a"), source: source(Int64(offset)), nowMs: Int64(offset)) != nil { repeatsTakenForDuplicates.append(offset) }
        }
        #expect(repeatsTakenForDuplicates.isEmpty)
        #expect(window.count == 2)
        #expect(window.queuedCount <= 2 * 4 + 64)
    }

    @Test func settingsTakeEffectClamped() {
        #expect(DedupeConfiguration(window: .zero, maxEntries: 0).effectiveWindowMs == 1)
        #expect(DedupeConfiguration(window: .zero, maxEntries: 0).effectiveMaxEntries == 1)
        #expect(DedupeConfiguration(window: .seconds(1e9), maxEntries: .max).effectiveWindowMs == 2_147_483_647)
        #expect(DedupeConfiguration(window: .seconds(1e9), maxEntries: .max).effectiveMaxEntries == 10_000_000)
        #expect(DedupeConfiguration().effectiveWindowMs == 300_000)
    }
}
