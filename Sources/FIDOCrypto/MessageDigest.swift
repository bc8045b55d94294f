import COpenSSL

/// A SHA-2 hash by value, for code that is told which one to use (an ECDSA suite: ES256 and
/// ES256K hash with SHA-256, ES384 with SHA-384, ES512 with SHA-512). `SHA256` stays the
/// direct spelling where the hash is fixed by the protocol.
public struct MessageDigest: Sendable, Equatable, CustomStringConvertible {
    /// "SHA-256", "SHA-384", "SHA-512".
    public let name: String
    /// Digest length in bytes.
    public let byteCount: Int
    let implementation: FetchedDigest

    public static let sha256 = MessageDigest(name: "SHA-256", byteCount: 32, implementation: FetchedDigest("SHA256"))
    public static let sha384 = MessageDigest(name: "SHA-384", byteCount: 48, implementation: FetchedDigest("SHA384"))
    public static let sha512 = MessageDigest(name: "SHA-512", byteCount: 64, implementation: FetchedDigest("SHA512"))

    public var description: String { name }

    public static func == (lhs: MessageDigest, rhs: MessageDigest) -> Bool {
        lhs.implementation === rhs.implementation
    }

    /// The digest of `data`.
    public func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash(bytes: $0) }
    }

    /// One-shot `EVP_Digest` over a raw buffer.
    func hash(bytes: UnsafeRawBufferPointer) -> [UInt8] {
        mustSucceed { () throws(CryptoError) -> [UInt8] in
            try bytes.withNonNullBase { (input) throws(CryptoError) -> [UInt8] in
                try makeBytes(count: byteCount) { (output) throws(CryptoError) -> Int in
                    var length: UInt32 = 0
                    try check("EVP_Digest", EVP_Digest(input.baseAddress, input.count, output.uint8Pointer,
                                                       &length, implementation.pointer, nil))
                    return Int(length)
                }
            }
        }
    }
}
