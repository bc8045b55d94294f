import FIDOCrypto
import Synchronization

/// A store that forgets everything at exit: for unit tests of the core and for throwaway keys.
public final class InMemoryCredentialStore: CredentialStorePort, @unchecked Sendable {
    /// (rpIdHash, user handle): one credential per account.
    private struct Account: Hashable {
        var rpIDHash: [UInt8]
        var userHandle: [UInt8]
        init(_ credential: ResidentCredential) { rpIDHash = credential.rpIDHash; userHandle = credential.userHandle }
    }

    private struct State {
        var secrets: DeviceSecrets?
        var credentials: [ResidentCredential] = []
        /// credentialChangeCount: one more for every credential saved, deleted or changed.
        var changes: UInt64 = 0
        /// When each of `credentials` was saved (ascending, as they are): its position in the
        /// discoverable order, so that continuing after one is a binary search.
        var sequences: [Int64] = []
        var nextSequence: Int64 = 1
        /// The accounts in `credentials`, so that saving a new account needs no scan (tests
        /// store tens of thousands of credentials).
        var accounts: Set<Account> = []
        var counters: [[UInt8]: UInt32] = [:]
        var globalCounter: UInt32 = 0
        var pin: PINState?
        var settings: [String: [UInt8]] = [:]

        mutating func remove(at index: Int) {
            credentials.remove(at: index)
            sequences.remove(at: index)
        }
    }
    private let state = Mutex(State())
    public let maxResidentCredentials: Int

    public init(maxResidentCredentials: Int = 1000) {
        self.maxResidentCredentials = maxResidentCredentials
    }

    public func loadDeviceSecrets(orCreate create: () throws -> DeviceSecrets) throws(StoreError) -> DeviceSecrets {
        if let existing = state.withLock({ $0.secrets }) { return existing }
        let created: DeviceSecrets
        do { created = try create() } catch { throw .io("cannot create device secrets") }
        state.withLock { $0.secrets = created }
        return created
    }

    public func replaceWrappingKey(_ key: SecretBytes) throws(StoreError) {
        state.withLock { $0.secrets?.wrappingKey = key }
    }

    public func replaceAttestation(privateKey: SecretBytes, certificate: [UInt8], caCertificate: [UInt8]) throws(StoreError) {
        state.withLock {
            $0.secrets?.attestationPrivateKey = privateKey
            $0.secrets?.attestationCertificate = certificate
            $0.secrets?.attestationCACertificate = caCertificate
        }
    }

    public func residentCredentials(rpIDHash: [UInt8]) throws(StoreError) -> [ResidentCredential] {
        state.withLock { state in
            state.credentials.filter { $0.rpIDHash == rpIDHash && $0.hiddenSince == nil }.reversed()
        }
    }

    /// Newest first; positioned by when each was saved (`sequences`).
    public func discoverableCredentials(rpIDHash: [UInt8], userVerified: Bool) throws(StoreError) -> DiscoverableCredentials? {
        state.withLock { state in
            let usable = state.credentials.indices.reversed().filter {
                state.credentials[$0].rpIDHash == rpIDHash && state.credentials[$0].isDiscoverable(userVerified: userVerified)
            }
            guard let first = usable.first else { return nil }
            return DiscoverableCredentials(first: state.credentials[first], position: CredentialReference(integers: [state.sequences[first]]),
                                           count: usable.count)
        }
    }

    public func discoverableCredential(after position: CredentialReference, rpIDHash: [UInt8],
                                       userVerified: Bool) throws(StoreError) -> DiscoverableCredential? {
        guard let sequence = position.integers(count: 1)?.first else {
            throw .corrupt("a discoverable credential position of \(position.bytes.count) bytes")
        }
        return state.withLock { state in
            // The first index saved at or after `sequence`; the ones before it are older.
            var low = 0, high = state.sequences.count
            while low < high {
                let middle = (low + high) / 2
                if state.sequences[middle] < sequence { low = middle + 1 } else { high = middle }
            }
            for index in (0..<low).reversed() where state.credentials[index].rpIDHash == rpIDHash
                && state.credentials[index].isDiscoverable(userVerified: userVerified) {
                return DiscoverableCredential(credential: state.credentials[index], position: CredentialReference(integers: [state.sequences[index]]))
            }
            return nil
        }
    }

    public func residentCredential(id: [UInt8]) throws(StoreError) -> ResidentCredential? {
        state.withLock { $0.credentials.first { $0.credentialID == id } }
    }

