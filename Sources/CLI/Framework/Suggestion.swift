/// "Did you mean …?" for a mistyped command or option, as git and cargo say it: the candidate
/// closest to what was typed, when it is close enough to be what the user meant.
public enum Suggestion {
    /// The candidate `word` most likely meant: one it is a unique prefix of (`cred` → `credentials`),
    /// else the nearest by edit distance (insertions, deletions, substitutions, swaps of two
    /// neighbours), if that is at most a third of the word's length (at least 1, at most 3, as cargo) and no other
    /// candidate is as near.
    public static func closest(to word: String, among candidates: [String]) -> String? {
        guard !word.isEmpty else { return nil }
        let prefixed = candidates.filter { $0.hasPrefix(word) && $0 != word }
        if prefixed.count == 1, word.count >= 2 { return prefixed[0] }
        let limit = min(3, max(1, word.count / 3))
        let scored = candidates.map { ($0, distance(Array(word), Array($0))) }.filter { $0.1 <= limit }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return scored.filter { $0.1 == best.1 }.count == 1 ? best.0 : nil
    }

    /// `message`, with "; did you mean 'X'?" when a candidate is close to `word`.
    public static func message(_ message: String, word: String, among candidates: [String], prefix: String = "") -> String {
        guard let match = closest(to: word, among: candidates) else { return message }
        return message + "; did you mean '\(prefix)\(match)'?"
    }

    /// Optimal string alignment distance.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { best = min(best, table[i - 2][j - 2] + 1) }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
