/// The payload of a `content-update` background push:
/// `{"aps":{"content-available":1},"type":"content-update","contentId":"article-42"}`.
///
/// `contentId` is optional: a push without one is valid and the worker answers `noData` (nothing to fetch).
public struct ContentUpdate: Decodable, Sendable, Equatable {
    /// The content to refresh, e.g. `article-42`; any string (it is percent-encoded into the URL path).
    public var contentId: String?

    /// Creates a payload.
    public init(contentId: String?) {
        self.contentId = contentId
    }
}
