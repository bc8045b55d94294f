import Authenticator
import CBOR
import CTAP
import CTAPHID
import CredentialStore
import FIDOCrypto
import Foundation
import LinuxHID
import Synchronization
import KeyService
import Presence
import SystemIO
import Encoding

/// One key of a `latchkey rig`: its own SQLite store, authenticator, transport (uhid or
/// socket) and poll loop on its own thread, with the rig's presence and UV providers. Started
/// by `addAuthenticator`, stopped (device gone, store deleted) by `removeAuthenticator`.
final class RigKey: @unchecked Sendable {
    struct Options: Sendable {
        var id: String
        var transport: KeyConfiguration.Transport
        /// The key itself, from addAuthenticator's parameters (KeyOption declares them).
        var key = KeySpecification()

        var isU2F: Bool { key.isU2F }
    }

    let options: Options
    let storeDirectory: String
    let store: SQLiteCredentialStore
    let presence: RigPresence
    let verification: RigVerification?
    let overrides = ResponseOverrides()
    let faults = RigFaults()
    /// The account a discoverable sign-in answers with (`selectCredential`; else the last used).
    let accountChooser: AccountChooser
    /// What its getInfo lists as extensions (none on a u2f key: it answers no getInfo).
    var extensionIdentifiers: [String] { options.key.extensionIdentifiers }
    /// Its getInfo maxSerializedLargeBlobArray: planted blobs must fit in it.
    var maxSerializedLargeBlobArray: Int { options.key.authenticatorConfiguration.maxSerializedLargeBlobArray }
    private let runner: KeyRunner
    private let stopped = DispatchSemaphore(value: 0)
    private let isStopped = Atomic<Bool>(false)
    /// The last counter each credential signed with on the wire (getCredentials' signCount).
    private let signCounts = SignCounts()

    var id: String { options.id }

    /// Opens the store in `storeDirectory`, brings up the transport and starts the key's loop
    /// on its own thread. Any failure undoes what was done and says what failed.
    init(options: Options, storeDirectory: String, events: RigEventHub, logger: Logger) throws(RigFailure) {
        accountChooser = AccountChooser(policy: options.key.accountChoice)
        self.options = options
        self.storeDirectory = storeDirectory
        let id = options.id
        let presence = RigPresence(automatic: options.key.automaticPresenceSimulation, consenting: options.key.isUserConsenting,
                                   logger: logger) { request in
            events.emit("presenceRequested", authenticatorID: id,
                        RigEventParams(rpId: request.rpID, operation: request.operation.rawValue))
        }
        let verification = options.key.hasUserVerification ? RigVerification(verified: options.key.isUserVerified,
                                                                              automatic: options.key.automaticUserVerification) { request in
            events.emit("uvRequested", authenticatorID: id, RigEventParams(rpId: request.rpID, purpose: request.purpose.rawValue))
        } : nil
        self.presence = presence
        self.verification = verification

        let existed = FileManager.default.fileExists(atPath: storeDirectory)
        // A seeded stream starts over with every start: on a store made before, its nonces would
        // repeat under the same wrapping key.
        if options.key.seed != nil, existed {
            throw .invalidParams("a seeded key needs a fresh store, and \(storeDirectory) exists: remove it or use another authenticatorId")
        }
        let signCounts = self.signCounts
        let overrides = self.overrides, faults = self.faults
        var assembly = KeyAssembly(specification: options.key, storeDirectory: storeDirectory, transport: options.transport,
                                   deviceName: Self.deviceName(id), presence: presence, logger: logger)
        assembly.userVerification = verification
        assembly.accountChooser = accountChooser
        assembly.wrapTransport = { device in FaultyTransport(device) }
        // The key's own Authenticator, wrapped: responses overridden as set, events read from
        // each response as the client gets it, faults come first.
        assembly.handlerChain = { authenticator, transport in
            let report: RigKeyHandler.Report = { wireEvents in
                for event in wireEvents {
                    if let credentialID = event.credentialID, let count = event.params.signCount {
                        signCounts.map.withLock { $0[credentialID] = count }
                    }
                    events.emit(event.name, authenticatorID: id, event.params)
                }
            }
            let handler = RigKeyHandler(authenticator, overrides: overrides, logger: logger, report: report)
            // The transport is the FaultyTransport wrapTransport made (KeyAssembly wraps first).
            let faulty = transport as? FaultyTransport ?? FaultyTransport(transport)
            return FaultInjectingHandler(handler, faults: faults, transport: faulty, logger: logger)
        }
        let key: AssembledKey
        do {
            key = try assembly.assemble()
        } catch {
            // A key that failed to start leaves no store behind that it made (KeyAssembly).
            switch error {
            case let .transport(failure):
                // What the key's own message suggests (serve --transport …) is not the rig's way.
                let withoutUHID = "; a key without uhid: addAuthenticator with \"transport\": \"socket\" and \"socketPath\": an absolute path"
                switch failure {
                case let .uhidUnavailable(path):
                    throw .failed("\(id): there is no uhid (\(path) cannot be opened: `sudo modprobe uhid`)" + withoutUHID)
                case let .permissionDenied(path) where path.hasSuffix("uhid"):
                    throw .failed("\(id): this user may not open \(path) (`latchkey doctor` says how to get access)" + withoutUHID)
                default:
                    throw .failed("\(id): \(failure.description)")
                }
            case .runner:
                throw .failed("\(id): \(error.description)")
            default:
                throw .failed(error.description)
            }
        }
        store = key.store
        runner = key.runner
        let runner = self.runner
        let stopped = self.stopped
        let thread = Thread {
            runner.run()
            stopped.signal()
        }
        thread.name = "latchkey.rig.\(id)"
        thread.start()
    }

