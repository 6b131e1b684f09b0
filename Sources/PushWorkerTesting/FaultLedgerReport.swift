import Foundation

/// One fault scenario's figures, printed as one machine-readable line for `scripts/fault-ledger.sh`
/// (which builds the table of docs/guarantees.md from them):
/// `FAULT-LEDGER {"scenario":"produceErrors","mode":"atLeastOnce","records":2000,"faults":10,"lost":0,...}`.
public struct FaultLedgerReport: Sendable, Equatable {
    /// The scenario's name, e.g. `brokerDownThenUp`: one row of the table.
    public var scenario: String
    /// The delivery mode under test: `atLeastOnce` (pushworker's default); other modes add their own rows.
    public var mode: String
    /// The inputs produced (each with a unique `apns-id`).
    public var records: Int
    /// The faults injected and used: failed requests, outages, moves, signals (what counts is `faultDetail`).
    public var faults: Int
    /// What was injected, in words, e.g. `Produce answered NOT_LEADER_FOR_PARTITION ×2, …`.
    public var faultDetail: String
    /// Inputs without a result at the end (``ResultLedger/lost``); at-least-once promises 0.
    public var lost: Int
    /// Results for ids never produced (``ResultLedger/unexpected``).
    public var unexpected: Int
    /// Results beyond the first per input (``ResultLedger/duplicates``): re-runs, counted, never hidden.
    public var duplicated: Int
    /// Of ``duplicated``, those charged to SIGKILLs (``ResultLedger/duplicatesPerCrash``, summed); `nil`
    /// when the scenario kills nothing.
    public var rerunAfterKill: Int?
    /// The scenario's wall time in seconds.
    public var seconds: Double

    /// A report of `ledger` for `scenario`.
    public init(scenario: String, mode: String = "atLeastOnce", ledger: ResultLedger, faults: Int, faultDetail: String, kills: Bool = false, seconds: Double) {
        self.scenario = scenario
        self.mode = mode
        records = ledger.inputs.count
        self.faults = faults
        self.faultDetail = faultDetail
        lost = ledger.lost.count
        unexpected = ledger.unexpected.count
        duplicated = ledger.duplicates
        rerunAfterKill = kills ? ledger.duplicatesPerCrash.reduce(0, +) : nil
        self.seconds = seconds
    }

    /// `FAULT-LEDGER ` and the figures as one JSON object, keys in a fixed order.
    public var line: String {
        func quoted(_ text: String) -> String {
            let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"?\"]".utf8)
            return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
        }
        return "FAULT-LEDGER {\"scenario\":\(quoted(scenario)),\"mode\":\(quoted(mode)),\"records\":\(records),\"faults\":\(faults),"
            + "\"faultDetail\":\(quoted(faultDetail)),\"lost\":\(lost),\"unexpected\":\(unexpected),\"duplicated\":\(duplicated),"
            + "\"rerunAfterKill\":\(rerunAfterKill.map(String.init) ?? "null"),\"seconds\":\(String(format: "%.1f", seconds))}"
    }
}
