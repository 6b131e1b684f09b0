import Foundation
import PushWorkerCore
import PushWorkerKafka

/// A result record as acknowledged by the broker, with its JSON value parsed.
public struct ReceivedResult: Sendable {
    /// The JSON object of contract section 3.
    public var json: [String: JSONValue]
    /// The raw value bytes.
    public var value: [UInt8]
    /// The record key (the input's key).
    public var key: String?
    /// The record headers as text (the last of each name; bytes that are not UTF-8 are replaced).
    public var headers: [String: String]
    /// The record headers as written: names and exact value bytes, in order.
    public var rawHeaders: [KafkaHeader]

    /// Parses an acknowledged result record (as the service's `onResult` receives it).
    public init(record: KafkaOutgoingRecord) {
        value = record.value ?? []
        json = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(value))) ?? [:]
        key = record.key.map { String(decoding: $0, as: UTF8.self) }
        var headers: [String: String] = [:]
        for header in record.headers { headers[header.name] = header.value.map { String(decoding: $0, as: UTF8.self) } ?? "" }
        self.headers = headers
        rawHeaders = record.headers
    }

    /// `messageId`.
    public var messageId: String? { json["messageId"]?.stringValue }
    /// `result`: `newData`, `noData` or `failed`.
    public var result: String? { json["result"]?.stringValue }
    /// `reason`, or `nil`.
    public var reason: String? { json["reason"]?.stringValue }
    /// `detail`, or `nil`.
    public var detail: String? { json["detail"]?.stringValue }
    /// `source.partition`.
    public var partition: Int32? { json["source"]?["partition"]?.intValue.map { Int32($0) } }
    /// `source.offset`.
    public var offset: Int64? { json["source"]?["offset"]?.intValue }
}
