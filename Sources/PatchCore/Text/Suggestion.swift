/// "Did you mean …" for a misspelt command, option or channel: the candidate with the smallest
/// edit distance, if it is close enough to be a typo rather than another word. In PatchCore, the
/// module both the CLI grammar (HotpatchCLI) and the registry (a mistyped `--channel`) stand on,
/// so one distance decides what counts as a typo everywhere.
public enum Suggestion {
    public static func closest(to typed: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(typed, $0)) }.min { $0.1 < $1.1 }
        guard let (best, score) = scored, isTypo(score, of: best) else { return nil }
        return best
    }

    /// One edit for short words, up to a third of the word for long ones; never a rewrite.
    public static func isTypo(_ distance: Int, of word: String) -> Bool {
        distance <= max(1, min(3, word.count / 3))
    }

    /// Levenshtein distance (insert, delete, substitute; each 1), over characters.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
