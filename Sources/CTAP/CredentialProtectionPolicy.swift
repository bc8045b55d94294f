/// The credProtect extension's protection levels (CTAP 2.1 §12.1, "Credential Protection
/// (credProtect)"). The raw values are the bytes on the wire (the extension's input and output,
/// credentialManagement's credProtect member), which is also how Latchkey stores them.
public enum CredentialProtectionPolicy: UInt8, Sendable, CaseIterable {
    /// userVerificationOptional (0x01), the default: usable with or without user verification,
    /// also when the platform names no credential.
    case userVerificationOptional = 0x01
    /// userVerificationOptionalWithCredentialIDList (0x02): without user verification only when
    /// the platform names the credential (allowList); discoverable only after it.
    case userVerificationOptionalWithCredentialIDList = 0x02
    /// userVerificationRequired (0x03): only ever usable after user verification.
    case userVerificationRequired = 0x03
}
