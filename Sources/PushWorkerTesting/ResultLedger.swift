/// A test's ledger of every input id it produced and every result id it saw on the results topic, with
/// how many times each result came: the proof that no input is left without a result, and the count of
/// the duplicates at-least-once processing brought, never hidden.
///
/// Ids are the test's own (e.g. each input's `apns-id` header, which becomes its result's `messageId`).
/// A test that kills the service calls ``crashed()`` after each kill: from then on, a result whose id was
/// already seen counts as a re-run caused by that crash (``duplicatesPerCrash``). Duplicates seen before
/// the first crash are counted too (``duplicatesBeforeAnyCrash``).
///
/// ```swift
/// var ledger = ResultLedger()
/// ids.forEach { ledger.produced($0) }
/// // … read the results topic: ledger.sawResult(messageId) …
/// #expect(ledger.lost.isEmpty, "\(ledger.summary)")
/// ```
public struct ResultLedger: Sendable, Equatable {
    /// The input ids produced (each once).
    public private(set) var inputs: Set<String> = []
    /// How many results were seen for each id (an id with no result is absent).
    public private(set) var resultCounts: [String: Int] = [:]
    /// Duplicates seen before the first ``crashed()`` (a result whose id had a result already).
    public private(set) var duplicatesBeforeAnyCrash = 0
    /// Duplicates seen after each ``crashed()`` and before the next one, in crash order: the results that
    /// crash made run again (one entry per crash).
    public private(set) var duplicatesPerCrash: [Int] = []
    /// Input ids produced more than once (a test error: ids must be unique to be counted).
    public private(set) var repeatedInputs: Set<String> = []

    /// An empty ledger.
    public init() {}

    /// Notes an input id as produced.
    public mutating func produced(_ id: String) {
        if !inputs.insert(id).inserted { repeatedInputs.insert(id) }
    }

    /// Notes a result with `id` seen on the results topic; a second and later result for the same id is
    /// counted as a duplicate of the current period (before any crash, or after the latest crash).
    public mutating func sawResult(_ id: String) {
        let count = resultCounts[id, default: 0]
        resultCounts[id] = count + 1
        guard count > 0 else { return }
        if duplicatesPerCrash.isEmpty { duplicatesBeforeAnyCrash += 1 } else { duplicatesPerCrash[duplicatesPerCrash.count - 1] += 1 }
    }

    /// Notes that the service was killed: duplicates seen from now on are charged to this crash. Call it
    /// once every result the killed process produced has been read (e.g. the reader has reached the
    /// results topic's high watermarks), so its last results are not taken for re-runs.
    public mutating func crashed() {
        duplicatesPerCrash.append(0)
    }

    /// Inputs produced that have no result yet, sorted.
    public var lost: [String] { inputs.filter { resultCounts[$0] == nil }.sorted() }

    /// Result ids that match no input produced, sorted.
    public var unexpected: [String] { resultCounts.keys.filter { !inputs.contains($0) }.sorted() }

    /// Inputs that have at least one result.
    public var answered: Int { inputs.reduce(0) { $0 + (resultCounts[$1] == nil ? 0 : 1) } }

    /// Every result seen, duplicates included.
    public var results: Int { resultCounts.values.reduce(0, +) }

    /// Results beyond the first for each id: ``results`` minus the number of distinct ids seen.
    public var duplicates: Int { results - resultCounts.count }

    /// One line for test logs and failure messages, e.g.
    /// `inputs=30000 answered=30000 lost=0 unexpected=0 results=30912 duplicates=912 perCrash=[301,288,323] beforeAnyCrash=0`.
    public var summary: String {
        "inputs=\(inputs.count) answered=\(answered) lost=\(lost.count) unexpected=\(unexpected.count) results=\(results) "
            + "duplicates=\(duplicates) perCrash=[\(duplicatesPerCrash.map(String.init).joined(separator: ","))] "
            + "beforeAnyCrash=\(duplicatesBeforeAnyCrash)"
            + (repeatedInputs.isEmpty ? "" : " repeatedInputs=\(repeatedInputs.count)")
    }
}
