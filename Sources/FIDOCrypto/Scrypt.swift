import COpenSSL

/// scrypt (RFC 7914) through OpenSSL's `EVP_KDF` "SCRYPT": the passphrase KDF of a store whose
/// master key is sealed with a passphrase. Its memory cost (128 · N · r bytes) is what makes an
/// offline guess expensive; the parameters are kept with what they protect.
public enum Scrypt {
    static let kdf = FetchedKDF("SCRYPT")

    /// The parameter names, as C strings that live as long as the process: an `OSSL_PARAM` keeps
    /// its key's pointer, and one-letter literals have no StaticString pointer to lend.
    enum Keys {
        nonisolated(unsafe) static let n = UnsafePointer<CChar>(strdup("n")!)
        nonisolated(unsafe) static let r = UnsafePointer<CChar>(strdup("r")!)
        nonisolated(unsafe) static let p = UnsafePointer<CChar>(strdup("p")!)
        nonisolated(unsafe) static let maximumMemory = UnsafePointer<CChar>(strdup("maxmem_bytes")!)
    }

    public struct Parameters: Sendable, Equatable {
        /// log2 of the CPU/memory cost N.
        public var logN: UInt8
        public var r: UInt32
        public var p: UInt32

        public init(logN: UInt8, r: UInt32, p: UInt32) { self.logN = logN; self.r = r; self.p = p }

        /// N = 2^17, r = 8, p = 1: 128 MiB of memory per guess (and about half a second here).
        public static let `default` = Parameters(logN: 17, r: 8, p: 1)

        /// Bytes of memory one derivation needs.
        public var memoryBytes: UInt64 { 128 * (UInt64(1) << UInt64(logN)) * UInt64(r) }

        /// What OpenSSL needs for them: 128·r·(N + p + 2) bytes (its V and B arrays).
        var opensslMemoryBytes: UInt64 { 128 * UInt64(r) * ((UInt64(1) << UInt64(logN)) + UInt64(p) + 2) }

        /// The most work a file may ask for, N·r·p: 16 times the default's 2^20 (about 8 s on a
        /// laptop). Memory alone is no bound: `logN 10, r 1, p 16000000` needs 1 MiB and runs for
        /// hours, before anything in the file is authenticated (issue 34).
        public static let maximumWork: UInt64 = 1 << 24
        /// The most parallel lanes a file may ask for (OpenSSL runs them one after another).
        public static let maximumParallelism: UInt32 = 16

        /// N·r·p: how many Salsa20/8 block mixes, in units of the default's 1/2^20.
        public var work: UInt64 { (UInt64(1) << UInt64(min(logN, 63))) &* UInt64(r) &* UInt64(p) }

        /// Within what a store or a file may ask of a machine and OpenSSL accepts: 2^10 ≤ N ≤ 2^22,
        /// N < 2^(16·r) (RFC 7914), 1 ≤ p ≤ 16, N·r·p ≤ 2^24, at most 4 GiB.
        public var isReasonable: Bool { problem == nil }

        /// What is out of range, naming the limit; nil when the parameters are reasonable.
        public var problem: String? {
            guard (10...22).contains(logN) else { return "scrypt logN \(logN) is outside 10 to 22" }
            guard r >= 1, p >= 1 else { return "scrypt r and p must be at least 1" }
            guard UInt64(logN) < 16 * UInt64(r) else { return "scrypt N = 2^\(logN) is too large for r = \(r) (RFC 7914)" }
            guard p <= Self.maximumParallelism else {
                return "scrypt p = \(p) is more than \(Self.maximumParallelism), the most Latchkey runs"
            }
            guard UInt64(r) <= Self.maximumWork, work <= Self.maximumWork else {
                return "scrypt work N·r·p = 2^\(logN)·\(r)·\(p) is more than 2^24 (16 times the default), the most Latchkey runs"
            }
            guard opensslMemoryBytes <= 4 << 30 else { return "scrypt would need \(opensslMemoryBytes >> 20) MiB, more than 4 GiB" }
            return nil
        }
    }

    /// `count` bytes derived from `passphrase` and `salt`; `.invalidLength` for parameters
    /// outside `isReasonable`.
    public static func deriveKey(passphrase: SecretBytes, salt: [UInt8], parameters: Parameters,
                                 count: Int = 32) throws(CryptoError) -> SecretBytes {
        guard parameters.isReasonable, count > 0, count <= 64 else { throw .invalidLength }
        let context = try EVPKDFContext(kdf)
        var n = UInt64(1) << UInt64(parameters.logN)
        var r = parameters.r
        var p = parameters.p
        var maximumMemory = parameters.opensslMemoryBytes + (1 << 20)
        var output = try passphrase.withUnsafeBytes { (pass) throws(CryptoError) -> [UInt8] in
            try salt.withBytes { (saltBytes) throws(CryptoError) -> [UInt8] in
                try withUnsafeMutableBytes(of: &n) { (nBytes) throws(CryptoError) -> [UInt8] in
                    try withUnsafeMutableBytes(of: &r) { (rBytes) throws(CryptoError) -> [UInt8] in
                        try withUnsafeMutableBytes(of: &p) { (pBytes) throws(CryptoError) -> [UInt8] in
                            try withUnsafeMutableBytes(of: &maximumMemory) { (memory) throws(CryptoError) -> [UInt8] in
                                // OSSL_PARAM keeps its key's pointer: immortal keys (Keys).
                                let parameters = [
                                    OSSLParameter.octets("pass", pass), OSSLParameter.octets("salt", saltBytes),
                                    OSSL_PARAM_construct_uint64(Keys.n, nBytes.baseAddress!.assumingMemoryBound(to: UInt64.self)),
                                    OSSL_PARAM_construct_uint32(Keys.r, rBytes.baseAddress!.assumingMemoryBound(to: UInt32.self)),
                                    OSSL_PARAM_construct_uint32(Keys.p, pBytes.baseAddress!.assumingMemoryBound(to: UInt32.self)),
                                    OSSL_PARAM_construct_uint64(Keys.maximumMemory, memory.baseAddress!.assumingMemoryBound(to: UInt64.self)),
                                ]
                                return try withParameters(parameters) { (list) throws(CryptoError) -> [UInt8] in
                                    try makeBytes(count: count) { (out) throws(CryptoError) -> Int in
                                        try check("EVP_KDF_derive", EVP_KDF_derive(context.pointer, out.uint8Pointer, out.count, list))
                                        return out.count
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        defer { output.wipe() }
        return SecretBytes(output)
    }
}
