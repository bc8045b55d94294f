import Authenticator
import CTAP
import CTAPHID
import CredentialStore
import SystemIO

/// What a key is: every option a key can be given, whichever way it is given — `latchkey
/// serve`'s flags, the rig's `addAuthenticator` parameters — or set by code (the fuzz key, the
/// benchmarks, test support). Each option is declared once in `KeyOption.all` (its flag, its
/// rig parameter, its values, default, help and validation); this struct holds the values and
/// derives from them the one `AuthenticatorConfiguration` and CTAPHID configuration a key runs
/// with. Where the key is reached (transport), its store and name are the host's (KeyConfiguration,
/// the rig), not the key's.
public struct KeySpecification: Equatable, Sendable {
    /// Which protocol the key speaks (`protocol`): the rig's names, which are WebDriver's.
    public enum ProtocolVersion: String, CaseIterable, Equatable, Sendable {
        /// CTAP 2.1 and later, with U2F (every Latchkey key).
        case ctap21 = "ctap2_1"
        /// A CTAP 2.0 key's persona (AuthenticatorConfiguration.ProtocolLevel.ctap20).
        case ctap20 = "ctap2"
        /// A CTAP1-only key: CTAPHID INIT reports no CBOR capability, CTAPHID_CBOR is an unknown
        /// command (clients fall back to U2F, as they must for such keys).
        case u2f
    }

    /// Where the key makes and keeps its credentials' private keys (`--keys`).
    public enum CredentialKeys: String, CaseIterable, Equatable, Sendable {
        /// In this process, sealed in the credential ID or the store (every algorithm).
        case software
        /// Inside this machine's TPM 2.0 (TSS2_TCTI, else /dev/tpmrm0): ES256 only; the store
        /// keeps the TPM's blob, which signs nothing on another TPM.
        case tpm
    }

    /// How a touch is given (`--presence`).
    public enum PresenceMode: String, CaseIterable, Equatable, Sendable {
        /// Approve everything (test rigs only).
        case auto
        /// Refuse everything that needs a touch.
        case deny
        /// Ask on the controlling terminal (the default).
        case prompt
        /// A desktop notification with Approve and Deny.
        case notify
        /// Wait for `latchkey approve` / `latchkey deny` on the control socket.
        case control
    }

    /// Built-in user verification (`--uv`); none by default.
    public enum VerificationMode: String, CaseIterable, Equatable, Sendable {
        /// The desktop's polkit agent asks for the user's password (action org.latchkey.verify-user).
        case polkit
        /// A finger on the reader, through fprintd (`fprintd-verify`).
        case fprintd
        /// Every verification succeeds (test rigs only).
        case auto
        /// Every verification fails (the retry and lockout paths).
        case deny
    }

    /// The signature counter of the credentials made (`--counter`).
    public enum CounterMode: String, CaseIterable, Equatable, Sendable {
        /// A counter that only goes up, as a hardware key's.
        case counting
        /// Always 0, as a synced passkey's (such credentials can leave in `latchkey export`).
        case zero
    }

    // What the key is.
    public var protocolVersion = ProtocolVersion.ctap21
    /// False: a key that stores no discoverable credentials (getInfo rk false). Always false on
    /// a u2f key.
    public var hasResidentKey = true
    /// True: non-discoverable credentials are kept in the store, not wrapped in their IDs.
    public var keepsNonResidentCredentials = false
    /// The credential algorithms the key makes, in its order of preference.
    public var algorithms = COSEAlgorithm.defaultCredentialAlgorithms
    public var attestation = AuthenticatorConfiguration.Attestation.batch
    /// The CTAP extensions it offers.
    public var extensions = ExtensionSet.all
    public var counter = CounterMode.counting
    /// RP IDs given a vendor-facilitated enterprise attestation once it is enabled.
    public var enterpriseRPIDs: [String] = []
    /// The BE/BS flags of the credentials it makes.
    public var defaultBackupEligibility = false
    public var defaultBackupState = false
    /// With several accounts at an RP and a user present: the key picks one (`recent`) or the
    /// client asks (`client`).
    public var accountChoice = AccountChooser.Policy.recent
    /// Reproducible keys (`DeterministicRandom`); only on a fresh store.
    public var seed: String?
    public var credentialKeys = CredentialKeys.software

    // How a person answers it (`latchkey serve`).
    public var presence = PresenceMode.prompt
    /// nil: the key has no built-in user verification (getInfo has no `uv`).
    public var userVerification: VerificationMode?

    // How the rig answers for a person (`addAuthenticator`; WebDriver's names).
    /// Built-in UV, answered by `isUserVerified` (or by `answerUserVerification`).
    public var hasUserVerification = false
    public var isUserVerified = false
    /// Off: each verification waits for `answerUserVerification`.
    public var automaticUserVerification = true
    public var isUserConsenting = true
    /// Off: each presence check waits for `answerPresence`.
    public var automaticPresenceSimulation = true

    public init() {}

    public var isU2F: Bool { protocolVersion == .u2f }

    /// The authenticator's configuration: the one place a key's options become it.
    public var authenticatorConfiguration: AuthenticatorConfiguration {
        var configuration = AuthenticatorConfiguration()
        configuration.attestation = attestation
        configuration.algorithms = algorithms
        configuration.protocolLevel = protocolVersion == .ctap20 ? .ctap20 : .ctap21
        configuration.extensions = extensions
        configuration.supportsResidentKeys = hasResidentKey && !isU2F
        configuration.keepsNonDiscoverableCredentials = keepsNonResidentCredentials
        configuration.enterpriseAttestationRPIDs = enterpriseRPIDs
        configuration.countersZero = counter == .zero
        configuration.defaultBackupFlags = [defaultBackupEligibility ? .backupEligible : [], defaultBackupState ? .backedUp : []]
        return configuration
    }

    /// What getInfo lists as extensions (none on a u2f key: it answers no getInfo).
    public var extensionIdentifiers: [String] { isU2F ? [] : authenticatorConfiguration.extensionIdentifiers }

    /// The CTAPHID layer's configuration: a u2f key reports no CBOR capability; the first channel
    /// ID is random, so channels of successive runs do not collide in clients' caches.
    public func hidConfiguration(vendorCommands: Set<UInt8> = []) -> CTAPHIDConfiguration {
        var hid = CTAPHIDConfiguration(channelIDSeed: UInt32.random(in: 1...0x7FFF_FFFF), vendorCommands: vendorCommands)
        if isU2F { hid.capabilities = CTAPHIDConfiguration.capabilityWink | CTAPHIDConfiguration.capabilityLock }
        return hid
    }

    /// The key's randomness: the seed's stream, or the system's.
    public var random: RandomSource { seed.map { DeterministicRandom(seed: Array($0.utf8)) } ?? SystemRandom() }

    /// The key's Authenticator on `store`: every key — served, a rig's, the fuzz key, a
    /// benchmark's — is made here from its specification.
    public func makeAuthenticator(store: CredentialStorePort, presence: UserPresence,
                                  userVerification: (any UserVerification)? = nil,
                                  clock: AuthenticatorClock = SystemClock(), random: RandomSource? = nil,
                                  accountChooser: AccountChooser? = nil,
                                  keyDevice: (any CredentialKeyDevice)? = nil) throws(StoreError) -> Authenticator {
        try Authenticator(configuration: authenticatorConfiguration, store: store, presence: presence,
                          userVerification: userVerification, clock: clock, random: random ?? self.random,
                          accountChooser: accountChooser ?? AccountChooser(policy: accountChoice), keyDevice: keyDevice)
    }
}
