import Foundation
import Synchronization

/// The routing table and the log of one server, reached from C through the `cls` pointers.
final class ServerContext: Sendable {
    let routes: [String: EndpointHandler]
    let log: (@Sendable (String) -> Void)?
    /// Messages logged while starting (they explain a failure), and errno at the last one.
    private let startup = Mutex<(starting: Bool, messages: [String], errorNumber: Int32)>((true, [], 0))

    init(routes: [String: EndpointHandler], log: (@Sendable (String) -> Void)?) {
        self.routes = routes
        self.log = log
    }

    func logged(_ message: String, errorNumber: Int32) {
        let kept = startup.withLock { state -> Bool in
            guard state.starting else { return false }
            state.messages.append(message)
            state.errorNumber = errorNumber
            return true
        }
        if !kept { log?(message.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    func finishStarting() -> (messages: [String], errorNumber: Int32) {
        startup.withLock { state in
            state.starting = false
            defer { state.messages = [] }
            return (state.messages, state.errorNumber)
        }
    }

    func respond(method: String, path: String) -> (EndpointResponse, allow: Bool) {
        guard let handler = routes[path] else {
            return (EndpointResponse(status: 404, text: "not found; try \(routes.keys.sorted().joined(separator: ", "))\n"), false)
        }
        guard method == "GET" || method == "HEAD" else {
            return (EndpointResponse(status: 405, text: "method \(method) not allowed; use GET or HEAD\n"), true)
        }
        return (handler(EndpointRequest(method: method, path: path)), false)
    }
}
