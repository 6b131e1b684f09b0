import Foundation
import PushWorkerEndpoints

/// The files of Debian's `libjs-dygraphs` the status page uses, read once when the HTTP server starts from
/// ``StatusPageConfiguration/dygraphsPath`` and served by pushworker at `/static/…`. Missing or unreadable
/// files leave the routes answering 404; the page then shows tables instead of plots, with a note.
struct StatusPageAssets: Sendable {
    /// `dygraph.min.js`, or `nil` when it could not be read.
    var script: [UInt8]?
    /// `dygraph.min.css`, or `nil` when it could not be read.
    var stylesheet: [UInt8]?

    /// Whether the plots can be drawn (the script is there).
    var available: Bool { script != nil }

    /// Reads the files from `directory`.
    init(directory: String) {
        func read(_ name: String) -> [UInt8]? {
            FileManager.default.contents(atPath: (directory as NSString).appendingPathComponent(name)).map { Array($0) }
        }
        script = read("dygraph.min.js")
        stylesheet = read("dygraph.min.css")
    }

    /// The routes of the page and its data: `/`, `/status.json`, `/static/dygraph.min.js` and
    /// `/static/dygraph.min.css`.
    func routes(document: @escaping @Sendable () -> StatusDocument) -> [String: EndpointHandler] {
        let script = self.script
        let stylesheet = self.stylesheet
        return [
            "/": { _ in EndpointResponse(status: 200, text: StatusPageHTML.page, contentType: "text/html; charset=utf-8") },
            "/status.json": { _ in
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                guard let body = try? encoder.encode(document()) else {
                    return EndpointResponse(status: 500, text: "the status document could not be encoded\n")
                }
                return EndpointResponse(status: 200, contentType: "application/json", body: Array(body))
            },
            "/static/dygraph.min.js": { _ in
                script.map { EndpointResponse(status: 200, contentType: "text/javascript; charset=utf-8", body: $0) }
                    ?? EndpointResponse(status: 404, text: "dygraphs is not installed (apt-get install libjs-dygraphs, or set statusPage.dygraphsPath)\n")
            },
            "/static/dygraph.min.css": { _ in
                stylesheet.map { EndpointResponse(status: 200, contentType: "text/css; charset=utf-8", body: $0) }
                    ?? EndpointResponse(status: 404, text: "dygraphs is not installed (apt-get install libjs-dygraphs, or set statusPage.dygraphsPath)\n")
            },
        ]
    }
}
