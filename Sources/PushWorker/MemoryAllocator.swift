#if canImport(Glibc)
import Glibc
#endif

/// The memory allocator this process runs on, as the `consuming` log line and `pushworker version` name it.
///
/// The `pushworker` executable links jemalloc in release builds (Package.swift, docs/performance.md); debug
/// builds, and a custom executable that does not link it, use the C library's `malloc`. Found at run time:
/// jemalloc is in use when the process has its `mallctl` function.
public enum MemoryAllocator {
    /// `jemalloc <version>, <n> arena(s)` (jemalloc's `version` and `opt.narenas`), e.g. `jemalloc 5.3.0, 1 arena`, or `malloc of the C
    /// library` when jemalloc is not linked.
    public static let description: String = {
        #if canImport(Glibc)
        typealias MallCtl = @convention(c) (UnsafePointer<CChar>, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int) -> Int32
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "mallctl") else { return "malloc of the C library" }
        let mallctl = unsafeBitCast(symbol, to: MallCtl.self)
        var version: UnsafePointer<CChar>?
        var size = MemoryLayout<UnsafePointer<CChar>?>.size
        var text = "jemalloc"
        if mallctl("version", &version, &size, nil, 0) == 0, let version {
            // e.g. `5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c`
            text += " " + String(cString: version).prefix { $0 != "-" }  // NUL-safe: jemalloc's own compiled-in version constant, nothing from outside
        }
        var arenas: UInt32 = 0
        size = MemoryLayout<UInt32>.size
        if mallctl("opt.narenas", &arenas, &size, nil, 0) == 0 { text += arenas == 1 ? ", 1 arena" : ", \(arenas) arenas" }
        return text
        #else
        return "malloc of the C library"
        #endif
    }()
}
