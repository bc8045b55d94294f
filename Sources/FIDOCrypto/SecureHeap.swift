import COpenSSL
import Synchronization

/// OpenSSL's secure heap (`CRYPTO_secure_malloc_init`): one mapping, locked in RAM (`mlock`),
/// left out of core dumps (`MADV_DONTDUMP`), between guard pages. Once a process starts it,
/// every `SecretBytes` lives there, and so do OpenSSL's own copies of private keys (EC private
/// scalars are `BN_secure_new`, Ed25519 seeds `OPENSSL_secure_zalloc`), so neither swap nor a
/// core written despite `ProcessHardening` holds a key. A full heap is not an error: a secret
/// allocated past it goes to the ordinary heap, still wiped on release.
public enum SecureHeap {
    /// What `start` achieved.
    public enum State: Equatable, Sendable {
        /// No secure heap: OpenSSL built without it, or the mapping failed.
        case off
        /// Mapped and out of core dumps, but `mlock` or `madvise` was refused (RLIMIT_MEMLOCK):
        /// its pages may be swapped.
        case unlocked
        /// Mapped, locked in RAM and out of core dumps.
        case locked
    }

    /// 1 MiB: a credential's key takes about 100 bytes here (its scalar, OpenSSL's copy), so
    /// this holds every secret a busy key has open at once many times over. Locked memory
    /// counts against RLIMIT_MEMLOCK (8 MiB by default on Debian).
    public static let defaultByteCount = 1 << 20
    /// The heap's smallest block: a 32-byte key takes one.
    static let minimumBlock = 32

    /// Start the process's secure heap (once: a second call only reports the state). Call it
    /// before any secret is made; secrets made earlier stay on the ordinary heap.
    @discardableResult
    public static func start(byteCount: Int = defaultByteCount) -> State {
        precondition(byteCount > 0 && byteCount & (byteCount - 1) == 0, "SecureHeap: the size must be a power of two")
        return startedState.withLock { state in
            if CRYPTO_secure_malloc_initialized() == 1 { return state }
            state = switch CRYPTO_secure_malloc_init(byteCount, minimumBlock) {
            case 1: .locked
            case 2: .unlocked
            default: .off
            }
            return state
        }
    }

    /// Whether `start` has given this process a secure heap.
    public static var isStarted: Bool { CRYPTO_secure_malloc_initialized() == 1 }

    /// Bytes of the secure heap in use now (blocks, so rounded up to powers of two).
    public static var bytesInUse: Int { CRYPTO_secure_used() }

    /// A zeroed allocation of `count` bytes: in the secure heap when there is one and it has
    /// room, else on the ordinary heap. Release it with `release`.
    static func allocate(count: Int) -> UnsafeMutableRawBufferPointer {
        precondition(count > 0, "SecureHeap: empty allocation")
        // A full secure heap records an OpenSSL error; it is not one of ours, so it is
        // dropped rather than left for the next `check` to report.
        ERR_set_mark()
        if let pointer = CRYPTO_secure_zalloc(count, nil, 0) {
            ERR_clear_last_mark()
            return UnsafeMutableRawBufferPointer(start: pointer, count: count)
        }
        ERR_pop_to_mark()
        guard let pointer = CRYPTO_zalloc(count, nil, 0) else { fatalError("SecretBytes: out of memory") }
        return UnsafeMutableRawBufferPointer(start: pointer, count: count)
    }

    /// Wipe and free an allocation from `allocate` (either heap).
    static func release(_ buffer: UnsafeMutableRawBufferPointer) {
        CRYPTO_secure_clear_free(buffer.baseAddress, buffer.count, nil, 0)
    }

    /// Whether `pointer` lies in the secure heap.
    static func contains(_ pointer: UnsafeRawPointer) -> Bool {
        CRYPTO_secure_allocated(pointer) == 1
    }

    /// The state the first `start` reached.
    private static let startedState = Mutex<State>(.off)
}
