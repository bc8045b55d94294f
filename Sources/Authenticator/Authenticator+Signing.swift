import CTAP
import FIDOCrypto

/// The key as a signer, for code outside the request path that reshapes a response and must
/// sign it again as the key would have (the rig clearing flags on request): the same keys, the
/// same algorithms, nothing any request can reach.
extension Authenticator {
    /// `message` signed by the credential `credentialID` of the RP `rpIDHash` (one this key
    /// sealed, or one stored under its ID), as its assertions are; nil when there is no such
    /// credential or signing fails.
    public func signature(of credentialID: [UInt8], rpIDHash: [UInt8], for message: [UInt8]) -> [UInt8]? {
        if let opened = openCredential(credentialID, rpIDHash: rpIDHash) {
            return try? opened.key.signature(for: message)
        }
        let found = try? withStore { store throws(StoreError) in try store.residentCredential(id: credentialID) }
        guard let stored = found ?? nil, ByteKey.sameBytes(stored.rpIDHash, rpIDHash), let candidate = try? candidate(from: stored) else { return nil }
        return try? candidate.key.signature(for: message)
    }

    /// `message` signed by the attestation key whose certificate is `certificate` (x5c[0] of a
    /// packed statement: the batch certificate, or this installation's own); nil for any other.
    public func attestationSignature(certifiedBy certificate: [UInt8], for message: [UInt8]) -> [UInt8]? {
        if certificate == attestationCertificate {
            return try? attestationKey.signature(for: message)
        }
        guard certificate == secrets.attestationCertificate,
              let key = try? P256.Signing.PrivateKey(secret: secrets.attestationPrivateKey) else { return nil }
        return try? key.signature(for: message)
    }
}