    /// The HID name's and uniq's suffix: `Latchkey rig-<id>`, `latchkey:rig-<id>`.
    static func deviceName(_ id: String) -> String { "rig-" + id }

    /// Stops the loop (the device or socket goes away) and closes the store. Idempotent.
    func stop() {
        guard !isStopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        presence.control.stop()
        verification?.control.stop()
        runner.requestStop()
        stopped.wait()
        store.close()
    }

    func powerCycle() { runner.requestPowerCycle() }

    // MARK: Credentials

    /// The key's resident credentials as WebDriver Credentials, private keys included.
    func credentials() throws(RigFailure) -> [RigCredential] {
        let stored: [ResidentCredential]
        do {
            stored = try store.allResidentCredentials(includeHidden: true)
        } catch {
            throw .failed(error.message(directory: storeDirectory))
        }
        let blobs = try stored.contains { $0.largeBlobKey != nil } ? largeBlobArray() : nil
        var result: [RigCredential] = []
        for credential in stored { result.append(try describe(credential, largeBlobArray: blobs)) }
        return result
    }

    func credential(id credentialID: [UInt8]) throws(RigFailure) -> RigCredential {
        let stored: ResidentCredential?
        do {
            stored = try store.residentCredential(id: credentialID)
        } catch {
            throw .failed(error.message(directory: storeDirectory))
        }
        guard let stored else { throw Self.noSuchCredential(credentialID, on: id) }
        return try describe(stored, largeBlobArray: stored.largeBlobKey == nil ? nil : largeBlobArray())
    }

    /// The key's serialized large-blob array, as a client would read it.
    private func largeBlobArray() throws(RigFailure) -> [UInt8] {
        do {
            return try LargeBlobStorage.serializedArray(in: store)
        } catch {
            throw .failed(error.message(directory: storeDirectory))
        }
    }

    /// The credential's large blob (WebAuthn largeBlob, CTAP largeBlobKey): the element of the
    /// array sealed under its largeBlobKey, whoever wrote it (a browser, or addCredential).
    private func largeBlob(of credential: ResidentCredential, in array: [UInt8]?) throws(RigFailure) -> [UInt8]? {
        guard let key = credential.largeBlobKey, let array else { return nil }
        do {
            return try LargeBlobStorage.blob(in: array, key: key)
        } catch .unreadableArray {
            // What a client reads of an array it cannot parse: nothing (the key checks only the
            // hash of what is written). The other credentials are still listed.
            return nil
        } catch {
            throw .failed("credential \(Base64URL.encode(credential.credentialID)): \(error)")
        }
    }

