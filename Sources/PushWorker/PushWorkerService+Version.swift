extension PushWorkerService {
    /// pushworker's version, e.g. `"0.1.0"`: the `version` label of `pushworker_build_info` on `/metrics` and
    /// what `pushworker --version` prints.
    public static let version = "0.1.0"
}
