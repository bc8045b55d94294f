import FIDOCrypto
import Synchronization

/// A reproducible random stream for test rigs (`latchkey rig`, addAuthenticator `seed`): the
/// same seed, a fresh store and the same requests give the same credential IDs and public keys,
/// for fixtures that can be checked in. Output block i is HMAC-SHA-256(SHA-256(seed), i), i a
/// 64-bit counter; every byte handed out is new, so within one key's life no nonce repeats.
/// Never for a key that protects anything: whoever knows the seed has every key.
public final class DeterministicRandom: RandomSource, Sendable {
    private let key: HMACSHA256.KeyedContext
    private let state = Mutex<(counter: UInt64, buffer: [UInt8])>((0, []))

    public init(seed: [UInt8]) {
        key = HMACSHA256.KeyedContext(key: SecretBytes(wiping: SHA256.hash(seed)))
    }

    public var derivesKeys: Bool { true }

    public func bytes(count: Int) -> [UInt8] {
        state.withLock { state in
            while state.buffer.count < count {
                state.counter += 1
                state.buffer += key.authenticationCode(withUnsafeBytes(of: state.counter.bigEndian) { Array($0) })
            }
            defer { state.buffer.removeFirst(count) }
            return Array(state.buffer.prefix(count))
        }
    }

    public func secret(count: Int) -> SecretBytes { SecretBytes(wiping: bytes(count: count)) }
}
