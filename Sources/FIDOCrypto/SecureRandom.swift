import COpenSSL

/// Public randomness (nonces, serial numbers, challenges) from OpenSSL's CSPRNG.
/// Secrets should use `SecretBytes(randomCount:)`, which draws from the
/// separate private DRBG and never exists as a plain array.
public enum SecureRandom {
    /// `count` random bytes from `RAND_bytes`. Traps only if the CSPRNG itself fails.
    public static func bytes(count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max), "SecureRandom: invalid length")
        return mustSucceed { () throws(CryptoError) -> [UInt8] in
            try makeBytes(count: count) { (buffer) throws(CryptoError) -> Int in
                if count > 0 { try check("RAND_bytes", RAND_bytes(buffer.uint8Pointer, Int32(count))) }
                return count
            }
        }
    }
}
