import CJavaScriptCore

/// One JavaScriptCore context group: the engine's VM, whose address space is reserved once.
/// Every context of a check is made in it, so a second evaluation reserves nothing more
/// under the worker's address-space limit.
final class EngineGroup {
    let ref: JSContextGroupRef

    init() {
        ref = JSContextGroupCreate()
    }

    deinit {
        JSContextGroupRelease(ref)
    }
}

/// One JavaScriptCore context, released when the worker is done with it.
final class Engine {
    let context: JSGlobalContextRef

    init(in group: EngineGroup) {
        context = JSGlobalContextCreateInGroup(group.ref, nil)
    }

    deinit {
        JSGlobalContextRelease(context)
    }

    /// Parses `source` without running it: nil when it parses, else the engine's SyntaxError.
    func syntaxError(_ source: JSText, url: JSText) -> ThrownError? {
        var exception: JSValueRef?
        if JSCheckScriptSyntax(context, source.ref, url.ref, 1, &exception) { return nil }
        return thrown(exception)
    }

    /// Runs `source` as a script: its value, or what it threw.
    func evaluate(_ source: JSText, url: JSText) -> Result<JSValueRef?, ThrownError> {
        var exception: JSValueRef?
        let value = JSEvaluateScript(context, source.ref, nil, url.ref, 1, &exception)
        if exception != nil { return .failure(thrown(exception)) }
        return .success(value)
    }

    /// Calls `function` with no arguments: its string result as text.
    func call(_ function: JSObjectRef) -> Result<String, ThrownError> {
        var exception: JSValueRef?
        let result = JSObjectCallAsFunction(context, function, nil, 0, nil, &exception)
        if exception != nil { return .failure(thrown(exception)) }
        return .success(text(of: result))
    }

    /// What a thrown value says: its message (`String(value)`), and the `line` and `column`
    /// JavaScriptCore puts on errors (a SyntaxError from the parser has only `line`).
    func thrown(_ value: JSValueRef?) -> ThrownError {
        guard let value else { return ThrownError(message: "an exception without a value", line: nil, column: nil) }
        var line: Int?, column: Int?
        if JSValueIsObject(context, value), let object = JSValueToObject(context, value, nil) {
            line = integer(property: "line", of: object)
            column = integer(property: "column", of: object)
        }
        return ThrownError(message: text(of: value), line: line, column: column)
    }

    private func integer(property name: String, of object: JSObjectRef) -> Int? {
        let key = JSText(name)
        guard let value = JSObjectGetProperty(context, object, key.ref, nil), JSValueIsNumber(context, value) else { return nil }
        let number = JSValueToNumber(context, value, nil)
        return number.isFinite && number >= 0 && number < 1e9 ? Int(number) : nil
    }

    /// `String(value)`, or a placeholder when converting throws (a hostile `toString`).
    func text(of value: JSValueRef?) -> String {
        guard let value, let string = JSValueToStringCopy(context, value, nil) else { return "(a value that cannot be shown)" }
        defer { JSStringRelease(string) }
        return JSText.string(string)
    }
}

/// A JavaScriptCore string this code made, released with it.
final class JSText {
    let ref: JSStringRef

    init(_ text: String) {
        ref = JSText.make(Array(text.utf16))
    }

    init(utf16: ArraySlice<UInt16>) {
        ref = JSText.make(Array(utf16))
    }

    deinit {
        JSStringRelease(ref)
    }

    private static func make(_ units: [UInt16]) -> JSStringRef {
        units.withUnsafeBufferPointer { JSStringCreateWithCharacters($0.baseAddress, $0.count) }
    }

    /// The UTF-8 text of a JavaScriptCore string (not released here).
    static func string(_ ref: JSStringRef) -> String {
        let count = JSStringGetLength(ref)
        guard count > 0, let characters = JSStringGetCharactersPtr(ref) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: characters, count: count), as: UTF16.self)
    }
}

/// An exception the engine reported: its message and where, when it says.
struct ThrownError: Error {
    var message: String
    var line: Int?
    var column: Int?
}
