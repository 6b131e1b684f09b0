import Dispatch

/// The bench's clock: monotonic nanoseconds (`DispatchTime` uptime).
enum BenchClock {
    static func nowNs() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
