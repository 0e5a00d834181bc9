import Foundation
import HTTPClientKit
import PatchPush
import PatchRegistry
import Testing
@testable import PatchPush

/// Issue 20, item 7: what a round says about the tokens it did not reach.
@Suite("APNs answers: the reason a token was not sent")
struct APNsAnswerTests {
    @Test("a token is counted under APNs' reason, HTTP {status} without one, unreachable without an answer")
    func failureNames() {
        #expect(APNsAnswer(status: 400, reason: "BadTopic").failure == "BadTopic")
        #expect(APNsAnswer(status: 403).failure == "HTTP 403")
        #expect(APNsAnswer(status: 0, unanswered: "Couldn't connect to server").failure == "unreachable")
        #expect(APNsAnswer.hint("unreachable") != nil && APNsAnswer.hint("BadEnvironmentKeyInToken") != nil && APNsAnswer.hint("TooManyRequests") == nil)
    }

    @Test("apns-id is read from the answer's headers (named lower-case by HTTPClient), bounded; absent or empty is nil")
    func apnsID() {
        #expect(APNsConnection.apnsID(["apns-id": "5E2A4F0C-0000-4000-8000-00000000000A", "content-type": "application/json"]) == "5E2A4F0C-0000-4000-8000-00000000000A")
        #expect(APNsConnection.apnsID([:]) == nil)
        #expect(APNsConnection.apnsID(["apns-id": ""]) == nil)
        #expect(APNsConnection.apnsID(["apns-id": String(repeating: "x", count: 500)])?.count == 64)
    }

    @Test("the summary's JSON carries the reasons; a round with tokens and none sent reached none, an empty one did not")
    func summary() {
        let failed = PushSummary(sent: 0, failed: 2, removed: 1, reasons: ["BadTopic": 2, "Unregistered": 1])
        #expect(failed.json["reasons"] == ["BadTopic": 2, "Unregistered": 1])
        #expect(failed.reachedNone)
        #expect(!PushSummary().reachedNone)
        #expect(!PushSummary(sent: 1, failed: 5).reachedNone)
    }
}