    private func describe(_ credential: ResidentCredential, largeBlobArray: [UInt8]?) throws(RigFailure) -> RigCredential {
        guard let algorithm = COSEAlgorithm(rawValue: credential.algorithm)?.pkcs8Algorithm else {
            throw .failed("credential \(Base64URL.encode(credential.credentialID)): algorithm \(credential.algorithm) has no PKCS#8 form")
        }
        let der: SecretBytes
        do {
            der = try PKCS8PrivateKey.encode(algorithm, credential.privateKey)
        } catch {
            throw .failed("credential \(Base64URL.encode(credential.credentialID)): its key could not be encoded (\(error))")
        }
        return RigCredential(
            credentialId: Base64URL.encode(credential.credentialID), isResidentCredential: credential.discoverable,
            rpId: credential.rpID, privateKey: der.withUnsafeBytes { Base64URL.encode(Array($0)) },
            userHandle: credential.discoverable ? Base64URL.encode(credential.userHandle) : nil,
            signCount: signCounts.map.withLock { $0[credential.credentialID] } ?? 0,
            userName: credential.userName, userDisplayName: credential.userDisplayName,
            largeBlob: try largeBlob(of: credential, in: largeBlobArray).map(Base64URL.encode),
            backupEligibility: credential.backupEligible, backupState: credential.backedUp)
    }

    /// setCredentialProperties: the BE/BS flags the credential's assertions carry from now on
    /// (a flag left out keeps its value).
    /// `selectCredential`: the account the next discoverable sign-in at `rpID` answers with, named
    /// by credential ID or user handle; it must be one of the key's visible passkeys for that RP.
    func selectAccount(rpID: String, choice: AccountChooser.Choice) throws(RigFailure) {
        let passkeys: [ResidentCredential]
        do {
            passkeys = try store.allResidentCredentials(includeHidden: false).filter { $0.rpID == rpID && $0.discoverable }
        } catch {
            throw .failed(error.message(directory: storeDirectory))
        }
        guard passkeys.contains(where: { choice.matches(credentialID: $0.credentialID, userHandle: $0.userHandle) }) else {
            throw .invalidParams("\(id) has no passkey for \(rpID) with that \(choice.isCredentialID ? "credentialId" : "userHandle")")
        }
        accountChooser.select(choice, rpIDHash: SHA256.hash(Array(rpID.utf8)))
    }

    func setProperties(credentialID: [UInt8], backupEligibility: Bool?, backupState: Bool?,
                       events: RigEventHub) throws(RigFailure) {
        let updated: ResidentCredential?
        do {
            guard let stored = try store.residentCredential(id: credentialID) else { throw Self.noSuchCredential(credentialID, on: id) }
            let eligible = backupEligibility ?? stored.backupEligible, backedUp = backupState ?? stored.backedUp
            updated = try store.updateBackupState(credentialID: credentialID, eligible: eligible, backedUp: backedUp)
                ? try store.residentCredential(id: credentialID) : nil
        } catch let failure as RigFailure {
            throw failure
        } catch let error as StoreError {
            throw .failed(error.message(directory: storeDirectory))
        } catch {
            throw .failed("\(error)")
        }
        guard let updated else { throw Self.noSuchCredential(credentialID, on: id) }
        events.emit("credentialUpdated", authenticatorID: id, RigEventParams(
            credentialId: Base64URL.encode(credentialID), rpId: updated.rpID,
            userHandle: updated.discoverable ? Base64URL.encode(updated.userHandle) : nil,
            userName: updated.userName, userDisplayName: updated.userDisplayName,
            backupEligibility: updated.backupEligible, backupState: updated.backedUp))
    }

