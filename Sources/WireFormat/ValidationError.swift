import Foundation

/// Why a name or version given by a user was refused. The message is the one line the
/// CLI and the server show.
public struct ValidationError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension String {
    /// The value as it may be echoed in one error line: every character `ReadableText`
    /// refuses (controls, bidi overrides, zero-width characters…) shown as `?` and anything
    /// past 80 characters cut, so hostile input can neither forge log lines nor make the
    /// error read otherwise.
    public var debugSanitized: String { sanitized(keeping: 80) }

    /// A file path the operator gave, as it may be echoed: sanitized the same way, but cut
    /// only past PATH_MAX. A path is the caller's own input, and one cut at 80 characters
    /// ("…/ws/missi…") no longer says which file was meant.
    public var pathSanitized: String { sanitized(keeping: 4096) }

    private func sanitized(keeping limit: Int) -> String {
        let scalars = Array(unicodeScalars)
        let cleaned = scalars.indices.map { ReadableText.refusal(scalars, at: $0) == nil ? String(scalars[$0]) : "?" }.joined()
        return cleaned.count > limit ? String(cleaned.prefix(limit)) + "…" : cleaned
    }
}
