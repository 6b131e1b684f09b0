import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushWorker
import PushWorkerTesting
import Testing

/// Small HTTP and exposition helpers for the metrics and health tests.
extension HTTPProbe {
    /// Polls `condition` every 100 ms until it holds or `timeout` passes; returns whether it held.
    static func eventually(timeout: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return try await condition()
    }

    /// The port of the service's HTTP server, once `run()` has started it.
    static func port(of service: PushWorkerService, timeout: Duration = .seconds(20)) async throws -> UInt16 {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if let port = service.httpServerPort { return port }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ProbeFailure("the HTTP server did not start within \(timeout)")
    }
}

struct ProbeFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A parsed Prometheus text exposition: sample values by `name{labels}` exactly as written.
struct Exposition {
    let text: String
    let samples: [String: Double]

    init(_ text: String) {
        self.text = text
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            samples[String(line[..<space])] = Double(line[line.index(after: space)...]) ?? .nan
        }
        self.samples = samples
    }

    subscript(_ sample: String) -> Double? { samples[sample] }

    /// The sum of every sample of `name` (without suffixes), over all its label sets.
    func total(_ name: String) -> Double {
        samples.filter { $0.key == name || $0.key.hasPrefix(name + "{") }.values.reduce(0, +)
    }
}
