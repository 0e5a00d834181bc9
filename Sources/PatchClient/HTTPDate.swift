import Foundation

/// The IMF-fixdate form of an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`), the one RFC 9110
/// requires senders to use.
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}