    public func saveResidentCredential(_ credential: ResidentCredential) throws(StoreError) {
        let full: Bool = state.withLock { state in
            let account = Account(credential)
            if state.accounts.contains(account) {
                let replaced = state.credentials.indices.filter {
                    state.credentials[$0].rpIDHash == credential.rpIDHash && state.credentials[$0].userHandle == credential.userHandle
                }
                for index in replaced.reversed() { state.remove(at: index) }
                state.accounts.remove(account)
            }
            guard state.credentials.count < maxResidentCredentials else { return true }
            state.credentials.append(credential)
            state.sequences.append(state.nextSequence)
            state.nextSequence += 1
            state.accounts.insert(account)
            state.changes += 1
            return false
        }
        if full { throw .full }
    }

    public func deleteResidentCredential(id: [UInt8]) throws(StoreError) -> Bool {
        state.withLock { state in
            guard let index = state.credentials.firstIndex(where: { $0.credentialID == id }) else { return false }
            state.accounts.remove(Account(state.credentials[index]))
            state.remove(at: index)
            state.changes += 1
            return true
        }
    }

    public func updateUser(credentialID: [UInt8], name: String?, displayName: String?) throws(StoreError) {
        state.withLock { state in
            for index in state.credentials.indices where state.credentials[index].credentialID == credentialID {
                state.credentials[index].userName = name
                state.credentials[index].userDisplayName = displayName
                state.changes += 1
            }
        }
    }

    public func updateBackupState(credentialID: [UInt8], eligible: Bool, backedUp: Bool) throws(StoreError) -> Bool {
        state.withLock { state in
            guard let index = state.credentials.firstIndex(where: { $0.credentialID == credentialID }) else { return false }
            state.credentials[index].backupEligible = eligible
            state.credentials[index].backedUp = backedUp
            state.changes += 1
            return true
        }
    }

    public func markHMACSecretUsed(credentialID: [UInt8]) throws(StoreError) {
        state.withLock { state in
            if let index = state.credentials.firstIndex(where: { $0.credentialID == credentialID }) {
                state.credentials[index].usedHMACSecret = true
            }
        }
    }

    public func residentCredentialCount() throws(StoreError) -> Int {
        state.withLock { $0.credentials.count }
    }

    public func credentialChangeCount() throws(StoreError) -> UInt64 {
        state.withLock { $0.changes }
    }

    public func storedOnlyCredentialCount() throws(StoreError) -> Int {
        state.withLock { $0.credentials.count { !$0.discoverable } }
    }

    public func nextSignatureCounter(credentialID: [UInt8]?) throws(StoreError) -> UInt32 {
        state.withLock { state in
            if let credentialID {
                let next = (state.counters[credentialID] ?? 0) &+ 1
                state.counters[credentialID] = next
                return next
            }
            state.globalCounter &+= 1
            return state.globalCounter
        }
    }

    public func relyingParties() throws(StoreError) -> [RelyingPartyEntry] {
        state.withLock { state in
            var seen: [[UInt8]: RelyingPartyEntry] = [:]
            for credential in state.credentials where credential.hiddenSince == nil && credential.discoverable
                && seen[credential.rpIDHash] == nil {
                seen[credential.rpIDHash] = RelyingPartyEntry(rpID: credential.rpID, rpIDHash: credential.rpIDHash,
                                                              name: credential.rpName)
            }
            return seen.values.sorted { $0.rpID < $1.rpID }
        }
    }

    public func loadPINState() throws(StoreError) -> PINState? { state.withLock { $0.pin } }
    public func savePINState(_ pin: PINState?) throws(StoreError) { state.withLock { $0.pin = pin } }
    public func loadSetting(_ key: String) throws(StoreError) -> [UInt8]? { state.withLock { $0.settings[key] } }
    public func saveSetting(_ key: String, value: [UInt8]?) throws(StoreError) { state.withLock { $0.settings[key] = value } }
    public func updateSetting(_ key: String, _ transform: ([UInt8]?) -> [UInt8]?) throws(StoreError) {
        state.withLock { $0.settings[key] = transform($0.settings[key]) }
    }

    public func reset(newWrappingKey: SecretBytes) throws(StoreError) {
        state.withLock { state in
            state.credentials = []
            state.changes += 1
            state.sequences = []
            state.accounts = []
            state.pin = nil
            state.settings = [:]
            state.secrets?.wrappingKey = newWrappingKey
        }
    }

    /// Test hook: mark a credential hidden as a signal would.
    public func hide(credentialID: [UInt8], at time: Int64) {
        state.withLock { state in
            for index in state.credentials.indices where state.credentials[index].credentialID == credentialID {
                state.credentials[index].hiddenSince = time
                state.changes += 1
            }
        }
    }
}
