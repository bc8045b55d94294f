import CTAP
import FIDOCrypto

/// What a credential ID carries once opened.
struct CredentialSource {
    var isResident: Bool
    var algorithm: COSEAlgorithm
    var credProtect: CredentialProtectionPolicy
    var privateKey: SecretBytes
    /// Created with the hmac-secret extension (its CredRandom values are derived, not stored).
    var hasHMACSecret = false
    /// Created with thirdPartyPayment: true (CTAP 2.2 §12.9).
    var isThirdPartyPayment = false
}

/// Credential IDs are the credential's private key sealed with AES-256-GCM under the device
/// wrapping key, with the rpIdHash as associated data (docs/architecture.md, Credentials and the store):
/// non-discoverable credentials need no storage, and an ID presented for another RP, from
/// another key, or altered in any bit simply fails to open.
///
/// Layout: version(1) ‖ nonce(12) ‖ AES-GCM(flags(1) ‖ alg(1) ‖ credProtect(1) ‖ key(n)) ‖ tag(16),
/// where n is the algorithm's key length: 64 bytes for ES256, EdDSA, ES256K and ML-DSA (32-byte
/// keys; an ML-DSA key is its FIPS 204 seed),
/// 80 for ES384, 98 for ES512. flags: 0x01 resident, 0x02 hmac-secret, 0x04 thirdPartyPayment
/// (IDs made before it have the bit clear: not payment credentials, which is what they are).
struct CredentialIDCodec {
    static let version: UInt8 = 0x01
    /// Everything but the key.
    static let overhead = 1 + 12 + 3 + 16
    /// An ES256 credential's ID length (and EdDSA's, ES256K's).
    static let length = overhead + 32
    /// The lengths an ID of this key can have, one per key length.
    static let lengths = Set(COSEAlgorithm.credentialAlgorithms.compactMap { CredentialPrivateKey.secretByteCount($0) }
        .map { overhead + $0 })

    let wrappingKey: SecretBytes

    func seal(_ source: CredentialSource, rpIDHash: [UInt8], nonce: [UInt8]) throws(CTAP2StatusCode) -> [UInt8] {
        let flags: UInt8 = (source.isResident ? 0x01 : 0x00) | (source.hasHMACSecret ? 0x02 : 0x00)
            | (source.isThirdPartyPayment ? 0x04 : 0x00)
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(3 + source.privateKey.count)
        defer { plaintext.wipe() }
        plaintext += [flags, Self.algorithmByte(source.algorithm), source.credProtect.rawValue]
        source.privateKey.append(to: &plaintext)
        do {
            let sealed = try AES256GCM.seal(plaintext, key: wrappingKey, nonce: nonce, authenticating: rpIDHash)
            return [Self.version] + nonce + sealed.ciphertext + sealed.tag
        } catch {
            throw .other
        }
    }

    /// The credential behind `id` if this key sealed it for `rpIDHash`; nil otherwise.
    func open(_ id: [UInt8], rpIDHash: [UInt8]) -> CredentialSource? {
        guard Self.lengths.contains(id.count), id[0] == Self.version else { return nil }
        let nonce = Array(id[1..<13])
        let ciphertext = Array(id[13..<(id.count - 16)])
        let tag = Array(id[(id.count - 16)...])
        guard var plaintext = try? AES256GCM.open(ciphertext, tag: tag, key: wrappingKey, nonce: nonce, authenticating: rpIDHash) else {
            return nil
        }
        defer { plaintext.wipe() }
        guard let algorithm = Self.algorithm(plaintext[1]),
              plaintext.count == 3 + (CredentialPrivateKey.secretByteCount(algorithm) ?? -1),
              let credProtect = CredentialProtectionPolicy(rawValue: plaintext[2]) else { return nil }
        return CredentialSource(isResident: plaintext[0] & 0x01 != 0, algorithm: algorithm,
                                credProtect: credProtect, privateKey: SecretBytes(plaintext[3...]),
                                hasHMACSecret: plaintext[0] & 0x02 != 0, isThirdPartyPayment: plaintext[0] & 0x04 != 0)
    }

    private static func algorithmByte(_ algorithm: COSEAlgorithm) -> UInt8 {
        switch algorithm {
        case .es256: 1
        case .edDSA: 2
        case .es384: 3
        case .es512: 4
        case .es256K: 5
        case .mlDSA44: 6
        case .mlDSA65: 7
        case .mlDSA87: 8
        case .ecdhESHKDF256, .rs256, .ps256: 0   // no key carried: RSA credentials are stored
        }
    }

    private static func algorithm(_ byte: UInt8) -> COSEAlgorithm? {
        switch byte {
        case 1: .es256
        case 2: .edDSA
        case 3: .es384
        case 4: .es512
        case 5: .es256K
        case 6: .mlDSA44
        case 7: .mlDSA65
        case 8: .mlDSA87
        default: nil
        }
    }
}
