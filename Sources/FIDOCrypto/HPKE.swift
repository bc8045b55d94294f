/// Hybrid Public Key Encryption, RFC 9180, base mode, single-shot, with the suite
/// DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM (kem 0x0020, kdf 0x0001, aead 0x0002):
/// what a passkey export is encrypted to a recipient's key with (CXF's exchange protocol uses
/// HPKE too). Every primitive comes from libcrypto through this module's types.
public enum HPKE {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// `enc` is no X25519 public key, or a small-order one.
        case invalidEncapsulatedKey
        /// The ciphertext does not open with this key and info (another recipient, or altered).
        case openFailed
        case crypto(CryptoError)

        public var description: String {
            switch self {
            case .invalidEncapsulatedKey: "the encapsulated key is not a usable X25519 public key"
            case .openFailed: "it does not decrypt with this private key (encrypted to another key, or altered)"
            case let .crypto(error): "\(error)"
            }
        }
    }

    static let kemSuiteID: [UInt8] = Array("KEM".utf8) + [0x00, 0x20]
    static let suiteID: [UInt8] = Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x02]
    static let nonceByteCount = 12
    static let keyByteCount = 32   // AES-256-GCM's Nk

    /// Encrypts `plaintext` to `recipient`: the encapsulated key `enc` (32 bytes) and the
    /// ciphertext with its 16-byte tag appended. `ephemeral` is for test vectors only.
    public static func seal(_ plaintext: [UInt8], to recipient: X25519.PublicKey, info: [UInt8], aad: [UInt8],
                            ephemeral: X25519.PrivateKey? = nil) throws(Failure) -> (enc: [UInt8], ciphertext: [UInt8]) {
        do {
            let ephemeral = try ephemeral ?? X25519.PrivateKey()
            let enc = ephemeral.publicKey.rawRepresentation
            var shared = try sharedSecret(dh: ephemeral.sharedSecret(with: recipient),
                                          enc: enc, recipient: recipient.rawRepresentation)
            defer { shared.wipe() }
            let (key, nonce) = keySchedule(sharedSecret: shared, info: info, keyByteCount: keyByteCount)
            let (ciphertext, tag) = try AES256GCM.seal(plaintext, key: key, nonce: nonce, authenticating: aad)
            return (enc, ciphertext + tag)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .crypto(error as? CryptoError ?? .invalidKey)
        }
    }

    /// Decrypts what `seal` made for `recipient`'s public key.
    public static func open(_ ciphertext: [UInt8], enc: [UInt8], recipient: X25519.PrivateKey, info: [UInt8],
                            aad: [UInt8]) throws(Failure) -> SecretBytes {
        guard ciphertext.count >= 16 else { throw .openFailed }
        var shared: [UInt8]
        do {
            let ephemeral = try X25519.PublicKey(rawRepresentation: enc)
            shared = try sharedSecret(dh: recipient.sharedSecret(with: ephemeral), enc: enc,
                                      recipient: recipient.publicKey.rawRepresentation)
        } catch {
            throw .invalidEncapsulatedKey
        }
        defer { shared.wipe() }
        let (key, nonce) = keySchedule(sharedSecret: shared, info: info, keyByteCount: keyByteCount)
        do {
            var plaintext = try AES256GCM.open(Array(ciphertext.dropLast(16)), tag: Array(ciphertext.suffix(16)),
                                               key: key, nonce: nonce, authenticating: aad)
            defer { plaintext.wipe() }
            return SecretBytes(plaintext)
        } catch {
            throw .openFailed
        }
    }

    // MARK: RFC 9180 §4 and §5.1, for the base mode

    /// DHKEM's ExtractAndExpand (§4.1): kem_context = enc ‖ pkR.
    static func sharedSecret(dh: SecretBytes, enc: [UInt8], recipient: [UInt8]) -> [UInt8] {
        var eaePRK = dh.withUnsafeBytes { labeledExtract(salt: [], label: "eae_prk", ikm: Array($0), suiteID: kemSuiteID) }
        defer { eaePRK.wipe() }
        return labeledExpand(prk: eaePRK, label: "shared_secret", info: enc + recipient, length: 32, suiteID: kemSuiteID)
    }

    /// KeySchedule for mode_base (no PSK): the AEAD key and base nonce. `keyByteCount` is the
    /// AEAD's Nk (32 here; 16 lets the RFC's AES-128-GCM vectors check the schedule).
    static func keySchedule(sharedSecret: [UInt8], info: [UInt8], keyByteCount: Int) -> (key: SecretBytes, nonce: [UInt8]) {
        let pskIDHash = labeledExtract(salt: [], label: "psk_id_hash", ikm: [], suiteID: suiteID)
        let infoHash = labeledExtract(salt: [], label: "info_hash", ikm: info, suiteID: suiteID)
        let context = [0x00] + pskIDHash + infoHash
        var secret = labeledExtract(salt: sharedSecret, label: "secret", ikm: [], suiteID: suiteID)
        defer { secret.wipe() }
        let key = SecretBytes(wiping: labeledExpand(prk: secret, label: "key", info: context, length: keyByteCount, suiteID: suiteID))
        let nonce = labeledExpand(prk: secret, label: "base_nonce", info: context, length: nonceByteCount, suiteID: suiteID)
        return (key, nonce)
    }

    static func labeledExtract(salt: [UInt8], label: String, ikm: [UInt8], suiteID: [UInt8]) -> [UInt8] {
        var labeled = Array("HPKE-v1".utf8) + suiteID + Array(label.utf8) + ikm
        defer { labeled.wipe() }
        // RFC 5869 Extract: HMAC-Hash(salt, IKM), an empty salt being HashLen zeros.
        return HMACSHA256.authenticationCode(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, data: labeled)
    }

    static func labeledExpand(prk: [UInt8], label: String, info: [UInt8], length: Int, suiteID: [UInt8]) -> [UInt8] {
        precondition(length > 0 && length <= 255 * 32)
        let labeledInfo = [UInt8(length >> 8), UInt8(length & 0xFF)] + Array("HPKE-v1".utf8) + suiteID + Array(label.utf8) + info
        // RFC 5869 Expand: T(i) = HMAC(PRK, T(i-1) ‖ info ‖ i).
        var output: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            block = HMACSHA256.authenticationCode(key: prk, data: block + labeledInfo + [counter])
            output += block
            counter += 1
        }
        block.wipe()
        let result = Array(output.prefix(length))
        output.wipe()
        return result
    }
}
