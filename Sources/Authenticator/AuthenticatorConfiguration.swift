/// Fixed properties of a Latchkey authenticator.
public struct AuthenticatorConfiguration: Sendable {
    /// The Latchkey model AAGUID, d4a016d1-783d-4c7e-a521-dd2196f32a99.
    public static let latchkeyAAGUID: [UInt8] = [0xd4, 0xa0, 0x16, 0xd1, 0x78, 0x3d, 0x4c, 0x7e,
                                                 0xa5, 0x21, 0xdd, 0x21, 0x96, 0xf3, 0x2a, 0x99]

    /// How long a CTAP2 request waits for the user's touch.
    public var presenceTimeoutMilliseconds: UInt64 = 30_000
    /// How long a U2F request waits: U2F clients poll, so the key answers
    /// SW_CONDITIONS_NOT_SATISFIED quickly and the client asks again.
    public var u2fPresenceTimeoutMilliseconds: UInt64 = 500
    /// CTAP 2.1 §6.6: reset only within 10 s of power-up.
    public var resetWindowMilliseconds: UInt64 = 10_000
    /// CTAP 2.1 §6.3: getNextAssertion state expires 30 s after the last use.
    public var getNextAssertionTimeoutMilliseconds: UInt64 = 30_000
    /// CTAP 2.1 §6.5.2.1: a pinUvAuthToken not used within this time after it was obtained
    /// stops being in use ("initial usage time limit").
    public var pinUvAuthTokenInitialUsageMilliseconds: UInt64 = 30_000
    /// …and one that was used stops this long after it was obtained ("max usage time period").
    public var pinUvAuthTokenMaxUsageMilliseconds: UInt64 = 600_000
    /// getInfo 0x07 / 0x08: generous so Chromium does not split or filter lists.
    public var maxCredentialCountInList = 64
    public var maxCredentialIDLength = 128
    /// CTAPHID's largest message.
    public var maxMessageSize = 7609
    /// credBlob extension: at least 32 bytes (CTAP 2.1 §12.2).
    public var maxCredBlobLength = 32
    /// getInfo 0x0B: the largest serialized large-blob array (CTAP 2.1 §6.10: at least 1024).
    public var maxSerializedLargeBlobArray = 4096
    /// getInfo 0x10: how many RP IDs setMinPINLength's minPinLengthRPIDs may list.
    public var maxRPIDsForSetMinPINLength = 8
    /// getInfo 0x0E.
    public var firmwareVersion = 0x0001_0000

    /// Which attestation makeCredential (packed x5c) and U2F registration use.
    public enum Attestation: String, Sendable, CaseIterable {
        /// `BatchAttestation`: the certificate every Latchkey shares (the default).
        case batch
        /// The store's own CA and leaf, made with the store and remade by a reset: for rigs
        /// that test attestation chains. It tells one installation from another.
        case installation
    }
    public var attestation: Attestation = .batch

    public init() {}
}
