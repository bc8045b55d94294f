import COpenSSL
import Synchronization

/// A small free list of `EVP_PKEY_CTX`s that have already been initialised for
/// one operation. OpenSSL 3 spends a noticeable share of a P-256 operation
/// creating and initialising contexts (provider method lookup), and an
/// initialised context can be reused for any number of sequential operations
/// but never concurrently; the pool hands each context to one caller at a time.
final class EVPPKeyContextPool: Sendable {
    private let idle = Mutex<[EVPPKeyContext]>([])
    private let capacity: Int
    private let make: @Sendable () throws(CryptoError) -> EVPPKeyContext

    init(capacity: Int, make: @escaping @Sendable () throws(CryptoError) -> EVPPKeyContext) {
        self.capacity = capacity
        self.make = make
    }

    func withContext<R>(_ body: (EVPPKeyContext) throws(CryptoError) -> R) throws(CryptoError) -> R {
        let recycled = idle.withLock { $0.popLast() }
        let context: EVPPKeyContext
        if let recycled { context = recycled } else { context = try make() }
        // A context whose operation failed is dropped rather than recycled.
        let result = try body(context)
        idle.withLock { if $0.count < capacity { $0.append(context) } }
        return result
    }
}
