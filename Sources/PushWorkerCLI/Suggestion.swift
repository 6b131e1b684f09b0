/// "Did you mean" for a mistyped command or option: the closest known spelling, if one is close enough.
enum Suggestion {
    /// The candidate closest to `typed`: one that `typed` is a prefix of (when only one is), else the one at
    /// the smallest edit distance (insertions, deletions, substitutions and swaps of adjacent characters),
    /// if that distance is at most 2 (at most 1 for words of up to 4 characters, 0 for 2 characters such
    /// as `-x`). `nil` when none is close.
    static func closest(to typed: String, among candidates: [String]) -> String? {
        let lowered = typed.lowercased()
        let prefixed = candidates.filter { $0.hasPrefix(lowered) && $0 != lowered }
        if lowered.count >= 3, prefixed.count == 1 { return prefixed[0] }
        guard !lowered.isEmpty else { return nil }
        let limit = lowered.count <= 2 ? 0 : lowered.count <= 4 ? 1 : 2
        let scored = candidates.map { ($0, distance(lowered, $0)) }.filter { $0.1 <= limit }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// The optimal string alignment distance between `a` and `b` (Levenshtein plus adjacent swaps).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
