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

    /// Edit distance counting an insert, a delete, a substitution or two neighbours swapped as
    /// one edit each (optimal string alignment): `dmeo` is one slip from `demo`, as a typist
    /// makes it, not two.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        // Three rows: the one before the previous is what a swap of two neighbours reads.
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { current[j] = min(current[j], beforePrevious[j - 2] + 1) }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}
