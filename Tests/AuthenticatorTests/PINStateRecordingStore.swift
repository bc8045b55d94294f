import Authenticator
import FIDOCrypto

/// An in-memory store that records every PIN state write and can be made to fail them, to
/// show when the authenticator persists the retry counter.
final class PINStateRecordingStore: CredentialStorePort, @unchecked Sendable {
    let inner = InMemoryCredentialStore()
    var failPINStateWrites = false
    /// The retries value of every successful savePINState, in order.
    private(set) var savedRetries: [Int?] = []

    func loadDeviceSecrets(orCreate create: () throws -> DeviceSecrets) throws(StoreError) -> DeviceSecrets {
        try inner.loadDeviceSecrets(orCreate: create)
    }
    func replaceWrappingKey(_ key: SecretBytes) throws(StoreError) { try inner.replaceWrappingKey(key) }
    func residentCredentials(rpIDHash: [UInt8]) throws(StoreError) -> [ResidentCredential] {
        try inner.residentCredentials(rpIDHash: rpIDHash)
    }
    func residentCredential(id: [UInt8]) throws(StoreError) -> ResidentCredential? { try inner.residentCredential(id: id) }
    func discoverableCredentials(rpIDHash: [UInt8], userVerified: Bool) throws(StoreError) -> DiscoverableCredentials? {
        try inner.discoverableCredentials(rpIDHash: rpIDHash, userVerified: userVerified)
    }
    func discoverableCredential(after position: CredentialReference, rpIDHash: [UInt8],
                                userVerified: Bool) throws(StoreError) -> DiscoverableCredential? {
        try inner.discoverableCredential(after: position, rpIDHash: rpIDHash, userVerified: userVerified)
    }
    func saveResidentCredential(_ credential: ResidentCredential) throws(StoreError) {
        try inner.saveResidentCredential(credential)
    }
    func deleteResidentCredential(id: [UInt8]) throws(StoreError) -> Bool { try inner.deleteResidentCredential(id: id) }
    func updateUser(credentialID: [UInt8], name: String?, displayName: String?) throws(StoreError) {
        try inner.updateUser(credentialID: credentialID, name: name, displayName: displayName)
    }
    func residentCredentialCount() throws(StoreError) -> Int { try inner.residentCredentialCount() }
    func storedOnlyCredentialCount() throws(StoreError) -> Int { try inner.storedOnlyCredentialCount() }
    func credentialChangeCount() throws(StoreError) -> UInt64 { try inner.credentialChangeCount() }
    var maxResidentCredentials: Int { inner.maxResidentCredentials }
    func nextSignatureCounter(credentialID: [UInt8]?) throws(StoreError) -> UInt32 {
        try inner.nextSignatureCounter(credentialID: credentialID)
    }
    func relyingParties() throws(StoreError) -> [RelyingPartyEntry] { try inner.relyingParties() }
    func loadPINState() throws(StoreError) -> PINState? { try inner.loadPINState() }
    func savePINState(_ state: PINState?) throws(StoreError) {
        if failPINStateWrites { throw .io("injected failure") }
        try inner.savePINState(state)
        savedRetries.append(state?.retries)
    }
    func loadSetting(_ key: String) throws(StoreError) -> [UInt8]? { try inner.loadSetting(key) }
    func saveSetting(_ key: String, value: [UInt8]?) throws(StoreError) { try inner.saveSetting(key, value: value) }
    func updateSetting(_ key: String, _ transform: ([UInt8]?) -> [UInt8]?) throws(StoreError) { try inner.updateSetting(key, transform) }
    func reset(newWrappingKey: SecretBytes) throws(StoreError) { try inner.reset(newWrappingKey: newWrappingKey) }
}
