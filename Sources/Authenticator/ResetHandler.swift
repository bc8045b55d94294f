import CBOR
import CTAP
import FIDOCrypto

extension Authenticator {
    /// authenticatorReset (0x07), CTAP 2.1 §6.6.
    func reset(context: RequestContext) throws(CTAP2StatusCode) {
        // Only within 10 s of power-up, else NOT_ALLOWED.
        guard clock.monotonicNanoseconds() &- poweredUpAt <= Self.nanoseconds(milliseconds: configuration.resetWindowMilliseconds) else {
            throw .notAllowed
        }
        try collectPresence(.reset, rpID: nil, context: context)
        // A new wrapping key makes every old non-resident credential ID unopenable.
        let newKey = random.secret(count: 32)
        try withStore { store throws(StoreError) in try store.reset(newWrappingKey: newKey) }
        secrets.wrappingKey = newKey
        codec = CredentialIDCodec(wrappingKey: newKey)
        if configuration.attestation == .installation {
            // A per-installation identity is remade, so registrations after the reset cannot be
            // linked to those before it (the batch identity links nothing to begin with).
            guard let fresh = try? DeviceSecrets.generate(aaguid: secrets.aaguid),
                  let key = try? P256.Signing.PrivateKey(secret: fresh.attestationPrivateKey) else {
                throw .other
            }
            try withStore { store throws(StoreError) in
                try store.replaceAttestation(privateKey: fresh.attestationPrivateKey, certificate: fresh.attestationCertificate,
                                             caCertificate: fresh.attestationCACertificate)
            }
            secrets.attestationPrivateKey = fresh.attestationPrivateKey
            secrets.attestationCertificate = fresh.attestationCertificate
            secrets.attestationCACertificate = fresh.attestationCACertificate
            attestationKey = key
        }
        openedCredentials.removeAll()
        // The store dropped every setting: alwaysUv off, minPINLength and its RP IDs back to the
        // defaults, the large-blob array back to the empty one (a write in progress ends too).
        settingsCache.removeAll()
        endCommandSequences()
        // The store dropped the PIN; tokens and key-agreement keys issued under it go too.
        pinUvAuth.powerUp()
    }

    /// authenticatorSelection (0x0B), CTAP 2.1 §6.9: a touch, nothing else.
    func selection(context: RequestContext) throws(CTAP2StatusCode) {
        try collectPresence(.selection, rpID: nil, context: context)
    }
}
