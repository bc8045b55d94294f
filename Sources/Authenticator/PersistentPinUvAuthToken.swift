import CBOR
import CTAP
import FIDOCrypto

/// The persistentPinUvAuthToken (CTAP 2.2 §6.5.5.7, permission pcmr; getInfo option
/// `perCredMgmtRO`): a token for read-only credential management that survives power cycles,
/// so that a platform can list the key's passkeys without asking for the PIN every time.
///
/// - It is issued by getPinUvAuthTokenUsingPinWithPermissions (0x09) or …UsingUv… (0x06)
///   when the permissions are exactly pcmr (pcmr with anything else is
///   CTAP2_ERR_UNAUTHORIZED_PERMISSION, §6.5.5.7.2 step 4); the rpId is ignored, no usage timer
///   runs, and the ordinary pinUvAuthToken is left as it was.
/// - Asking again returns the same token until a PIN change (§6.5.5.6:
///   resetPersistentPinUvAuthToken), a PIN change forced by setMinPINLength, or a reset.
/// - It authorizes getCredsMetadata, enumerateRPsBegin and enumerateCredentialsBegin (and so
///   their GetNext steps); deleteCredential and updateUserInformation with it are
///   CTAP2_ERR_PIN_AUTH_INVALID, as on a YubiKey 5.8.
///
/// It is kept in the store as a sealed setting (`AuthenticatorSetting.persistentPinUvAuthToken`).
extension Authenticator {
    static let persistentTokenByteCount = 32

    /// The persistent token, if one was issued since the last PIN change or reset.
    func persistentToken() throws(CTAP2StatusCode) -> SecretBytes? {
        guard let bytes = try loadSetting(AuthenticatorSetting.persistentPinUvAuthToken),
              bytes.count == Self.persistentTokenByteCount else { return nil }
        return SecretBytes(bytes)
    }

    /// encrypt(shared secret, persistentPinUvAuthToken): the stored one, or a new one stored
    /// (durably) before it leaves.
    func issuePersistentToken(sharedSecret: PinUvAuthSharedSecret) throws(CTAP2StatusCode) -> ClientPINResponse {
        var token: [UInt8]
        if let existing = try persistentToken() {
            token = existing.copyBytes()
        } else {
            token = random.secret(count: Self.persistentTokenByteCount).copyBytes()
            try saveSetting(AuthenticatorSetting.persistentPinUvAuthToken, value: token)
        }
        defer { token.wipe() }
        return ClientPINResponse(pinUvAuthToken: try sharedSecret.encrypt(token, random: random))
    }

    /// resetPersistentPinUvAuthToken(): the token handed out so far is worthless.
    func resetPersistentToken() throws(CTAP2StatusCode) {
        guard try loadSetting(AuthenticatorSetting.persistentPinUvAuthToken) != nil else { return }
        try saveSetting(AuthenticatorSetting.persistentPinUvAuthToken, value: nil)
    }

    /// The grant of a credentialManagement request whose pinUvAuthParam was made with the
    /// persistent token (read-only: pcmr, no RP ID); nil when it was not.
    func persistentGrant(pinUvAuthParam: [UInt8]?, pinUvAuthProtocol: UInt64?,
                         message: [UInt8]) throws(CTAP2StatusCode) -> PinUvAuthTokenState.Grant? {
        guard let pinUvAuthParam, let pinUvAuthProtocol = try? PinUvAuthProtocol(requested: pinUvAuthProtocol),
              let token = try persistentToken(),
              pinUvAuthProtocol.verify(key: token, message: message, signature: pinUvAuthParam) else { return nil }
        let now = clock.monotonicNanoseconds()
        return PinUvAuthTokenState.Grant(permissions: .persistentCredentialManagementReadOnly, rpID: nil, beganAt: now,
                                         hasBeenUsed: true, isUserPresent: false, isUserVerified: false)
    }

    /// getInfo encIdentifier (0x19, CTAP 2.2 §6.4): iv ‖ AES-128-CBC(key, iv, device identifier)
    /// with key = HKDF-SHA-256(salt: 32 zero bytes, IKM: persistentPinUvAuthToken, info:
    /// "encIdentifier", 16 bytes) and a fresh iv for every getInfo. Only a holder of the
    /// persistent token can tell that two sightings are the same key. Absent while no persistent
    /// token exists. The identifier is derived from the wrapping key, so a reset changes it.
    func encryptedIdentifier() throws(CTAP2StatusCode) -> [UInt8]? {
        guard let token = try persistentToken() else { return nil }
        var identifier = Array(HMACSHA256.authenticationCode(key: secrets.wrappingKey,
                                                             data: Array("Latchkey device identifier".utf8)).prefix(16))
        defer { identifier.wipe() }
        return try encryptedForPersistentToken(identifier, token: token, info: "encIdentifier")
    }

    /// encCredStoreState (getInfo 0x1E, CTAP 2.3 §6.4): 16 bytes that change whenever a
    /// credential is made, deleted, hidden, shown or renamed and on nothing else (the store's
    /// credentialChangeCount, keyed by the wrapping key so that it says nothing across resets),
    /// encrypted as encIdentifier is, with info "encCredStoreState". A platform that cached the
    /// key's credential list knows from it whether to read the list again.
    func encryptedCredentialStoreState() throws(CTAP2StatusCode) -> [UInt8]? {
        guard let token = try persistentToken() else { return nil }
        let changes = try withStore { store throws(StoreError) in try store.credentialChangeCount() }
        let counter = (0..<8).map { UInt8(truncatingIfNeeded: changes >> (56 - 8 * $0)) }
        var state = Array(HMACSHA256.authenticationCode(key: secrets.wrappingKey,
                                                        data: Array("Latchkey credential store state".utf8) + counter).prefix(16))
        defer { state.wipe() }
        return try encryptedForPersistentToken(state, token: token, info: "encCredStoreState")
    }

    /// IV ‖ AES-128-CBC(plaintext) under HKDF-SHA-256(persistent token, salt 32 zero bytes,
    /// `info`, 16 bytes), a fresh IV each time (CTAP 2.2 §6.4 encIdentifier; 2.3 alike).
    private func encryptedForPersistentToken(_ plaintext: [UInt8], token: SecretBytes, info: String) throws(CTAP2StatusCode) -> [UInt8] {
        var tokenBytes = token.copyBytes()
        defer { tokenBytes.wipe() }
        var key = HKDFSHA256.deriveKey(inputKeyMaterial: tokenBytes, salt: [UInt8](repeating: 0, count: 32),
                                       info: Array(info.utf8), outputByteCount: 16)
        defer { key.wipe() }
        let iv = random.bytes(count: 16)
        guard let ciphertext = try? AES128CBC.encrypt(plaintext, key: key, iv: iv) else { throw .other }
        return iv + ciphertext
    }
}
