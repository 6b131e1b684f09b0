import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushWorkerService
import PushWorkerTesting
import Testing

/// Small HTTP and exposition helpers for the metrics and health tests.
enum HTTPProbe {
    /// Sends one request and returns the status, the body and the headers (lower-cased names).
    static func request(_ url: String, method: String = "GET", timeout: TimeInterval = 10) async throws -> (status: Int, body: String, headers: [String: String]) {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        request.timeoutInterval = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return (http.statusCode, String(decoding: data, as: UTF8.self), headers)
    }

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