    /// Stores a credential given as WebDriver's Credential Parameters.
    func add(_ input: RigCredential, events: RigEventHub) throws(RigFailure) {
        // A u2f key keeps no resident credential; a non-resident one it takes (a P-256 key, the one
        // U2F signs with), signed with when a client names its key handle.
        if options.isU2F {
            guard input.isResidentCredential == false else {
                throw .invalidParams("\(id) is a u2f key: it has no resident credentials (give isResidentCredential false)")
            }
        }
        // A non-resident credential (WebDriver's isResidentCredential false) has an ID this key
        // did not make, so cannot be one whose ID wraps its key: it is stored, but only for
        // allowLists (`ResidentCredential.discoverable`), under a user handle of the store's own.
        let isResident = input.isResidentCredential ?? true
        if isResident && !options.key.hasResidentKey {
            throw .invalidParams("\(id) has no resident credentials (hasResidentKey false): add it with isResidentCredential false")
        }
        let credentialID = try Base64URL.decode(input.credentialId, member: "credential.credentialId")
        // What getInfo promises (maxCredentialIdLength): clients leave longer IDs out of the allowList.
        let maximumLength = AuthenticatorConfiguration().maxCredentialIDLength
        guard (1...maximumLength).contains(credentialID.count) else {
            throw .invalidParams("credential.credentialId must be 1 to \(maximumLength) bytes (getInfo's maxCredentialIdLength)")
        }
        let userHandle: [UInt8]
        if isResident {
            guard let userHandleText = input.userHandle else { throw .invalidParams("credential.userHandle is required") }
            userHandle = try Base64URL.decode(userHandleText, member: "credential.userHandle")
            guard (1...64).contains(userHandle.count) else { throw .invalidParams("credential.userHandle must be 1 to 64 bytes") }
        } else {
            // The key would never say it: assertions of a non-discoverable credential name no user.
            guard input.userHandle == nil, input.userName == nil, input.userDisplayName == nil else {
                throw .invalidParams("credential.userHandle, userName and userDisplayName are for resident credentials "
                                     + "(isResidentCredential true): a non-resident credential's assertions name no user")
            }
            userHandle = ResidentCredential.storedOnlyUserHandle(credentialID: credentialID)
        }
        guard !input.rpId.isEmpty, input.rpId.utf8.count <= 253 else { throw .invalidParams("credential.rpId must be an RP ID (1 to 253 bytes)") }
        guard let keyText = input.privateKey else { throw .invalidParams("credential.privateKey is required") }
        var der = try Base64URL.decode(keyText, member: "credential.privateKey")
        defer { der.wipe() }
        let algorithm: PKCS8PrivateKey.Algorithm
        let secret: SecretBytes
        do {
            (algorithm, secret) = try PKCS8PrivateKey.decode(der)
        } catch {
            throw .invalidParams("credential.privateKey: \(error)")
        }
        // As on a real key, a credential of an algorithm the key does not make cannot be on it.
        // PKCS#8 does not say which padding an RSA key signs with: the key's first RSA algorithm.
        let rsaAlgorithm = options.key.algorithms.first { $0.rsaPadding != nil }
        guard let coseAlgorithm = algorithm == .rsa ? rsaAlgorithm ?? .rs256 : COSEAlgorithm(pkcs8: algorithm) else {
            throw .invalidParams("credential.privateKey: a key of no credential algorithm")
        }
        guard !options.isU2F || coseAlgorithm == .es256 else {
            throw .invalidParams("credential.privateKey: an \(coseAlgorithm.name) key, and \(id) is a u2f key: U2F signs with P-256 (ES256) only")
        }
        guard options.key.algorithms.contains(coseAlgorithm) else {
            throw .invalidParams("credential.privateKey: an \(coseAlgorithm.name) key, and \(id) makes only "
                                 + options.key.algorithms.map(\.name).joined(separator: ", "))
        }
        let largeBlob = try input.largeBlob.map { (text) throws(RigFailure) in try Base64URL.decode(text, member: "credential.largeBlob") }
        if largeBlob != nil {
            // As Chromium's virtual authenticator: a blob needs a key that offers largeBlob and a
            // resident credential (largeBlobKey is for discoverable ones only, CTAP 2.1 §12.3).
            guard isResident else { throw .invalidParams("credential.largeBlob needs isResidentCredential true (largeBlobKey is for discoverable credentials)") }
            guard extensionIdentifiers.contains("largeBlobKey") else {
                throw .invalidParams("credential.largeBlob: \(id) does not offer largeBlob (its extensions: \(extensionIdentifiers.joined(separator: ", ")))")
            }
        }
        let rpIDHash = SHA256.hash(Array(input.rpId.utf8))
        var credential = ResidentCredential(
            credentialID: credentialID, rpID: input.rpId, rpIDHash: rpIDHash, rpName: nil, userHandle: userHandle,
            userName: input.userName, userDisplayName: input.userDisplayName,
            algorithm: coseAlgorithm.rawValue,
            privateKey: secret, createdAt: Int64(Date().timeIntervalSince1970))
        credential.discoverable = isResident
        credential.backupEligible = input.backupEligibility ?? options.key.defaultBackupEligibility
        credential.backedUp = input.backupState ?? options.key.defaultBackupState
        // No signCount: a counterless credential (signCount 0 always, as a synced passkey's), so
        // that it stays exportable; a signCount, even 0, asks for a counting one.
        credential.counterless = input.signCount == nil
        do {
            // The authenticator caches opened keys by credential ID: the same ID with another key
            // would sign with the old one, so an ID in use is refused rather than replaced.
            if try store.residentCredential(id: credentialID) != nil {
                throw RigFailure.invalidParams("credential \(input.credentialId) is already on \(id); removeCredential it first")
            }
            // A planted blob, sealed as a client would seal it, under a fresh largeBlobKey, goes into
            // the array first (one transaction: a client's write meanwhile is kept): an element
            // without its credential is one nobody can open, a credential without its blob would
            // not be what the test planted. It is taken out again if the credential is not stored.
            if let largeBlob {
                let key = SystemRandom().secret(count: 32)
                credential.largeBlobKey = key
                do {
                    try LargeBlobStorage.replaceBlob(largeBlob, key: key, maxLength: maxSerializedLargeBlobArray,
                                                     random: SystemRandom(), in: store)
                } catch {
                    switch error {
                    case .arrayFull: throw RigFailure.invalidParams("credential.largeBlob: \(error)")
                    case let .store(storeError): throw RigFailure.failed(storeError.message(directory: storeDirectory))
                    default: throw RigFailure.failed("credential.largeBlob: \(error)")
                    }
                }
            }
            func withdrawBlob() {
                guard let key = credential.largeBlobKey else { return }
                try? LargeBlobStorage.replaceBlob(nil, key: key, maxLength: .max, random: SystemRandom(), in: store)
            }
            do {
                try store.saveResidentCredential(credential)
            } catch {
                withdrawBlob()
                throw error
            }
            if let count = input.signCount, count > 0 {
                do {
                    try store.raiseSignatureCounter(credentialID: credentialID, to: count)
                } catch {
                    // Not added half: without its counter the credential would sign below signCount.
                    _ = try? store.deleteResidentCredential(id: credentialID)
                    withdrawBlob()
                    throw error
                }
            }
        } catch let failure as RigFailure {
            throw failure
        } catch let error as StoreError {
            throw .failed(error == .full ? "\(id) is full (\(store.maxResidentCredentials) resident credentials)"
                                         : error.message(directory: storeDirectory))
        } catch {
            throw .failed("\(error)")
        }
        let count = input.signCount ?? 0
        signCounts.map.withLock { $0[credentialID] = count }
        events.emit("credentialAdded", authenticatorID: id, RigEventParams(
            credentialId: Base64URL.encode(credentialID), rpId: input.rpId,
            userHandle: isResident ? Base64URL.encode(userHandle) : nil,
            userName: input.userName, isResidentCredential: isResident, signCount: count,
            backupEligibility: credential.backupEligible, backupState: credential.backedUp))
    }

