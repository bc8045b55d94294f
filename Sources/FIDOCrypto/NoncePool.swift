import COpenSSL
import Glibc
import Synchronization

/// Random nonces — AES-GCM IVs, the nonce inside a credential ID: public values whose one duty is
/// never to repeat — cut from one `RAND_bytes` call per 512 bytes. A `RAND_bytes` call costs
/// about 7,000 instructions whatever its length (OpenSSL 3's DRBG: its context, lock and reseed
/// checks), and a resident makeCredential drew three nonces (callgrind, `scripts/profile`).
/// Never for keys or other secrets: those come from `SecureRandom` (or OpenSSL) each time.
/// A process made by fork(2) starts a pool of its own (the owner's pid is checked), so parent and
/// child never hand out the same bytes.
public enum NoncePool {
    static let refillCount = 512

    private struct State {
        var owner: pid_t = 0
        var bytes: [UInt8] = []
        var next = 0
    }

    private static let state = Mutex(State())

    /// `count` random bytes (at most 512).
    public static func bytes(count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= refillCount, "NoncePool: at most \(refillCount) bytes")
        let pid = getpid()
        return state.withLock { state in
            if state.owner != pid || state.next + count > state.bytes.count {
                state.bytes = SecureRandom.bytes(count: refillCount)
                state.next = 0
                state.owner = pid
            }
            let start = state.next
            state.next += count
            return Array(state.bytes[start..<state.next])
        }
    }
}
