import FIDOCrypto

extension DeviceSecrets {
    /// Fresh secrets for a new key: a wrapping key, and an attestation CA + batch leaf whose
    /// certificate meets the packed-attestation rules (WebAuthn §8.2.1).
    public static func generate(aaguid: [UInt8] = AuthenticatorConfiguration.latchkeyAAGUID) throws -> DeviceSecrets {
        let caKey = try P256.Signing.PrivateKey()
        let ca = try AttestationCertificate.makeCA(key: caKey, country: "US", organization: "Latchkey",
                                                   commonName: "Latchkey Attestation Root")
        let leafKey = try P256.Signing.PrivateKey()
        let leaf = try AttestationCertificate.makeLeaf(subjectKey: leafKey.publicKey, aaguid: aaguid, country: "US",
                                                       organization: "Latchkey", commonName: "Latchkey Batch Attestation",
                                                       issuerCertificate: ca, issuerKey: caKey)
        return DeviceSecrets(aaguid: aaguid, wrappingKey: SecretBytes(randomCount: 32),
                             attestationPrivateKey: leafKey.rawRepresentation,
                             attestationCertificate: leaf, attestationCACertificate: ca)
    }
}
