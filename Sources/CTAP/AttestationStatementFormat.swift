/// The attestation statement formats this key can produce (WebAuthn §8; CTAP 2.2
/// makeCredential member 0x0B, attestationFormatsPreference, names them by these strings).
public enum AttestationStatementFormat: String, CaseIterable, Sendable {
    /// WebAuthn §8.2: an ES256 signature by the batch attestation key, with its certificate.
    case packed
    /// WebAuthn §8.7: no attestation (the client asked for none).
    case none

    /// The first format of `preference` that this key supports; packed when the client states
    /// no preference or names none we have — as a YubiKey 5 answers (packed, its batch
    /// certificate), which relying parties expect from a security key.
    public static func chosen(from preference: [String]?) -> AttestationStatementFormat {
        preference?.lazy.compactMap(AttestationStatementFormat.init(rawValue:)).first ?? .packed
    }
}
