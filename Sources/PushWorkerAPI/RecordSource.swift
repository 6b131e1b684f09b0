/// Where a record came from: its topic, partition and offset (the result's `source`).
public struct RecordSource: Sendable, Hashable {
    /// The input topic.
    public var topic: String
    /// The partition.
    public var partition: Int32
    /// The offset in the partition.
    public var offset: Int64

    /// Creates a source.
    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }

    /// The default message id, `<topic>-<partition>-<offset>` (contract section 1), with the partition and
    /// the offset in decimal (a `-` before a negative one), as `"\(topic)-\(partition)-\(offset)"` writes it.
    public var defaultMessageId: String {
        // Written into the string's storage in one go: the interpolation cost about 1.7k instructions per
        // record (callgrind), most of it in its growing buffer and in formatting the two integers.
        var topic = topic
        return topic.withUTF8 { name in
            // The name, two dashes, an Int32 (at most 11 characters) and an Int64 (at most 20).
            String(unsafeUninitializedCapacity: name.count + 33) { buffer in
                var at = 0
                if !name.isEmpty {
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[0..<name.count]).initialize(fromContentsOf: name)
                    at = name.count
                }
                buffer[at] = UInt8(ascii: "-")
                at = Self.writeDecimal(Int64(partition), into: buffer, at: at + 1)
                buffer[at] = UInt8(ascii: "-")
                return Self.writeDecimal(offset, into: buffer, at: at + 1)
            }
        }
    }

    /// Writes `value` in decimal (a `-` first if negative) into `buffer` from `start`; returns the index
    /// after its last digit. `buffer` must have room for 20 characters from `start`.
    private static func writeDecimal(_ value: Int64, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        var at = start
        if value < 0 {
            buffer[at] = UInt8(ascii: "-")
            at += 1
        }
        var magnitude = value.magnitude
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        let end = at + digits
        var position = end
        repeat {
            position -= 1
            buffer[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        return end
    }
}
