import Foundation
import HTTPClientKit
import Testing

/// The HTTPClient this build has, for the few contract tests whose outcome is the transport's
/// (docs/IOS.md, "URLSession on Linux"): the test says which platform each expectation speaks for.
enum Transport: Equatable {
    /// libcurl: Linux, the default build.
    case curl
    /// swift-corelibs-foundation's URLSession: the apple-shaped Linux build (`make test-apple-shaped`).
    case corelibsURLSession
    /// Apple's URLSession: never run on these machines.
    case appleURLSession

    static let current: Transport = {
        #if canImport(CCurl)
        return .curl
        #elseif os(Linux)
        return .corelibsURLSession
        #else
        return .appleURLSession
        #endif
    }()

    /// A refused body ends the transfer before the peer has pushed much more. libcurl aborts
    /// from its write callback. corelibs' URLSession does not: it hands each chunk to the
    /// delegate queue without pausing libcurl, and its `cancel()` lands asynchronously on the
    /// work queue, so a loopback peer pushed 128 MB to 1.6 GB more before it did (docs/IOS.md).
    /// Apple's URLSession is expected to stop, as the tests below assert there; unverified here.
    var stopsReadingAtTheCap: Bool { self != .corelibsURLSession }

    /// Connections outlive their client: libcurl's process-wide share. A URLSession (one per
    /// HTTPClient) keeps its connections to itself, on every platform.
    var sharesConnectionsAcrossClients: Bool { self == .curl }
}

/// After a refused endless body, where the transport stops reading at the cap
/// (`Transport.stopsReadingAtTheCap`): no stream was read to the server's cap, and (for one
/// stream) under `sentBelow` bytes went out: socket buffers, not the stream.
func expectNotReadOn(_ server: EndlessServer, sentBelow: Int? = 16 << 20, sourceLocation: SourceLocation = #_sourceLocation) {
    guard Transport.current.stopsReadingAtTheCap else { return }
    #expect(server.streamsReadToCap == 0, "\(server.streamsReadToCap) endless streams were read to the server's cap", sourceLocation: sourceLocation)
    if let sentBelow {
        #expect(server.endlessBytesSent < sentBelow, "\(server.endlessBytesSent) bytes went out before the client hung up", sourceLocation: sourceLocation)
    }
}
