import Foundation
import PatchCore
internal import CCurl

/// One HTTP/2 connection to APNs: a libcurl easy handle owned by this object and used by
/// one thread at a time (PushSender gives each worker its own), kept alive across requests.
final class APNsConnection {

    private let handle: UnsafeMutableRawPointer  // CURL*

    /// Once per process, before the first handle: PushSender opens its connections on
    /// several threads at once, and libcurl's implicit global init is not thread-safe.
    static let initialized: Bool = hp_curl_global_init() == CURLE_OK
    private let timeout: TimeInterval

    init(timeout: TimeInterval) throws(PushError) {
        guard APNsConnection.initialized, let handle = curl_easy_init() else { throw .configuration("curl_easy_init failed: libcurl is unusable") }
        self.handle = handle
        self.timeout = timeout
    }

    deinit { curl_easy_cleanup(handle) }

    /// `POST {base}/3/device/{token}`: what APNs answered, or status 0 and libcurl's account
    /// when no answer came (connection, TLS, timeout, not HTTP/2).
    func post(base: URL, caFile: String?, token: String, headers: [(String, String)], body: [UInt8]) -> APNsAnswer {
        curl_easy_reset(handle)  // options only: the connection stays
        var base = base.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        list = curl_slist_append(list, "Expect:")
        defer { curl_slist_free_all(list) }
        let seconds = max(1, Int(timeout.rounded(.up)))
        _ = "\(base)/3/device/\(token)".withCString { hp_curl_setopt_string(handle, CURLOPT_URL, $0) }
        _ = hp_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "https")
        _ = hp_curl_use_http2(handle)
        if let caFile { _ = caFile.withCString { hp_curl_setopt_string(handle, CURLOPT_CAINFO, $0) } }
        _ = hp_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = hp_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = hp_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, seconds)
        _ = hp_curl_setopt_long(handle, CURLOPT_TIMEOUT, seconds)
        _ = hp_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        _ = hp_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, body.count)
        var bytes = body.map { CChar(bitPattern: $0) }
        bytes.append(0)
        _ = bytes.withUnsafeBufferPointer { hp_curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
        let sink = Sink(), head = Sink()
        _ = hp_curl_set_write(handle, collect, Unmanaged.passUnretained(sink).toOpaque())
        _ = hp_curl_set_header(handle, collect, Unmanaged.passUnretained(head).toOpaque())
        let code = withExtendedLifetime((sink, head)) { curl_easy_perform(handle) }
        guard code == CURLE_OK else {
            return APNsAnswer(status: 0, reason: nil, apnsID: nil, unanswered: String(cString: curl_easy_strerror(code)))
        }
        guard hp_curl_http_version(handle) == Int(CURL_HTTP_VERSION_2_0) else {
            return APNsAnswer(status: 0, reason: nil, apnsID: nil, unanswered: "the host did not speak HTTP/2")
        }
        let reason = (try? JSONParser.parse(sink.bytes, maxDepth: 3, maxLength: Sink.limit))?["reason"]?.stringValue
        return APNsAnswer(status: Int(hp_curl_response_code(handle)), reason: reason, apnsID: APNsConnection.apnsID(head.bytes), unanswered: nil)
    }

    /// The `apns-id` header of an answer's head (APNs' name for the notification).
    static func apnsID(_ head: [UInt8]) -> String? {
        for line in String(decoding: head, as: UTF8.self).split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "apns-id" else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            return value.isEmpty ? nil : String(value.prefix(64))
        }
        return nil
    }
}

@available(*, unavailable) extension APNsConnection: Sendable {}

/// An answer's body or head, kept up to 4 KiB (APNs sends `{"reason": …}` and a few headers).
private final class Sink {
    static let limit = 4096
    var bytes: [UInt8] = []
}

private let collect: hp_curl_data_callback = { data, size, count, context in
    let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    guard let data, length > 0 else { return length }
    guard sink.bytes.count + length <= Sink.limit else { return 0 }
    sink.bytes += UnsafeRawBufferPointer(start: data, count: length)
    return length
}
