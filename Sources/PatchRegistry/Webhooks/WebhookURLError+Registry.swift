import PatchPush

extension RegistryError {
    /// `body`'s value, or its refusal of a webhook URL (PatchPush checks URLs and addresses
    /// without knowing the registry) as the registry's error: a bad call, bad input (a host
    /// that does not resolve), or a forbidden destination.
    static func checking<Value>(_ body: () throws(WebhookURLError) -> Value) throws(RegistryError) -> Value {
        do { return try body() } catch {
            switch error {
            case .invalid(let message): throw .invalidCall(message)
            case .unresolved(let message): throw .invalidInput(message)
            case .forbidden(let message): throw .forbidden(message)
            }
        }
    }
}
