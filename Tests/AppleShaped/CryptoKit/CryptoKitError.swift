import Foundation

/// https://developer.apple.com/documentation/cryptokit/cryptokiterror — only the cases this
/// shim throws.
public enum CryptoKitError: Error {
    /// https://developer.apple.com/documentation/cryptokit/cryptokiterror/incorrectkeysize
    case incorrectKeySize
    /// https://developer.apple.com/documentation/cryptokit/cryptokiterror/incorrectparametersize
    case incorrectParameterSize
    /// https://developer.apple.com/documentation/cryptokit/cryptokiterror/authenticationfailure
    case authenticationFailure
    /// https://developer.apple.com/documentation/cryptokit/cryptokiterror/underlyingcorecryptoerror(error:)
    case underlyingCoreCryptoError(error: Int32)
}
