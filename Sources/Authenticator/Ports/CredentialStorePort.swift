import FIDOCrypto

/// The store port: everything the authenticator keeps across requests and power cycles.
///
/// Implementations: `SQLiteCredentialStore` (module CredentialStore) for real keys,
/// `InMemoryCredentialStore` (this module) for tests and throwaway keys.
/// The authenticator calls the port from one worker thread at a time; implementations
/// must still tolerate other processes (the CLI) changing the same store between calls.
public protocol CredentialStorePort: AnyObject {
    /// Device secrets, created on first use by `create` and stable afterwards (until `reset`
    /// replaces the wrapping key).
    func loadDeviceSecrets(orCreate create: () throws -> DeviceSecrets) throws(StoreError) -> DeviceSecrets

    /// Replace the wrapping key (authenticatorReset invalidates every non-resident credential).
    func replaceWrappingKey(_ key: SecretBytes) throws(StoreError)

    /// Replace the store's own attestation key and certificates (a reset of a key run with
    /// `--attestation installation`: a new identity, so nothing links the registrations before
    /// the reset to those after).
    func replaceAttestation(privateKey: SecretBytes, certificate: [UInt8], caCertificate: [UInt8]) throws(StoreError)

    /// Visible (not hidden) resident credentials of one RP, newest first.
    func residentCredentials(rpIDHash: [UInt8]) throws(StoreError) -> [ResidentCredential]

    /// One resident credential by ID, hidden or not (callers check `hiddenSince`).
    func residentCredential(id: [UInt8]) throws(StoreError) -> ResidentCredential?

    /// What a getAssertion without an allowList may use: the RP's visible credentials that need
    /// no credential ID list (credProtect 1, or any level when `userVerified`), newest first —
    /// how many, and the first of them read whole. Nil: none.
    func discoverableCredentials(rpIDHash: [UInt8], userVerified: Bool) throws(StoreError) -> DiscoverableCredentials?

    /// The next of those credentials after `position` (nil: none left), for getNextAssertion and
    /// credential enumeration: one read each, so handing out n costs O(n) in all. One deleted or
    /// hidden since is skipped; one made since is usually not reached (it is newer than
    /// `position`), but may be when the store reuses a freed row ID within the same second or the
    /// clock steps back — the count the caller keeps still bounds how many are handed out.
    func discoverableCredential(after position: CredentialReference, rpIDHash: [UInt8],
                                userVerified: Bool) throws(StoreError) -> DiscoverableCredential?

    /// Insert, replacing any credential with the same (rpIdHash, userHandle) — CTAP 2.1
    /// §6.1.2 step 17: a new discoverable credential for the same account overwrites the old.
    /// Durable when it returns.
    func saveResidentCredential(_ credential: ResidentCredential) throws(StoreError)

    /// Delete one resident credential; false when there was none.
    @discardableResult
    func deleteResidentCredential(id: [UInt8]) throws(StoreError) -> Bool

    /// Replace user name / display name of a stored credential (nil removes the field).
    func updateUser(credentialID: [UInt8], name: String?, displayName: String?) throws(StoreError)

    /// Replace the BE/BS flags of a stored credential (a test rig's setCredentialProperties);
    /// false when there is none with that ID.
    func updateBackupState(credentialID: [UInt8], eligible: Bool, backedUp: Bool) throws(StoreError) -> Bool

    /// Records that a stored credential gave an hmac-secret output (`ResidentCredential.usedHMACSecret`).
    func markHMACSecretUsed(credentialID: [UInt8]) throws(StoreError)

    /// Number of stored resident credentials (hidden ones included: they still take space).
    func residentCredentialCount() throws(StoreError) -> Int

    /// A number that changes whenever a stored credential is made, deleted, hidden, shown or
    /// rewritten, and on nothing else; it survives restarts (CTAP 2.3 encCredStoreState).
    func credentialChangeCount() throws(StoreError) -> UInt64

    /// How many of those are stored for allowLists only (`ResidentCredential.discoverable`
    /// false: a rig's non-resident credential): they take space but are no discoverable
    /// credential, so getCredsMetadata does not count them as existing.
    func storedOnlyCredentialCount() throws(StoreError) -> Int

    /// The most resident credentials the store accepts.
    var maxResidentCredentials: Int { get }

    /// The next signature counter value. `credentialID == nil` is the device-global counter
    /// (non-resident and U2F credentials); otherwise the resident credential's own counter.
    /// Never returns a value at or below one handed out before, across crashes: implementations
    /// reserve blocks durably ahead and hand out values below the durable high-water mark.
    func nextSignatureCounter(credentialID: [UInt8]?) throws(StoreError) -> UInt32

    /// Distinct RPs that have visible resident credentials (credentialManagement enumerateRPs).
    func relyingParties() throws(StoreError) -> [RelyingPartyEntry]

    /// Persistent PIN state (nil: no PIN set).
    func loadPINState() throws(StoreError) -> PINState?
    func savePINState(_ state: PINState?) throws(StoreError)

