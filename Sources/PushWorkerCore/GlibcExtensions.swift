import Foundation
import Glibc

/// glibc functions that Swift's Glibc module does not import (their declarations need `_GNU_SOURCE`),
/// looked up once at run time with `dlsym(RTLD_DEFAULT, …)`; `nil` where this glibc lacks them.
enum GlibcExtensions {
    typealias FileActions = UnsafeMutablePointer<posix_spawn_file_actions_t>

    /// `int pipe2(int fds[2], int flags)` (glibc ≥ 2.9).
    static let pipe2: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32)? =
        lookUp("pipe2", as: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)

    /// `int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *, const char *path)`
    /// (glibc ≥ 2.29): the child changes to `path` before `exec` (glibc copies the path).
    static let addChdir: (@convention(c) (FileActions, UnsafePointer<CChar>) -> Int32)? =
        lookUp("posix_spawn_file_actions_addchdir_np", as: (@convention(c) (FileActions, UnsafePointer<CChar>) -> Int32).self)

    /// `int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *, int from)`
    /// (glibc ≥ 2.34): the child closes every descriptor from `from` up (`close_range`).
    static let addClosefrom: (@convention(c) (FileActions, Int32) -> Int32)? =
        lookUp("posix_spawn_file_actions_addclosefrom_np", as: (@convention(c) (FileActions, Int32) -> Int32).self)

    private static func lookUp<Function>(_ name: String, as type: Function.Type) -> Function? {
        // RTLD_DEFAULT is `(void *) 0` on glibc (the macro is not imported either).
        guard let symbol = dlsym(nil, name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}
