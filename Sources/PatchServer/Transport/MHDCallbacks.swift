import Foundation
import Synchronization
internal import CMicroHTTPD

/// What the C callbacks need; immutable, shared by every worker thread.
final class ServerContext: Sendable {
    let handler: HTTPServer.Handler
    let maxBodySize: Int
    let tooLarge: HTTPResponse
    /// Requests between their first callback and their completion, for draining.
    let inFlight = Atomic<Int>(0)

    init(handler: @escaping HTTPServer.Handler, maxBodySize: Int) {
        self.handler = handler
        self.maxBodySize = maxBodySize
        self.tooLarge = HTTPError.tooLarge(maxBodySize).response
    }
}

/// Per-request state, retained into MHD's `*con_cls` and released when the request completes.
final class RequestState {
    var body: [UInt8] = []
    var tooLarge = false
}

/// A response in libmicrohttpd's form, built once for a prepared `HTTPResponse` and queued
/// for every request that gets it. MHD reference-counts queued responses and frees the
/// copied buffer (MUST_FREE) when the last connection is done with it.
final class NativeResponse {
    let pointer: OpaquePointer

    init?(_ response: HTTPResponse) {
        guard let pointer = NativeResponse.make(response) else { return nil }
        self.pointer = pointer
    }

    static func make(_ response: HTTPResponse) -> OpaquePointer? {
        let count = response.body.count
        let made: OpaquePointer?
        if count == 0 {
            made = MHD_create_response_from_buffer(0, nil, MHD_ResponseMemoryMode.RESPMEM_PERSISTENT)
        } else {
            made = response.body.withUnsafeBytes { MHD_create_response_from_buffer(count, UnsafeMutableRawPointer(mutating: $0.baseAddress), MHD_ResponseMemoryMode.RESPMEM_MUST_COPY) }
        }
        guard let made else { return nil }
        for (name, value) in response.headers { _ = MHD_add_response_header(made, name, value) }
        return made
    }

    deinit { MHD_destroy_response(pointer) }
}

private func clientAddress(_ connection: OpaquePointer) -> String {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
        guard hp_mhd_client_ip(connection, buffer.baseAddress!, socklen_t(buffer.count)) == 0 else { return "unknown" }
        return String(cString: buffer.baseAddress!)
    }
}

private func joinedHeader(_ connection: OpaquePointer, _ name: String) -> String? {
    // Headers are bounded by the connection's memory limit, so at most two passes.
    var capacity = 1024
    while true {
        let (length, text) = withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer -> (Int, String?) in
            let length = hp_mhd_header_joined(connection, name, buffer.baseAddress!, buffer.count)
            guard length >= 0, length <= buffer.count else { return (length, nil) }
            return (length, String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: length), as: UTF8.self))
        }
        if length < 0 { return nil }
        if let text { return text }
        capacity = length
    }
}

private func send(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
    if response.prepared, let native = response.nativeSlot.object(as: NativeResponse.self, orInstall: { NativeResponse(response) }) {
        return MHD_queue_response(connection, UInt32(response.status), native.pointer)
    }
    guard let made = NativeResponse.make(response) else { return MHD_Result.NO }
    defer { MHD_destroy_response(made) }
    return MHD_queue_response(connection, UInt32(response.status), made)
}

/// MHD's access handler. MHD calls it at least twice per request: first with only the
/// headers (we attach state and return; queueing a response here would make MHD answer
/// `Connection: close`), then once per body chunk, then a last time with no data, when the
/// response is queued.
let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let url, let method, let uploadDataSize, let conCls else { return MHD_Result.NO }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()

    guard let statePointer = conCls.pointee else {
        let state = RequestState()
        conCls.pointee = Unmanaged.passRetained(state).toOpaque()
        server.inFlight.add(1, ordering: .relaxed)
        if let length = MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, "Content-Length"),
            let declared = Int(String(cString: length)), declared > server.maxBodySize {
            // Refuse before reading a byte of an oversized body; MHD closes the connection.
            state.tooLarge = true
            return send(server.tooLarge, on: connection)
        }
        return MHD_Result.YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(statePointer).takeUnretainedValue()

    if uploadDataSize.pointee > 0 {
        let count = uploadDataSize.pointee
        if !state.tooLarge {
            if state.body.count + count > server.maxBodySize {
                state.tooLarge = true
                state.body = []
            } else if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                    state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                }
            }
        }
        uploadDataSize.pointee = 0
        return MHD_Result.YES
    }

    if state.tooLarge { return send(server.tooLarge, on: connection) }
    let request = HTTPRequest(
        method: String(cString: method), path: String(cString: url), body: state.body, addressLookup: { clientAddress(connection) },
        headerLookup: { name in MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, name).map { String(cString: $0) } },
        joinedHeaderLookup: { name in joinedHeader(connection, name) },
        queryLookup: { name in MHD_lookup_connection_value(connection, MHD_ValueKind.GET_ARGUMENT_KIND, name).map { String(cString: $0) } })
    return send(server.handler(request), on: connection)
}

let requestCompleted: MHD_RequestCompletedCallback = { cls, _, conCls, _ in
    guard let cls, let conCls, let statePointer = conCls.pointee else { return }
    Unmanaged<RequestState>.fromOpaque(statePointer).release()
    conCls.pointee = nil
    Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue().inFlight.subtract(1, ordering: .relaxed)
}

/// Percent-decodes a path or query value in place, as MHD's default does, except `%00`,
/// which is left as the three characters. Decoded, a NUL would end the C string early and
/// `/healthz%00xyz` would be served as `/healthz`, or `appVersion=2.3%00evil` read as `2.3`;
/// kept literal, it fails validation like any other bad character.
let unescapeKeepingNUL: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<CChar>?) -> Int = { _, _, text in
    guard let text else { return 0 }
    func hexValue(_ c: CChar) -> Int? {
        switch UInt8(bitPattern: c) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(c) - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(c) - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(c) - 55
        default: return nil
        }
    }
    var read = 0, write = 0
    while text[read] != 0 {
        if text[read] == CChar(UInt8(ascii: "%")), text[read + 1] != 0, let high = hexValue(text[read + 1]),
            text[read + 2] != 0, let low = hexValue(text[read + 2]), high << 4 | low != 0 {
            text[write] = CChar(bitPattern: UInt8(high << 4 | low))
            read += 3
        } else {
            text[write] = text[read]
            read += 1
        }
        write += 1
    }
    text[write] = 0
    return write
}
