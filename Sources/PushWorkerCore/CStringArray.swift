import Foundation
import Glibc

/// Owns a NULL-terminated array of C strings (`argv`, `envp`), copied with `strdup` and freed in deinit.
final class CStringArray {
    private var pointers: [UnsafeMutablePointer<CChar>?]

    /// Copies `strings`; none may hold a NUL byte (the caller checks).
    /// - Throws: ``ChildProcessError/Code/setupFailed`` (`ENOMEM`) when memory runs out.
    init(_ strings: [String], program: String) throws(ChildProcessError) {
        pointers = []
        pointers.reserveCapacity(strings.count + 1)
        for string in strings {
            guard let copy = strdup(string) else {  // NUL-safe: ChildProcess.init refuses an argument or variable holding a NUL byte before this copy
                throw ChildProcessError(.setupFailed, program: program, operation: "strdup", errorNumber: ENOMEM)
            }
            pointers.append(copy)
        }
        pointers.append(nil)
    }

    /// Calls `body` with the array's address (valid only inside `body`).
    /// - Returns: what `body` returns, or `EINVAL` should the array have no storage (it always holds at
    ///   least the final `nil`, so it has).
    func withArray(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Int32) -> Int32 {
        pointers.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return EINVAL }
            return body(base)
        }
    }

    deinit {
        for pointer in pointers { free(pointer) }
    }
}