    func remove(credentialID: [UInt8], events: RigEventHub) throws(RigFailure) {
        let removed: Bool
        do {
            removed = try store.deleteResidentCredential(id: credentialID)
        } catch {
            throw .failed(error.message(directory: storeDirectory))
        }
        guard removed else { throw Self.noSuchCredential(credentialID, on: id) }
        _ = signCounts.map.withLock { $0.removeValue(forKey: credentialID) }
        events.emit("credentialDeleted", authenticatorID: id, RigEventParams(credentialId: Base64URL.encode(credentialID)))
    }

    /// Removes every resident credential; how many there were.
    func removeAll(events: RigEventHub) throws(RigFailure) -> Int {
        let stored: [ResidentCredential]
        do {
            stored = try store.allResidentCredentials(includeHidden: true)
        } catch {
            throw .failed(error.message(directory: storeDirectory))
        }
        var removed = 0
        for credential in stored {
            do {
                if try store.deleteResidentCredential(id: credential.credentialID) { removed += 1 } else { continue }
            } catch {
                throw .failed(error.message(directory: storeDirectory))
            }
            _ = signCounts.map.withLock { $0.removeValue(forKey: credential.credentialID) }
            events.emit("credentialDeleted", authenticatorID: id,
                        RigEventParams(credentialId: Base64URL.encode(credential.credentialID)))
        }
        return removed
    }

