import CTAP
import FIDOCrypto

/// A device that makes and keeps credential keys itself, so that they never exist in this
/// process: a TPM 2.0 (`serve --keys tpm`). The key asks it for a new ES256 key at
/// makeCredential and for a signature at getAssertion; the store keeps only the device's blob
/// for the key (for a TPM: its public area and its private area encrypted by the TPM's storage
/// key), which another device cannot use.
public protocol CredentialKeyDevice: Sendable {
    /// A new P-256 signing key made inside the device: its public point and the device's blob.
    func makeP256Key() throws(CTAP2StatusCode) -> DeviceKey
    /// Whether `blob` names a key of this device (a TPM: made under its storage key). A
    /// credential whose key another device holds is one this key does not have: not offered,
    /// not found (CTAP2_ERR_NO_CREDENTIALS), as a hardware key treats another key's credential.
    func holds(blob: [UInt8]) -> Bool
    /// The DER ECDSA signature over SHA-256(`message`) by the key `blob` names.
    func signature(blob: [UInt8], for message: [UInt8]) throws(CTAP2StatusCode) -> [UInt8]
}

/// A credential key that lives in a `CredentialKeyDevice`: its public point and the device's
/// blob. Stored in a credential's `privateKey` as `prefix ‖ x ‖ y ‖ blob`, which no software
/// key's bytes can be (those are 32 to 66 bytes and never start with the prefix, checked by
/// length first): a store read by a key without the device finds the credential unusable, not
/// a software key.
public struct DeviceKey: Equatable, Sendable {
    public var x: [UInt8]
    public var y: [UInt8]
    public var blob: [UInt8]

    public init(x: [UInt8], y: [UInt8], blob: [UInt8]) {
        self.x = x
        self.y = y
        self.blob = blob
    }

    /// "LKDK" and a format version.
    static let prefix: [UInt8] = [0x4C, 0x4B, 0x44, 0x4B, 0x01]
    static let headerCount = prefix.count + 64

    /// The stored form.
    public var stored: SecretBytes { SecretBytes(Self.prefix + x + y + blob) }

    /// Its public key as COSE has it.
    public var cosePublicKey: COSEKey { .ec2P256(algorithm: .es256, x: x, y: y) }

    /// The device key a credential's stored `privateKey` holds, or nil when it holds a software key
    /// (whose bytes are never copied out: an RSA key's DER is longer than the header too).
    public init?(stored: SecretBytes) {
        guard Self.isDeviceKey(stored) else { return nil }
        let bytes = stored.copyBytes()
        x = Array(bytes[Self.prefix.count..<Self.prefix.count + 32])
        y = Array(bytes[Self.prefix.count + 32..<Self.headerCount])
        blob = Array(bytes[Self.headerCount...])
    }

    /// Whether a credential's stored key is a device's (for listings: "tpm").
    public static func isDeviceKey(_ stored: SecretBytes) -> Bool {
        stored.count > headerCount && stored.withUnsafeBytes { Array($0.prefix(prefix.count)) } == prefix
    }
}
