import Foundation
import Glibc

/// The descriptors this process has open, read from `/proc/self/fd`: the fallback that closes a child's
/// other descriptors where glibc has no `posix_spawn_file_actions_addclosefrom_np` (before 2.34).
///
/// Each entry's name is read through a pointer at `d_name`'s offset and never past the record's
/// `d_reclen`: `readdir` returns a pointer into glibc's 32 KiB buffer, and a record near its end is much
/// shorter than `struct dirent` (whose `d_name` is 256 bytes), so copying the struct (or `d_name`) by
/// value reads past the buffer. That over-read is what crashed Foundation's `Process.run()` on Linux
/// (`findMaximumOpenFromProcSelfFD`, swift-corelibs-foundation before PR #5472).
enum OpenDescriptors {
    /// Every open descriptor number, without the one `opendir` used for the listing itself.
    /// - Returns: `nil` when `/proc/self/fd` cannot be read (`errno` tells why).
    static func list() -> [Int32]? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        let own = dirfd(directory)
        guard let nameOffset = MemoryLayout<dirent>.offset(of: \.d_name),
              let lengthOffset = MemoryLayout<dirent>.offset(of: \.d_reclen) else { return nil }
        var numbers: [Int32] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                return errno == 0 ? numbers : nil
            }
            let record = UnsafeRawPointer(entry)
            let length = Int(record.load(fromByteOffset: lengthOffset, as: UInt16.self))
            guard length > nameOffset else { continue }
            let name = UnsafeRawBufferPointer(start: record + nameOffset, count: length - nameOffset)
            if let number = parse(name), number != own { numbers.append(number) }
        }
    }

    /// The decimal number `name` spells up to its NUL, or `nil` (`.`, `..`, anything else).
    static func parse(_ name: UnsafeRawBufferPointer) -> Int32? {
        var value: Int32 = 0
        var digits = 0
        for byte in name {
            if byte == 0 { break }
            guard byte >= 0x30 && byte <= 0x39, digits < 9 else { return nil }
            value = value * 10 + Int32(byte - 0x30)
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}
