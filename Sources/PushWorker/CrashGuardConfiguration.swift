/// The crash guard (configuration key `crashGuard`): a record that kills the process while it runs is run
/// alone when its partition is taken over, and after ``deathLimit`` deaths with it running it gets
/// `failed` / `workerCrashed` without running (docs/guarantees.md, "A record that crashes the process").
public struct CrashGuardConfiguration: Sendable, Equatable {
    /// Whether the guard is on. Default `true`.
    public var enabled = true
    /// Deaths of a process, each found with the record running alone, after which the record is not run
    /// again (`crashGuard.deathLimit`, 1 … 1000). Default 3.
    public var deathLimit = 3
    /// How far a lease reaches past the highest offset handed over (`crashGuard.leaseRecords`,
    /// 1 … 1 000 000): a marker is committed once per that many records of a partition, and after an
    /// unclean end at most that many records run one at a time. Default 1000.
    public var leaseRecords = 1000

    /// The defaults: on, 3 deaths, leases of 1000 records.
    public init() {}

    /// Creates a configuration.
    public init(enabled: Bool, deathLimit: Int, leaseRecords: Int) {
        self.enabled = enabled
        self.deathLimit = deathLimit
        self.leaseRecords = leaseRecords
    }
}
