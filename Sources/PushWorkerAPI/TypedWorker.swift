import Foundation

/// A worker that receives its payload decoded as a `Decodable` type.
///
/// A record whose payload does not decode becomes `failed` / `invalidPayload` with the decoding error as
/// detail (e.g. `missing key "contentId"`), and ``perform(_:job:)`` is not called.
/// ```swift
/// struct ContentUpdate: Decodable, Sendable { let contentId: String }
/// struct ContentUpdateWorker: TypedWorker {
///     func perform(_ payload: ContentUpdate, job: Job) async throws -> WorkerOutcome { .newData }
/// }
/// ```
public protocol TypedWorker: Worker {
    /// The payload type, decoded from the whole record value (`aps`, `type` and the data keys) with
    /// Foundation's `JSONDecoder`.
    associatedtype Payload: Decodable & Sendable

    /// Runs one job with its decoded payload.
    /// - Returns: the outcome.
    /// - Throws: any error: the result is `failed` / `workerError` with the error as detail.
    func perform(_ payload: Payload, job: Job) async throws -> WorkerOutcome
}

extension TypedWorker {
    /// Decodes the payload and calls ``perform(_:job:)``, or returns `failed` / `invalidPayload`.
    public func perform(_ job: Job) async throws -> WorkerOutcome {
        let payload: Payload
        do {
            payload = try job.decode(Payload.self)
        } catch let error as DecodingError {
            return .failed(.invalidPayload, detail: "the payload does not decode as \(Payload.self): \(Self.describe(error))")
        }
        return try await perform(payload, job: job)
    }

    /// A one-line description of a decoding error, naming the key path.
    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty ? "the payload" : keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : " in \(path(context.codingPath))"
            return "missing key \"\(key.stringValue)\"\(parent)"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)) is not \(type)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) is null, expected \(type)"
        case .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return String(describing: error)
        }
    }
}
