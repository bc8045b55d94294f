import CBOR
import CTAP
import FIDOCrypto

/// Enterprise attestation (CTAP 2.1 §7.1; getInfo option `ep`, authenticatorConfig
/// enableEnterpriseAttestation, makeCredential enterpriseAttestation (0x0A), response epAtt
/// (0x04)).
///
/// An ordinary attestation says only "a Latchkey" (`BatchAttestation`, shared by every
/// installation). An enterprise attestation says *which* installation: it is signed by the
/// store's own attestation key and carries the store's own chain, x5c [leaf, CA], both made with
/// the store (and kept by a reset unless `--attestation installation` remakes them), so an
/// enterprise RP can tell its managed keys apart and recognise them again. That is why it is
/// off until the key's owner turns it on (with the PIN, when one is set), and why a reset turns
/// it off again (§7.1.3).
///
/// - enterpriseAttestation 1 (vendor-facilitated): given only for the RP IDs configured on the
///   key (`AuthenticatorConfiguration.enterpriseAttestationRPIDs`, `serve --enterprise-rp`);
///   for any other RP the request is treated as if it had no enterpriseAttestation and gets the
///   ordinary attestation (§7.1.1).
/// - enterpriseAttestation 2 (platform-managed): the platform vetted the RP (its enterprise
///   policy), so the key gives it for whatever RP the platform asks (§7.1.2).
extension Authenticator {
    /// Whether the key can give enterprise attestation at all (getInfo `ep` present): every
    /// CTAP 2.1 key; the CTAP 2.0 persona predates it.
    var isEnterpriseAttestationCapable: Bool { configuration.protocolLevel == .ctap21 }

    /// getInfo `ep`: true once enableEnterpriseAttestation ran (and no reset since).
    func isEnterpriseAttestationEnabled() throws(CTAP2StatusCode) -> Bool {
        try loadSetting(AuthenticatorSetting.enterpriseAttestation) == [0x01]
    }

    /// authenticatorConfig enableEnterpriseAttestation (0x01), §6.11.1: idempotent.
    func enableEnterpriseAttestation() throws(CTAP2StatusCode) {
        guard isEnterpriseAttestationCapable else { throw .invalidParameter }
        if try isEnterpriseAttestationEnabled() { return }
        try saveSetting(AuthenticatorSetting.enterpriseAttestation, value: [0x01])
    }

    /// makeCredential step 9 (CTAP 2.1 §6.1.2): whether this request gets an enterprise
    /// attestation. Absent → no. Not capable or not enabled → CTAP1_ERR_INVALID_PARAMETER; a
    /// value other than 1 or 2 → CTAP2_ERR_INVALID_OPTION; 1 for an RP not configured → no
    /// (treated as absent); 2 → yes.
    func grantsEnterpriseAttestation(_ requested: UInt64?, rpID: String) throws(CTAP2StatusCode) -> Bool {
        guard let requested else { return false }
        guard isEnterpriseAttestationCapable, try isEnterpriseAttestationEnabled() else { throw .invalidParameter }
        switch requested {
        case 1: return configuration.enterpriseAttestationRPIDs.contains { $0.utf8.elementsEqual(rpID.utf8) }
        case 2: return true
        default: throw .invalidOption
        }
    }

    /// The packed attestation statement of an enterprise attestation: signed by the store's own
    /// attestation key, x5c = [the store's leaf, the store's CA].
    func enterpriseAttestationStatement(signing message: [UInt8]) throws(CTAP2StatusCode) -> CBORValue {
        let signature: [UInt8]
        do {
            signature = try P256.Signing.PrivateKey(secret: secrets.attestationPrivateKey).signature(for: message)
        } catch {
            throw .other
        }
        return .map(["alg": CBORValue(COSEAlgorithm.es256.rawValue), "sig": .byteString(signature),
                     "x5c": .array([.byteString(secrets.attestationCertificate), .byteString(secrets.attestationCACertificate)])])
    }
}
