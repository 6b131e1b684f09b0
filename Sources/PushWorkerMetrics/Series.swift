/// A handle on one series of a metric, for recording on hot paths without looking the labels up again.
///
/// Obtained from the metric's `series(_:)`; valid only with that metric (with another one it is ignored).
public struct Series: Sendable, Hashable {
    let owner: ObjectIdentifier
    let position: Int
}