    /// Key-wide settings persisted for authenticatorConfig (alwaysUv, minPINLength, …).
    func loadSetting(_ key: String) throws(StoreError) -> [UInt8]?
    func saveSetting(_ key: String, value: [UInt8]?) throws(StoreError)
    /// Reads a setting and stores what `transform` makes of it in one transaction, so that no
    /// other writer's commit in between is lost (a rig planting a large blob beside a client
    /// writing the array).
    func updateSetting(_ key: String, _ transform: ([UInt8]?) -> [UInt8]?) throws(StoreError)

    /// authenticatorReset: delete every credential, the PIN and settings; keep AAGUID and
    /// attestation; install `newWrappingKey`. One transaction.
    func reset(newWrappingKey: SecretBytes) throws(StoreError)
}

/// One RP as listed by credential management.
public struct RelyingPartyEntry: Sendable, Equatable {
    public var rpID: String
    public var rpIDHash: [UInt8]
    public var name: String?
    public init(rpID: String, rpIDHash: [UInt8], name: String?) {
        self.rpID = rpID; self.rpIDHash = rpIDHash; self.name = name
    }
}

/// Persistent clientPIN state (CTAP 2.1 §6.5).
public struct PINState: Sendable, Equatable {
    /// LEFT(SHA-256(PIN), 16); nil when no PIN is set but retries are tracked. A secret: it
    /// gives the PIN to an offline search, so it lives in `SecretBytes` like the keys.
    public var pinHash: SecretBytes?
    /// Code points of the current PIN (for minPINLength checks after setMinPINLength).
    public var pinCodePoints: Int
    public var retries: Int
    public var forcePINChange: Bool
    public init(pinHash: SecretBytes?, pinCodePoints: Int, retries: Int, forcePINChange: Bool) {
        self.pinHash = pinHash; self.pinCodePoints = pinCodePoints
        self.retries = retries; self.forcePINChange = forcePINChange
    }

    public static func == (a: PINState, b: PINState) -> Bool {
        let sameHash = switch (a.pinHash, b.pinHash) {
        case (nil, nil): true
        case let (left?, right?): constantTimeEquals(left, right)
        default: false
        }
        return sameHash && a.pinCodePoints == b.pinCodePoints && a.retries == b.retries && a.forcePINChange == b.forcePINChange
    }
}

/// Where a credential stands in the order of `discoverableCredentials`; opaque to the
/// authenticator (the SQLite store uses the row's creation time and row ID, so continuing after
/// it needs no decryption and no list of what is left).
public struct CredentialReference: Sendable, Hashable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// A position made of integers, 8 bytes each, big-endian (as both stores make theirs).
    public init(integers: [Int64]) {
        bytes = integers.flatMap { value in (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
    }

    /// The `count` integers of a position made by `init(integers:)`; nil when it is not that long.
    public func integers(count: Int) -> [Int64]? {
        guard bytes.count == count * 8 else { return nil }
        return (0..<count).map { index in bytes[(index * 8)..<(index * 8 + 8)].reduce(0) { $0 << 8 | Int64($1) } }
    }
}

/// One credential of `discoverableCredential(after:…)`, and its position to continue from.
public struct DiscoverableCredential: Sendable {
    public var credential: ResidentCredential
    public var position: CredentialReference
    public init(credential: ResidentCredential, position: CredentialReference) {
        self.credential = credential; self.position = position
    }
}

/// The answer of `discoverableCredentials`: how many usable credentials there are, newest
/// first, and the first of them read whole.
public struct DiscoverableCredentials: Sendable {
    public var first: ResidentCredential
    /// Where `first` stands: `discoverableCredential(after:…)` continues from here.
    public var position: CredentialReference
    /// All of them, `first` included (numberOfCredentials, totalCredentials).
    public var count: Int
    public init(first: ResidentCredential, position: CredentialReference, count: Int) {
        self.first = first; self.position = position; self.count = count
    }
}

extension CredentialStorePort {
    /// For stores that keep no attestation of their own (wrappers in tests): refused.
    public func replaceAttestation(privateKey: SecretBytes, certificate: [UInt8], caCertificate: [UInt8]) throws(StoreError) {
        throw .io("this store cannot replace its attestation")
    }

    /// For stores that only wrap another (tests): nothing is recorded.
    public func markHMACSecretUsed(credentialID: [UInt8]) throws(StoreError) {}

    /// For stores that only wrap another (tests): refused.
    public func updateBackupState(credentialID: [UInt8], eligible: Bool, backedUp: Bool) throws(StoreError) -> Bool {
        throw .io("this store cannot change backup flags")
    }
}

/// Errors of the store layer. Mapped to the wire in one place (`CTAP2StatusCode.init(_:)`).
public enum StoreError: Error, Equatable, Sendable {
    case full                       // → CTAP2_ERR_KEY_STORE_FULL
    case corrupt(String)            // a row failed to decrypt or parse → CTAP2_ERR_OTHER
    case io(String)                 // SQLite or file system failure → CTAP2_ERR_OTHER
    case locked                     // another process holds the store's lock
    case permissions(String)        // directory or files readable by group/others
    case sealed(String)             // the master key is sealed and was not (or could not be) opened
}
