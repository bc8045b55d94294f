import Authenticator
import FIDOCrypto
import Synchronization

/// An in-memory store that counts the credential reads the authenticator makes, to show that
/// enumeration asks the store once per Begin rather than once per item.
final class CountingStore: CredentialStorePort, @unchecked Sendable {
    let inner: InMemoryCredentialStore
    private let counts = Mutex<[String: Int]>([:])

    init(_ inner: InMemoryCredentialStore = InMemoryCredentialStore()) { self.inner = inner }

    func count(_ call: String) -> Int { counts.withLock { $0[call] ?? 0 } }
    func resetCounts() { counts.withLock { $0 = [:] } }
    private func record(_ call: String) { counts.withLock { $0[call, default: 0] += 1 } }

    func loadDeviceSecrets(orCreate create: () throws -> DeviceSecrets) throws(StoreError) -> DeviceSecrets {
        try inner.loadDeviceSecrets(orCreate: create)
    }
    func replaceWrappingKey(_ key: SecretBytes) throws(StoreError) { try inner.replaceWrappingKey(key) }
    func residentCredentials(rpIDHash: [UInt8]) throws(StoreError) -> [ResidentCredential] {
        record("residentCredentials(rpIDHash:)")
        return try inner.residentCredentials(rpIDHash: rpIDHash)
    }
    func residentCredential(id: [UInt8]) throws(StoreError) -> ResidentCredential? {
        record("residentCredential(id:)")
        return try inner.residentCredential(id: id)
    }
    func discoverableCredentials(rpIDHash: [UInt8], userVerified: Bool) throws(StoreError) -> DiscoverableCredentials? {
        record("discoverableCredentials")
        return try inner.discoverableCredentials(rpIDHash: rpIDHash, userVerified: userVerified)
    }
    func discoverableCredential(after position: CredentialReference, rpIDHash: [UInt8],
                                userVerified: Bool) throws(StoreError) -> DiscoverableCredential? {
        record("discoverableCredential(after:)")
        return try inner.discoverableCredential(after: position, rpIDHash: rpIDHash, userVerified: userVerified)
    }
    func saveResidentCredential(_ credential: ResidentCredential) throws(StoreError) {
        try inner.saveResidentCredential(credential)
    }
    func deleteResidentCredential(id: [UInt8]) throws(StoreError) -> Bool {
        record("deleteResidentCredential(id:)")
        return try inner.deleteResidentCredential(id: id)
    }
    func updateUser(credentialID: [UInt8], name: String?, displayName: String?) throws(StoreError) {
        record("updateUser")
        try inner.updateUser(credentialID: credentialID, name: name, displayName: displayName)
    }
    func residentCredentialCount() throws(StoreError) -> Int { try inner.residentCredentialCount() }
    func storedOnlyCredentialCount() throws(StoreError) -> Int { try inner.storedOnlyCredentialCount() }
    func credentialChangeCount() throws(StoreError) -> UInt64 { try inner.credentialChangeCount() }
    var maxResidentCredentials: Int { inner.maxResidentCredentials }
    func nextSignatureCounter(credentialID: [UInt8]?) throws(StoreError) -> UInt32 {
        try inner.nextSignatureCounter(credentialID: credentialID)
    }
    func relyingParties() throws(StoreError) -> [RelyingPartyEntry] {
        record("relyingParties()")
        return try inner.relyingParties()
    }
    func loadPINState() throws(StoreError) -> PINState? { try inner.loadPINState() }
    func savePINState(_ state: PINState?) throws(StoreError) { try inner.savePINState(state) }
    func loadSetting(_ key: String) throws(StoreError) -> [UInt8]? { try inner.loadSetting(key) }
    func saveSetting(_ key: String, value: [UInt8]?) throws(StoreError) {
        record("saveSetting(\(key))")
        try inner.saveSetting(key, value: value)
    }
    func updateSetting(_ key: String, _ transform: ([UInt8]?) -> [UInt8]?) throws(StoreError) {
        record("updateSetting(\(key))")
        try inner.updateSetting(key, transform)
    }
    func reset(newWrappingKey: SecretBytes) throws(StoreError) { try inner.reset(newWrappingKey: newWrappingKey) }
}
