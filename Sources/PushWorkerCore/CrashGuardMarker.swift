/// What pushworker's crash guard keeps for one input partition, as the metadata string of an offset committed
/// for the guard's own group (`<groupId>.crash-guard`, whose committed offset is ``lease``): written before records
/// run, read by the partition's next owner (docs/guarantees.md, "A record that crashes the process").
///
/// The text: `pushworker-crash-guard/1 lease=H` and then ` clean`, ` running=X deaths=D` (optionally followed
/// by ` cleared=E`), ` cleared=E`, or nothing.
public struct CrashGuardMarker: Equatable, Sendable {
    /// How the partition's last owner left it.
    public enum Ending: Equatable, Sendable {
        /// It stopped or gave the partition up cleanly: nothing it ran can have ended the process.
        case clean
        /// It may have died: no record at or past ``CrashGuardMarker/lease`` had started; the records below
        /// `cleared`, if any, had each run alone and ended (the isolation's progress, which a later owner
        /// does not repeat).
        case open(cleared: Int64?)
        /// It ran the record at `offset` alone, after `deaths` earlier deaths of a process while it ran; the
        /// records below `cleared`, if any, had each run alone and ended (never past a record answered
        /// without running: read again, it must not run at once). Without `cleared`, none had.
        case running(offset: Int64, deaths: Int, cleared: Int64?)
    }

    /// The first offset no owner had started when this was written.
    public var lease: Int64
    /// How the last owner left the partition.
    public var ending: Ending

    /// The text every marker starts with (its format's version).
    public static let prefix = Array("pushworker-crash-guard/1 ".utf8)
    /// The longest text read; a longer one is not ours.
    public static let maxBytes = 200

    /// The metadata text.
    public var bytes: [UInt8] {
        var text = "lease=\(lease)"
        switch ending {
        case .clean: text += " clean"
        case .open(let cleared): if let cleared { text += " cleared=\(cleared)" }
        case .running(let offset, let deaths, let cleared):
            text += " running=\(offset) deaths=\(deaths)"
            if let cleared { text += " cleared=\(cleared)" }
        }
        return Self.prefix + Array(text.utf8)
    }

    /// Reads a marker from committed metadata, or `nil` when the bytes are not one (empty, another
    /// program's, damaged): strict ASCII, decimal numbers that fit, nothing extra.
    public init?(bytes: [UInt8]) {
        guard bytes.count <= Self.maxBytes, bytes.count > Self.prefix.count, bytes.starts(with: Self.prefix) else { return nil }
        let fields = bytes[Self.prefix.count...].split(separator: 0x20, omittingEmptySubsequences: false)
        func number(_ field: ArraySlice<UInt8>, _ name: String) -> Int64? {
            let label = Array((name + "=").utf8)
            guard field.starts(with: label) else { return nil }
            let digits = field.dropFirst(label.count)
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
        }
        guard let first = fields.first, let lease = number(first, "lease") else { return nil }
        switch fields.count {
        case 1:
            self.init(lease: lease, ending: .open(cleared: nil))
        case 2 where Array(fields[1]) == Array("clean".utf8):
            self.init(lease: lease, ending: .clean)
        case 2:
            guard let cleared = number(fields[1], "cleared") else { return nil }
            self.init(lease: lease, ending: .open(cleared: cleared))
        case 3, 4:
            guard let offset = number(fields[1], "running"), let deaths = number(fields[2], "deaths"), deaths <= 1_000_000 else { return nil }
            var cleared: Int64?
            if fields.count == 4 {
                guard let value = number(fields[3], "cleared") else { return nil }
                cleared = value
            }
            self.init(lease: lease, ending: .running(offset: offset, deaths: Int(deaths), cleared: cleared))
        default:
            return nil
        }
    }

    /// Creates a marker.
    public init(lease: Int64, ending: Ending) {
        self.lease = lease
        self.ending = ending
    }
}
