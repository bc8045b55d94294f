import COpenSSL

/// Secret key material: an immutable buffer, wiped when the last reference goes away,
/// readable only inside a closure.
///
/// The bytes live in a dedicated allocation rather than an `Array` so no
/// copy-on-write duplicate can outlive the wipe: in the secure heap once the process has
/// started one (`SecureHeap.start`: locked in RAM, out of core dumps), else the ordinary heap. `description`,
/// `debugDescription` and the reflection mirror show only the length.
public final class SecretBytes: @unchecked Sendable {
    // Immutable after init; concurrent readers are therefore safe.
    private let storage: UnsafeMutableRawBufferPointer
    /// Number of secret bytes.
    public let count: Int

    /// Copies `bytes`. The caller should drop its own copy as soon as possible.
    public convenience init(_ bytes: [UInt8]) {
        self.init(uninitializedCount: bytes.count)
        bytes.withUnsafeBytes(fill)
    }

    /// Takes a freshly computed temporary (a hash, an HMAC, a derived key) and wipes it, so
    /// the only copy left is this one: `SecretBytes(wiping: SHA256.hash(z))`.
    public convenience init(wiping bytes: consuming [UInt8]) {
        self.init(uninitializedCount: bytes.count)
        bytes.withUnsafeBytes(fill)
        bytes.wipe()
    }

    /// Copies bytes that live elsewhere (the caller zeroes them) without a temporary array.
    public convenience init(copying source: UnsafeRawBufferPointer) {
        self.init(uninitializedCount: source.count)
        fill(source)
    }

    /// Copies a slice (of a buffer the caller wipes) without a temporary array.
    public convenience init(_ bytes: ArraySlice<UInt8>) {
        self.init(uninitializedCount: bytes.count)
        bytes.withUnsafeBytes(fill)
    }

    /// `count` bytes from OpenSSL's private CSPRNG (`RAND_priv_bytes`).
    /// Traps only if the CSPRNG itself fails.
    public convenience init(randomCount: Int) {
        precondition(randomCount >= 0 && randomCount <= Int(Int32.max), "SecretBytes: invalid length")
        self.init(uninitializedCount: randomCount)
        mustSucceed { () throws(CryptoError) in
            if randomCount > 0 {
                try check("RAND_priv_bytes", RAND_priv_bytes(storage.uint8Pointer, Int32(randomCount)))
            }
        }
    }

    /// Builds a secret in place: `fill` writes exactly `count` bytes directly into
    /// the wiped-on-release buffer, so the secret never passes through an array.
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> Void) throws(CryptoError) {
        let buffer = Self.allocate(count: count)
        do {
            try fill(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
        } catch {
            SecureHeap.release(buffer)
            throw error
        }
        storage = buffer
        self.count = count
    }

    /// Copies `source` (exactly `count` bytes) into the buffer; the initializers' one copy.
    private func fill(_ source: UnsafeRawBufferPointer) {
        if let base = source.baseAddress { storage.baseAddress!.copyMemory(from: base, byteCount: source.count) }
    }

    private init(uninitializedCount count: Int) {
        storage = Self.allocate(count: count)
        self.count = count
    }

    private static func allocate(count: Int) -> UnsafeMutableRawBufferPointer {
        precondition(count >= 0, "SecretBytes: negative length")
        // Never allocate zero bytes so `baseAddress` is always valid.
        return SecureHeap.allocate(count: Swift.max(count, 1))
    }

    deinit {
        SecureHeap.release(storage)
    }

    /// Whether these bytes live in the secure heap (false before `SecureHeap.start`, or past
    /// its capacity).
    public var isInSecureHeap: Bool { SecureHeap.contains(storage.baseAddress!) }

    /// Read access to the secret. Do not let the pointer escape `body`.
    /// (Generic over the error type; callers see the same behaviour as `rethrows`.)
    public func withUnsafeBytes<R, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> R
    ) throws(Failure) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Appends the bytes to `array` in place: no temporary copy. `array` should have the
    /// capacity reserved (a reallocation leaves the old buffer unwiped) and be wiped by the caller.
    public func append(to array: inout [UInt8]) {
        array.append(contentsOf: UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Explicit escape hatch: returns an ordinary (un-wiped) copy of the bytes.
    public func copyBytes() -> [UInt8] {
        Array(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }
}

extension SecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "SecretBytes(\(count) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .class) }
}
