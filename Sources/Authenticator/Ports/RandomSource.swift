import FIDOCrypto

/// Randomness port: nonces and identifiers, and the secrets a key makes (credential keys, the
/// wrapping key, CredRandoms, large-blob keys).
public protocol RandomSource: Sendable {
    func bytes(count: Int) -> [UInt8]
    /// `count` random bytes that are public and must only never repeat (the nonce sealed into a
    /// credential ID); the system source cuts them from a pool (`NoncePool`).
    func nonce(count: Int) -> [UInt8]
    /// A fresh secret of `count` bytes.
    func secret(count: Int) -> SecretBytes
    /// True for a source whose output is reproducible (`DeterministicRandom`): the key then
    /// derives its credential keys from it instead of asking libcrypto to generate them.
    var derivesKeys: Bool { get }
}

extension RandomSource {
    public func nonce(count: Int) -> [UInt8] { bytes(count: count) }
    public func secret(count: Int) -> SecretBytes { SecretBytes(randomCount: count) }
    public var derivesKeys: Bool { false }
}

/// The system CSPRNG through libcrypto.
public struct SystemRandom: RandomSource {
    public init() {}
    public func bytes(count: Int) -> [UInt8] { SecureRandom.bytes(count: count) }
    public func nonce(count: Int) -> [UInt8] { NoncePool.bytes(count: count) }
}
