import CBOR
import CTAP
import FIDOCrypto

/// The key-wide settings authenticatorConfig and authenticatorLargeBlobs keep in the store
/// (`loadSetting` / `saveSetting`). authenticatorReset deletes every setting, which puts each
/// one back to its default. (minPINLength is `PINPolicy.minLengthSetting`.)
enum AuthenticatorSetting {
    /// alwaysUv (CTAP 2.1 §6.11.2): one byte, 0x01 on; absent or anything else is off.
    static let alwaysUv = "alwaysUv"
    /// minPinLengthRPIDs (§6.11.4): the CBOR array of RP ID text strings last set; absent or
    /// undecodable is the empty list.
    static let minPinLengthRPIDs = "minPinLengthRPIDs"
    /// The serialized large-blob array (§6.10): a CBOR array followed by LEFT(SHA-256, 16);
    /// absent is the default, the empty array. Read and written past `loadSetting`'s cache
    /// (`LargeBlobStorage`): a rig changes it beside the authenticator.
    static let largeBlobArray = "largeBlobArray"
    /// The persistentPinUvAuthToken (CTAP 2.2 §6.5.5.7, permission pcmr): 32 bytes, made when a
    /// platform first asks for pcmr and kept across power cycles; a PIN change or a reset
    /// deletes it (resetPersistentPinUvAuthToken). Sealed like every setting.
    static let persistentPinUvAuthToken = "persistentPinUvAuthToken"
    /// Enterprise attestation (getInfo `ep`, CTAP 2.1 §7.1): one byte, 0x01 once
    /// enableEnterpriseAttestation ran; absent is disabled, as after a reset (§7.1.3).
    static let enterpriseAttestation = "enterpriseAttestation"
}

extension Authenticator {
    func loadSetting(_ key: String) throws(CTAP2StatusCode) -> [UInt8]? {
        // Settings change only through this authenticator (authenticatorConfig, clientPIN,
        // reset), so a value read once stays valid: makeCredential and getAssertion read
        // alwaysUv on every request and should not pay a store query for it.
        if let cached = settingsCache[key] { return cached }
        let value = try withStore { store throws(StoreError) in try store.loadSetting(key) }
        settingsCache[key] = .some(value)
        return value
    }

    /// Durable when it returns (one store transaction).
    func saveSetting(_ key: String, value: [UInt8]?) throws(CTAP2StatusCode) {
        // Unknown until the store answers: a failed save may or may not have reached the disk.
        settingsCache[key] = nil
        try withStore { store throws(StoreError) in try store.saveSetting(key, value: value) }
        settingsCache[key] = .some(value)
    }

    /// Whether the alwaysUv option is on (getInfo alwaysUv).
    func isAlwaysUvEnabled() throws(CTAP2StatusCode) -> Bool {
        try loadSetting(AuthenticatorSetting.alwaysUv) == [0x01]
    }

    /// The RP IDs the minPinLength extension answers (setMinPINLength's minPinLengthRPIDs).
    func minPinLengthRPIDs() throws(CTAP2StatusCode) -> [String] {
        guard let bytes = try loadSetting(AuthenticatorSetting.minPinLengthRPIDs),
              let list = (try? CBORDecoder.decode(bytes))?.arrayValue else { return [] }
        return list.compactMap(\.stringValue)
    }
}
