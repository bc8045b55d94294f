/// Every failure FIDOCrypto reports. Errors coming out of OpenSSL carry the
/// failing function and the drained error-queue text (see `OpenSSLCheck.swift`);
/// the other cases describe bad input. No case ever carries secret material.
public enum CryptoError: Error, Equatable, Sendable {
    /// An OpenSSL call failed; `reason` is the library's error queue, joined by "; ".
    case openSSL(function: String, reason: String)
    /// A key encoding is malformed or out of range (wrong length, not on the
    /// curve, scalar 0 or ≥ n, …).
    case invalidKey
    /// A key, nonce, IV, tag, digest or message has a length the algorithm does not accept.
    case invalidLength
    /// AES-GCM tag verification failed: ciphertext, tag, AAD, nonce or key differ.
    case authenticationFailure
    /// A signature is not a well-formed encoding.
    case invalidSignatureEncoding
    /// Certificate creation or parsing failed.
    case certificate(String)
}

extension CryptoError: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .openSSL(function, reason): "CryptoError.openSSL(\(function): \(reason))"
        case .invalidKey: "CryptoError.invalidKey"
        case .invalidLength: "CryptoError.invalidLength"
        case .authenticationFailure: "CryptoError.authenticationFailure"
        case .invalidSignatureEncoding: "CryptoError.invalidSignatureEncoding"
        case let .certificate(message): "CryptoError.certificate(\(message))"
        }
    }
}
