import CTAP
import FIDOCrypto

/// A discoverable credential as the store keeps it (docs/architecture.md, Credentials and the store).
public struct ResidentCredential: Sendable {
    public var credentialID: [UInt8]
    public var rpID: String
    public var rpIDHash: [UInt8]
    public var rpName: String?
    public var userHandle: [UInt8]
    public var userName: String?
    public var userDisplayName: String?
    /// COSE algorithm identifier (-7 ES256, -8 EdDSA).
    public var algorithm: Int
    /// Raw private key: P-256 scalar or Ed25519 seed.
    public var privateKey: SecretBytes
    /// Unix seconds.
    public var createdAt: Int64
    /// The credProtect level it was made with (CTAP 2.1 §12.1).
    public var credProtect: CredentialProtectionPolicy
    public var credBlob: [UInt8]?
    public var largeBlobKey: SecretBytes?
    /// hmac-secret CredRandom values (32 bytes each) for requests with and without UV.
    public var hmacSecretWithUV: SecretBytes?
    public var hmacSecretWithoutUV: SecretBytes?
    /// Unix seconds since a signal hid it; nil when visible.
    public var hiddenSince: Int64?
    /// The authData BE and BS flags its assertions carry (WebAuthn §6.1 bits 3 and 4). A
    /// security key's credentials are neither (it keeps them and backs nothing up); a test rig
    /// sets them to stand for a synced passkey (WebDriver's backupEligibility/backupState).
    public var backupEligible = false
    public var backedUp = false
    /// Made with the thirdPartyPayment extension (CTAP 2.2 §12.9): usable for payments that
    /// another party starts. Fixed when the credential is made.
    public var thirdPartyPayment = false
    /// Counterless: every signature carries signCount 0, as a synced passkey's does; counting
    /// (false): a monotonic counter, as a hardware key's. Fixed when the credential is made
    /// (`serve --counter zero`, an import, a rig's addCredential without signCount); only a
    /// counterless credential may leave in a CXF export (whose importers must set the counter to
    /// zero and never raise it: a counting credential copied elsewhere would break the RP's
    /// clone detection).
    public var counterless = false
    /// Whether an assertion or registration ever gave an hmac-secret (PRF) output for it: a site
    /// may have encrypted data with it, so deleting it deserves a warning (passkey endpoints'
    /// prfUsageDetails).
    public var usedHMACSecret = false

    /// `backupEligible` and `backedUp` as authData flags (set: the other flags are ignored).
    public var backupFlags: AuthenticatorData.Flags {
        get {
            var flags: AuthenticatorData.Flags = []
            if backupEligible { flags.insert(.backupEligible) }
            if backedUp { flags.insert(.backedUp) }
            return flags
        }
        set {
            backupEligible = newValue.contains(.backupEligible)
            backedUp = newValue.contains(.backedUp)
        }
    }

    /// False for a credential kept only to be named in an allowList: one whose ID the key did
    /// not make, so cannot wrap (a test rig's addCredential with isResidentCredential false,
    /// WebDriver's non-resident credential). It is never offered without an allowList, never
    /// listed by credential management, and its assertions name no user; its `userHandle` is
    /// the store's own (`storedOnlyUserHandle`), not the RP's.
    public var discoverable = true

    /// The user handle a non-discoverable stored credential is kept under: one per credential ID
    /// (a zero byte and SHA-256 of the ID), so that it never replaces another account's.
    public static func storedOnlyUserHandle(credentialID: [UInt8]) -> [UInt8] {
        [0x00] + SHA256.hash(credentialID)
    }

    /// Whether a getAssertion without an allowList may use it: discoverable, visible, and
    /// userVerificationOptional unless the user was verified (the other two levels need UV
    /// there, CTAP 2.1 §12.1).
    public func isDiscoverable(userVerified: Bool) -> Bool {
        discoverable && hiddenSince == nil && (credProtect == .userVerificationOptional || userVerified)
    }

    /// Whether a platform may show it to the user, as the key answers a getAssertion with
    /// `allowList`, the user verified in this ceremony or not (CTAP 2.1 §12.1; decided by the
    /// verification performed, not by whether the key could perform one): with a list, the
    /// credentials of it that credProtect allows (level 3 only verified); without one, the
    /// discoverable ones (levels 2 and 3 only verified). Hidden passkeys never.
    public func isOffered(allowList: [[UInt8]], userVerified: Bool) -> Bool {
        guard hiddenSince == nil else { return false }
        if allowList.contains(credentialID) { return credProtect != .userVerificationRequired || userVerified }
        return allowList.isEmpty && isDiscoverable(userVerified: userVerified)
    }

    public init(credentialID: [UInt8], rpID: String, rpIDHash: [UInt8], rpName: String?,
                userHandle: [UInt8], userName: String?, userDisplayName: String?,
                algorithm: Int, privateKey: SecretBytes, createdAt: Int64,
                credProtect: CredentialProtectionPolicy = .userVerificationOptional,
                credBlob: [UInt8]? = nil, largeBlobKey: SecretBytes? = nil,
                hmacSecretWithUV: SecretBytes? = nil, hmacSecretWithoutUV: SecretBytes? = nil,
                hiddenSince: Int64? = nil) {
        self.credentialID = credentialID; self.rpID = rpID; self.rpIDHash = rpIDHash
        self.rpName = rpName; self.userHandle = userHandle; self.userName = userName
        self.userDisplayName = userDisplayName; self.algorithm = algorithm
        self.privateKey = privateKey; self.createdAt = createdAt; self.credProtect = credProtect
        self.credBlob = credBlob; self.largeBlobKey = largeBlobKey
        self.hmacSecretWithUV = hmacSecretWithUV; self.hmacSecretWithoutUV = hmacSecretWithoutUV
        self.hiddenSince = hiddenSince
    }
}
