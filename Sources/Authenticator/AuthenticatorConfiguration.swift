import CTAP

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
    /// getInfo 0x07 / 0x08: what a YubiKey 5 reports (8 IDs of up to 128 bytes). A longer list
    /// is split by the platform (Chromium and python-fido2 probe it in batches; libfido2 sends
    /// what it is given), and a full list then fits in about 20 reports: the kernel queues at most
    /// 32 uhid output events for the key (see LinuxHID.UHIDDevice), and a list of 64 filled
    /// 129, which a client's back-to-back writes could overrun on a loaded machine (seen in the
    /// VM: python-fido2's test_exclude_credentials_max got INVALID_SEQ).
    public var maxCredentialCountInList = 8
    public var maxCredentialIDLength = 128
    /// getInfo 0x05: what a YubiKey 5 reports. Clients that split a request by it (largeBlobs
    /// writes, by python-fido2, libfido2 and Chromium) then send at most 21 reports a message,
    /// which the kernel's 32-event uhid queue holds whole even while the key is not running: at
    /// 7609 (CTAPHID's largest message) a 4 KiB large-blob write was 65 reports written back to
    /// back, and under load in the VM the kernel dropped some (python-fido2's test_size_bounds got
    /// INVALID_SEQ). The key still takes any message CTAPHID can carry; this is what it asks for.
    public var maxMessageSize = 1200
    /// credBlob extension: at least 32 bytes (CTAP 2.1 §12.2).
    public var maxCredBlobLength = 32
    /// getInfo 0x0B: the largest serialized large-blob array (CTAP 2.1 §6.10: at least 1024).
    public var maxSerializedLargeBlobArray = 4096
    /// getInfo 0x10: how many RP IDs setMinPINLength's minPinLengthRPIDs may list.
    public var maxRPIDsForSetMinPINLength = 8
    /// getInfo 0x0E.
    public var firmwareVersion = 0x0001_0000
    /// The credential algorithms the key makes, in its order of preference (getInfo 0x0A):
    /// every one it has by default; a rig may limit them to emulate a given key (`--algorithms`).
    /// makeCredential takes the first of the client's pubKeyCredParams that is here.
    public var algorithms: [COSEAlgorithm] = COSEAlgorithm.defaultCredentialAlgorithms

    /// Which attestation makeCredential (packed x5c) and U2F registration use.
    public enum Attestation: String, Sendable, CaseIterable {
        /// `BatchAttestation`: the certificate every Latchkey shares (the default).
        case batch
        /// The store's own CA and leaf, made with the store and remade by a reset: for rigs
        /// that test attestation chains. It tells one installation from another.
        case installation
    }
    public var attestation: Attestation = .batch

    /// Which CTAP the key speaks. `ctap20` is the persona of a CTAP 2.0 key (a YubiKey 5 before
    /// firmware 5.2, the first FIDO2 keys) for rigs testing clients against one (`latchkey rig`
    /// `protocol ctap2`): getInfo versions U2F_V2 and FIDO_2_0, options rk, up, plat, clientPin
    /// (and uv with built-in UV), PIN/UV auth protocol 1 only, the hmac-secret extension, no
    /// 0x09/0x0A getInfo members; credentialManagement, selection, largeBlobs and
    /// authenticatorConfig are unknown commands, clientPIN 0x06–0x09 unknown subcommands.
    public enum ProtocolLevel: String, Sendable, CaseIterable {
        case ctap21, ctap20
    }

    /// Whether the key stores discoverable credentials (getInfo `rk`): yes, as every Latchkey
    /// key; a test rig's `hasResidentKey false` stands for a key that cannot (makeCredential
    /// with rk is then CTAP2_ERR_UNSUPPORTED_OPTION).
    public var supportsResidentKeys = true

    /// Whether a non-discoverable credential the key makes is kept in its store (under a random
    /// ID, taking a slot) rather than wrapped into its ID: as WebDriver's virtual authenticators
    /// keep every credential, so a test can list them with their keys and counters (`latchkey rig
    /// webdriver`). Every other key wraps them, as a security key does.
    public var keepsNonDiscoverableCredentials = false

    /// The extensions the key offers (`ExtensionSet`): all of them, as a Latchkey key has; a
    /// test rig may offer fewer.
    public var extensions: ExtensionSet = .all

    /// What getInfo lists and requests get answered: `extensions`, and of those only
    /// hmac-secret on the CTAP 2.0 persona (the one extension CTAP 2.0 defined).
    public var offeredExtensions: ExtensionSet {
        protocolLevel == .ctap20 ? extensions.intersection(.hmacSecret) : extensions
    }

    /// getInfo's extensions (0x02): those of `offeredExtensions` (hmac-secret-mc is CTAP 2.2,
    /// so not on the CTAP 2.0 persona).
    public var extensionIdentifiers: [String] {
        let names = offeredExtensions.identifiers
        return protocolLevel == .ctap20 ? names.filter { $0 != "hmac-secret-mc" } : names
    }

    /// The BE and BS authData flags of the credentials this key makes (only those two bits
    /// count): none, as on every security key (a YubiKey's credentials are device-bound). A test
    /// rig's `defaultBackupEligibility`/`defaultBackupState` set them to stand for a passkey
    /// provider that syncs. Stored with every credential the store holds; a non-discoverable
    /// credential the key made (its ID wraps its key) keeps nothing, so its assertions carry the
    /// key's setting.
    public var defaultBackupFlags: AuthenticatorData.Flags = [] {
        didSet { defaultBackupFlags.formIntersection([.backupEligible, .backedUp]) }
    }
    public var protocolLevel: ProtocolLevel = .ctap21

    /// The RP IDs a vendor-facilitated enterprise attestation (makeCredential
    /// enterpriseAttestation 1) is given for, once enterprise attestation is enabled
    /// (`serve --enterprise-rp`; on a YubiKey 5 Enterprise Edition the list is set at the
    /// factory). Platform-managed requests (2) need no list. See EnterpriseAttestation.swift.
    public var enterpriseAttestationRPIDs: [String] = []

    /// Whether the credentials made from now on are counterless (`serve --counter zero`):
    /// their signatures, and those of every non-discoverable credential (which keeps nothing
    /// per credential), carry signCount 0. Resident credentials made before keep their policy.
    public var countersZero = false

    public init() {}
}
