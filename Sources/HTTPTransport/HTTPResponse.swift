import Foundation
import WireFormat
import Synchronization

/// An immutable HTTP response. Responses the catalog prepares once (metadata files,
/// bundles, 304s) are shared by every request that gets them; the transport may attach its
/// own native form in `nativeSlot` the first time it sends one and reuse it afterwards.
public final class HTTPResponse: Sendable {
    public let status: Int
    public let headers: [(String, String)]
    public let body: [UInt8]
    /// True for responses built once and served many times.
    public let prepared: Bool
    package let nativeSlot = NativeSlot()

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], prepared: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.prepared = prepared
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    /// This response with one more header: a per-request answer built on a prepared one
    /// (the body is shared, not copied).
    public func adding(_ header: (String, String)) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers + [header], body: body)
    }

    public var bodyString: String { String(decoding: body, as: UTF8.self) }

    public static func json(_ value: JSON, status: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: value.canonicalBytes + [0x0A])
    }

    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }
}

/// Holds one retained object of the transport's choosing, installed at most once without a lock
/// (the check path runs on every worker thread at once).
package final class NativeSlot: Sendable {
    private let bits = Atomic<Int>(0)

    package func object<T: AnyObject>(as type: T.Type, orInstall make: () -> T?) -> T? {
        let current = bits.load(ordering: .acquiring)
        if current != 0 { return Unmanaged<T>.fromOpaque(UnsafeRawPointer(bitPattern: current)!).takeUnretainedValue() }
        guard let made = make() else { return nil }
        let pointer = Int(bitPattern: Unmanaged.passRetained(made).toOpaque())
        let (exchanged, original) = bits.compareExchange(expected: 0, desired: pointer, ordering: .acquiringAndReleasing)
        if exchanged { return made }
        // Another thread installed first: use theirs, drop ours.
        Unmanaged<T>.fromOpaque(UnsafeRawPointer(bitPattern: pointer)!).release()
        return Unmanaged<T>.fromOpaque(UnsafeRawPointer(bitPattern: original)!).takeUnretainedValue()
    }

    deinit {
        let current = bits.load(ordering: .acquiring)
        if current != 0 { Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: current)!).release() }
    }
}
