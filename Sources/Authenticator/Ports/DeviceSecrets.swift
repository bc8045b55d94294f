import FIDOCrypto

/// Secrets created once per key and kept by the store.
public struct DeviceSecrets: Sendable {
    /// AAGUID reported in attested credential data and the attestation certificate.
    public var aaguid: [UInt8]
    /// AES-256-GCM key that seals non-resident credential IDs (and resident ones' IDs).
    public var wrappingKey: SecretBytes
    /// Raw P-256 scalar of the batch attestation key.
    public var attestationPrivateKey: SecretBytes
    /// DER leaf certificate for packed attestation (x5c[0]).
    public var attestationCertificate: [UInt8]
    /// DER CA certificate that signed the leaf (not sent in x5c; exported for RPs to trust).
    public var attestationCACertificate: [UInt8]

    public init(aaguid: [UInt8], wrappingKey: SecretBytes, attestationPrivateKey: SecretBytes,
                attestationCertificate: [UInt8], attestationCACertificate: [UInt8]) {
        self.aaguid = aaguid
        self.wrappingKey = wrappingKey
        self.attestationPrivateKey = attestationPrivateKey
        self.attestationCertificate = attestationCertificate
        self.attestationCACertificate = attestationCACertificate
    }
}