    private static func noSuchCredential(_ credentialID: [UInt8], on id: String) -> RigFailure {
        RigFailure(.noSuchCredential, "\(id) has no credential \(Base64URL.encode(credentialID))")
    }

    // MARK: Description

    var info: RigAuthenticatorInfo {
        let socketPath: String? = if case let .socket(path) = options.transport { path } else { nil }
        let name = Self.deviceName(id)
        return RigAuthenticatorInfo(
            authenticatorId: id, protocol: options.key.protocolVersion.rawValue, transport: socketPath == nil ? "usb" : "socket", socketPath: socketPath,
            uniq: HIDDeviceInfo.latchkeyUniqPrefix + name, hidName: "Latchkey \(name)", storeDirectory: storeDirectory,
            hasResidentKey: options.key.hasResidentKey, hasUserVerification: verification != nil,
            isUserVerified: verification?.verified.load(ordering: .acquiring) ?? false,
            isUserConsenting: presence.consenting.load(ordering: .acquiring),
            automaticPresenceSimulation: presence.automatic.load(ordering: .acquiring),
            automaticUserVerification: verification?.automatic.load(ordering: .acquiring),
            defaultBackupEligibility: options.key.defaultBackupEligibility, defaultBackupState: options.key.defaultBackupState,
            extensions: extensionIdentifiers)
    }
}

/// The last counter each credential signed with on the wire.
private final class SignCounts: Sendable {
    let map = Mutex<[[UInt8]: UInt32]>([:])
}

/// An Authenticator as the protocol describes it.
struct RigAuthenticatorInfo: Encodable {
    var authenticatorId: String
    var `protocol`: String
    var transport: String
    var socketPath: String?
    var uniq: String
    var hidName: String
    var storeDirectory: String
    var hasResidentKey: Bool
    var hasUserVerification: Bool
    var isUserVerified: Bool
    var isUserConsenting: Bool
    var automaticPresenceSimulation: Bool
    /// Keys with user verification only.
    var automaticUserVerification: Bool?
    var defaultBackupEligibility: Bool
    var defaultBackupState: Bool
    /// The key's getInfo extensions (CTAP's identifiers).
    var extensions: [String]
}

/// WebDriver's Credential Parameters (DevTools' names for the user's).
struct RigCredential: Codable {
    var credentialId: String
    var isResidentCredential: Bool?
    var rpId: String
    var privateKey: String?
    var userHandle: String?
    var signCount: UInt32?
    var userName: String?
    var userDisplayName: String?
    var largeBlob: String?
    var backupEligibility: Bool?
    var backupState: Bool?
}
