import Foundation

/// `expires` timestamps: exactly `YYYY-MM-DDTHH:MM:SSZ`, the only form python-tuf accepts
/// (no fractions, no offsets). Formatted by hand: DateFormatter depends on locale settings.
public enum TUFTime {
    public static func format(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // By hand rather than String(format:), which cost more than the rest of a timestamp's
        // signing (a publish formats seven of these).
        var out = [UInt8](repeating: 0, count: 20)
        func put(_ value: Int, _ at: Int, _ digits: Int) {
            var value = value
            for i in stride(from: at + digits - 1, through: at, by: -1) {
                out[i] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, 0, 4)
        out[4] = UInt8(ascii: "-"); put(Int(parts.tm_mon) + 1, 5, 2)
        out[7] = UInt8(ascii: "-"); put(Int(parts.tm_mday), 8, 2)
        out[10] = UInt8(ascii: "T"); put(Int(parts.tm_hour), 11, 2)
        out[13] = UInt8(ascii: ":"); put(Int(parts.tm_min), 14, 2)
        out[16] = UInt8(ascii: ":"); put(Int(parts.tm_sec), 17, 2)
        out[19] = UInt8(ascii: "Z")
        return String(decoding: out, as: UTF8.self)
    }

    public static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count == 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[19] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = timegm(&parts)
        // timegm normalises 31 February into March; a date that does not round-trip is invalid.
        let date = Date(timeIntervalSince1970: TimeInterval(seconds))
        return format(date) == text ? date : nil
    }
}
