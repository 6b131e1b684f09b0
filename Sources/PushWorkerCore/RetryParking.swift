/// The keys whose records go through the retry topic behind a retry of theirs (docs/guarantees.md, "Order
/// per key"), as a value with no effects: the dispatcher's lock guards it and its driver hands the outputs
/// over. Time is an argument (nanoseconds on the dispatcher's monotonic clock); nothing here reads a clock.
///
/// A key is *parked* when a record of it will be retried: the records of the key queued behind the retry,
/// and those that arrive while the key is parked, follow it through the retry topic (*in transit*), so that
/// the key's records keep their order. The key is unparked when everything in transit has been read back
/// here, or when the parking expires (the records were read back by another member).
///
/// While the thread that parked a key hands the retry over (its result and its retry-topic copy), records
/// of the key forwarded meanwhile are kept (*deferred*) and handed over after it by that thread
/// (``takeDeferred(_:)``): handed over at once, one could reach the retry topic ahead of the retry.
struct RetryParking {
    /// One parked key.
    struct Park {
        /// Records of the key forwarded to the retry topic by this member and not yet read back here.
        var inTransit: Int
        /// When the parking ends even if they never come back here (another member reads them).
        var expiresAtNs: Int64
        /// Of ``inTransit``, the records written to the retry topic before a later retry of their key (its
        /// run failed again before they were read back): they come back ahead of it, and each is forwarded
        /// again, behind it, so that the key's records still run in offset order.
        var forwardAgain = 0
        /// Whether the retry that parked the key has been decided but not yet handed over.
        var handingOver = false
        /// Outputs of the key decided while ``handingOver``, in order.
        var deferred: [DispatcherOutput] = []
    }

    /// What becomes of a record of a key that arrives (from the input, or back from the retry topic).
    enum Arrival: Equatable {
        /// It is placed as usual here (its key is not parked, or no longer).
        case placeHere
        /// It follows the key's retry through the retry topic: the caller forwards it now.
        case follow
        /// It follows the key's retry, but that retry is being handed over: its forward was kept, and the
        /// thread handing the retry over hands it over after it.
        case followDeferred
    }

    private(set) var parks: [[UInt8]: Park] = [:]

    /// Parked keys.
    var count: Int { parks.count }
    var isEmpty: Bool { parks.isEmpty }

    /// A record of `key` arrives; `fromRetryTopic` when it was read from the retry topic (each such read
    /// counts once against the key's records in transit). `forward` is the record's forward, kept when it
    /// must wait behind a hand-over.
    mutating func arrive(_ key: [UInt8], fromRetryTopic: Bool, nowNs: Int64, forward: @autoclosure () -> DispatcherOutput) -> Arrival {
        guard !parks.isEmpty, var park = parks[key] else { return .placeHere }
        let live = park.expiresAtNs > nowNs
        if fromRetryTopic {
            // Read back: it is in the key's line here again.
            park.inTransit -= 1
            if park.forwardAgain > 0 && live {
                // Written before a later retry of its key, which is still in the retry topic: it follows
                // that retry again.
                park.forwardAgain -= 1
                park.inTransit += 1
                return follow(key, park, forward)
            }
            // A park whose retry is being handed over stays until it is (its deferred outputs are in it).
            parks[key] = (park.inTransit > 0 && live) || park.handingOver ? park : nil
            return .placeHere
        }
        if live {
            // An earlier record of its key waits in the retry topic: this one follows it there.
            park.inTransit += 1
            return follow(key, park, forward)
        }
        if !park.handingOver { parks[key] = nil }
        return .placeHere
    }

    private mutating func follow(_ key: [UInt8], _ park: Park, _ forward: () -> DispatcherOutput) -> Arrival {
        var park = park
        defer { parks[key] = park }
        guard park.handingOver else { return .follow }
        park.deferred.append(forward())
        return .followDeferred
    }

    /// A record of `key` will be retried: `outputs` are its result with the retry-topic copy first, then a
    /// forward for each of the key's queued records that follow it. Parks the key until `expiresAtNs` at least.
    /// - Returns: the outputs for the caller to hand over now, after which it calls ``takeDeferred(_:)``
    ///   until that returns nothing; or `nil` when an earlier retry of the key is still being handed over
    ///   (then they were kept behind it, and its thread hands them over).
    mutating func park(_ key: [UInt8], outputs: [DispatcherOutput], expiresAtNs: Int64) -> [DispatcherOutput]? {
        var park = parks[key] ?? Park(inTransit: 0, expiresAtNs: 0)
        // Records of the key still in the retry topic (forwarded behind an earlier attempt and not read back
        // yet) were written before this retry: they come back first and follow it again.
        park.forwardAgain = park.inTransit
        park.inTransit += outputs.count
        park.expiresAtNs = max(park.expiresAtNs, expiresAtNs)
        defer { parks[key] = park }
        if park.handingOver {
            park.deferred += outputs
            return nil
        }
        park.handingOver = true
        return outputs
    }

    /// The outputs of `key` kept while its retry was handed over, for the thread that handed it over; empty
    /// when none is left, and then the hand-over has ended: later records of the key are forwarded at once
    /// while some are in transit, and the key is unparked when none is.
    mutating func takeDeferred(_ key: [UInt8]) -> [DispatcherOutput] {
        guard var park = parks[key], park.handingOver else { return [] }
        let batch = park.deferred
        guard batch.isEmpty else {
            park.deferred = []
            parks[key] = park
            return batch
        }
        park.handingOver = false
        // What was read back meanwhile kept the park for the hand-over only: with nothing of the key in
        // transit any more, the key is free here.
        parks[key] = park.inTransit > 0 ? park : nil
        return []
    }
}
