import Glibc

/// The process's limit on open descriptors (`RLIMIT_NOFILE`).
enum DescriptorLimit {
    /// Raises the soft limit to the hard limit, as Go's runtime and systemd's advice do: the soft default of
    /// 1 024 exists for `select(2)`, which pushworker does not use, and each running exec program holds three
    /// or four descriptors (its pipes and pidfd), so `maxInFlight` 10 000 needs about 40 000.
    /// - Returns: the soft limit now, or `nil` when it could not be read.
    @discardableResult
    static func raiseSoftLimit() -> UInt64? {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}
