/// A value type's stored values kept in one immutable object that the value's copies share.
///
/// For structs that are copied far more often than changed and hold many strings and arrays (a result, a
/// worker's registration, a job): a copy then retains one object instead of each of them. A change makes a
/// new object (``change(_:)``), so a shared one is never written and the type stays `Sendable` without a
/// lock.
package struct SharedValues<Values: Sendable>: Sendable {
    private final class Box: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private var box: Box

    /// Keeps `values` in a new object.
    package init(_ values: Values) { box = Box(values) }

    /// The values, read in place.
    package var values: Values {
        _read { yield box.values }
    }

    /// Changes a copy of the values and keeps it in a new object.
    package mutating func change(_ body: (inout Values) -> Void) {
        var values = box.values
        body(&values)
        box = Box(values)
    }

    /// Whether both hold the same object (then their values are equal).
    package func isSameObject(as other: SharedValues) -> Bool { box === other.box }
}
