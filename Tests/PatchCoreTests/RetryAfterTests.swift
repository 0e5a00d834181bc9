import Foundation
import Testing
import PatchCore

@Suite("Retry-After, read one way by every client")
struct RetryAfterTests {
    let now = Date(timeIntervalSince1970: 1_764_000_000)

    @Test("delay seconds and an IMF-fixdate; a date already past is 0; absent, empty or unreadable is nil")
    func grammar() {
        #expect(RetryAfter.seconds("30", now: now) == 30)
        #expect(RetryAfter.seconds(" 5 ", now: now) == 5)
        #expect(RetryAfter.seconds("99999999999999999999", now: now) ?? 0 > 1e14, "absurd, but a delay: the caller caps it")
        let inTwoMinutes = now.addingTimeInterval(120)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(RetryAfter.seconds(formatter.string(from: inTwoMinutes), now: now) == 120)
        #expect(RetryAfter.seconds(formatter.string(from: now.addingTimeInterval(-60)), now: now) == 0)
        for unreadable in [nil, "", "soon", "-5", "1.5", "Sunday, 06-Nov-94 08:49:37 GMT"] {
            #expect(RetryAfter.seconds(unreadable, now: now) == nil, "\(String(describing: unreadable))")
        }
    }
}
