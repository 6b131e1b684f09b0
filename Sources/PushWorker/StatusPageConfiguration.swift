/// The status page (configuration key `statusPage`): `GET /` and `GET /status.json` on the HTTP server
/// (``HTTPServerConfiguration``, the same port as `/metrics`), and the status snapshot each member
/// publishes to the group's status topic so that every member's page shows the whole consumer group.
/// docs/operations.md, "Status page", describes what the page shows and who can see it.
public struct StatusPageConfiguration: Sendable, Equatable {
    /// Whether the page, `/status.json` and status publishing are on (file `enabled`, env
    /// `PUSHWORKER_STATUS_PAGE_ENABLED`). Default `true`. Off, `/` and `/status.json` answer 404 and
    /// nothing is written to or read from the status topic.
    public var enabled = true
    /// The status topic (file `topic`): default `push-status`, named like `push-results` and
    /// `push-retries`. Every member of the group writes its snapshot there, keyed by its instance id, and
    /// reads it back; members of other groups sharing the topic are told apart by their `groupId`. Create
    /// it with a short retention (e.g. `retention.ms` of an hour): only the last minutes are read.
    public var topic = "push-status"
    /// How often this member publishes its snapshot (file `publishIntervalMs`, in milliseconds): default
    /// 5 s. A member not heard from for ``memberTimeoutFactor`` intervals drops off the pages.
    public var publishInterval: Duration = .seconds(5)
    /// How often the page's history takes a sample of the service's metrics (file `sampleIntervalMs`, in
    /// milliseconds): default 2 s.
    public var sampleInterval: Duration = .seconds(2)
    /// Samples kept (file `samples`): default 300, i.e. 10 minutes at the default ``sampleInterval``.
    /// A fixed ring: memory does not grow with the run time.
    public var samples = 300
    /// The most recent `failed` results kept for the page's table (file `failures`): default 50.
    public var failures = 50
    /// The directory holding Debian's `libjs-dygraphs` files `dygraph.min.js` and `dygraph.min.css`
    /// (file `dygraphsPath`): default `/usr/share/javascript/dygraphs`. pushworker serves them itself
    /// (`/static/dygraph.min.js`); without them the page shows tables instead of plots, with a note.
    public var dygraphsPath = "/usr/share/javascript/dygraphs"

    /// A member drops off the pages after this many ``publishInterval``s without a snapshot: 3.
    public static let memberTimeoutFactor = 3

    /// How long a member may go unheard before it drops off: ``memberTimeoutFactor`` × ``publishInterval``.
    public var memberTimeout: Duration { publishInterval * Self.memberTimeoutFactor }

    /// The defaults: on, topic `push-status`, publishing every 5 s, sampling every 2 s for 10 minutes.
    public init() {}
}
