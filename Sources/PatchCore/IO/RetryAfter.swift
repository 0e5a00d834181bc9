import Foundation

/// A `Retry-After` value (RFC 9110 §10.2.3) as every client of this project reads it: delay
/// seconds, or an HTTP-date in the IMF-fixdate form RFC 9110 requires senders to use
/// (`Sun, 06 Nov 1994 08:49:37 GMT`). One grammar for PatchClient and patchctl; what each does
/// with an absent or unreadable value, and how long it will wait at most, is its own policy.
public enum RetryAfter {
    /// Seconds from `now` the value asks to wait (0 for a date already past); nil when it is
    /// absent or reads as neither form.
    public static func seconds(_ value: String?, now: Date = Date()) -> TimeInterval? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            // More digits than any sane delay: as long as a Double can say.
            return TimeInterval(text.prefix(15)) ?? .greatestFiniteMagnitude
        }
        guard let date = httpDate(text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}
