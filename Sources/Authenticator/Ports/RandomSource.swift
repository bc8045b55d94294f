import FIDOCrypto

/// Randomness port for nonces and identifiers (key generation itself happens inside libcrypto).
public protocol RandomSource: Sendable {
    func bytes(count: Int) -> [UInt8]
}

/// The system CSPRNG through libcrypto.
public struct SystemRandom: RandomSource {
    public init() {}
    public func bytes(count: Int) -> [UInt8] { SecureRandom.bytes(count: count) }
}
