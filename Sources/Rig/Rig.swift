import Authenticator
import CBOR
import CTAP
import CredentialStore
import Foundation
import Synchronization
import KeyService
import Presence
import SystemIO
import Encoding

/// `latchkey rig`: many keys in one process, added and removed through the control API
/// (`RigProtocol`, served by `RigControlServer`). Each key is a `RigKey` with its store in
/// `root/<authenticatorId>`. Thread-safe: every control connection calls in from its own thread.
public final class Rig: @unchecked Sendable {
    /// Keys one rig runs at most (each is a thread, a store connection and a device).
    public static let maximumKeys = 128

    let root: String
    let uhidPath: String
    let logger: Logger
    let events = RigEventHub()
    /// Guarded by `lock`; `order` keeps `listAuthenticators` in the order keys were added.
    private let lock = NSLock()
    private var keys: [String: RigKey] = [:]
    private var order: [String] = []
    /// Ids being started or removed (their store directories are in use).
    private var starting: Set<String> = []
    private var nextNumber = 1
    private var isStopped = false
    private let closing = Atomic<Bool>(false)

    /// Whether control connections should end (the rig is stopping).
    var isClosing: Bool { closing.load(ordering: .acquiring) }

    public init(root: String, uhidPath: String, logger: Logger) {
        self.root = root
        self.uhidPath = uhidPath
        self.logger = logger
    }

    /// Stops every key; later requests fail. Stores stay in `root` (the caller removes a
    /// temporary root).
    public func stop() {
        closeConnections()
        lock.lock()
        isStopped = true
        let running = order.compactMap { keys[$0] }
        keys = [:]
        order = []
        lock.unlock()
        for key in running { key.stop() }
    }

    /// Ends control connections (they look every 250 ms) and releases answers that wait.
    public func closeConnections() {
        closing.store(true, ordering: .releasing)
        for key in runningKeys() {
            key.presence.control.stop()
            key.verification?.control.stop()
        }
    }

    /// Runs one request line; the response line. Blocking methods (`answerPresence`) hold the
    /// calling thread until answered.
    /// `isAbandoned`: whether the asking connection has closed (an answer that waits is then
    /// withdrawn, so it cannot decide a request nobody answers any more).
    func handle(method: String, line: Data, isAbandoned: @escaping () -> Bool = { false }) throws(RigFailure) -> any Encodable {
        switch method {
        case "addAuthenticator":
            return try addAuthenticator(RigProtocol.params(AddAuthenticatorParams.self, from: line))
        case "removeAuthenticator":
            let id = try RigProtocol.params(AuthenticatorParams.self, from: line).authenticatorId
            try removeAuthenticator(id)
            return EmptyResult()
        case "listAuthenticators":
            return AuthenticatorList(authenticators: runningKeys().map(\.info))
        case "addCredential":
            let params = try RigProtocol.params(AddCredentialParams.self, from: line)
            try key(params.authenticatorId).add(params.credential, events: events)
            return EmptyResult()
        case "getCredential":
            let params = try RigProtocol.params(CredentialParams.self, from: line)
            return try key(params.authenticatorId).credential(id: Base64URL.decode(params.credentialId, member: "credentialId"))
        case "getCredentials":
            let id = try RigProtocol.params(AuthenticatorParams.self, from: line).authenticatorId
            return CredentialList(credentials: try key(id).credentials())
        case "removeCredential":
            let params = try RigProtocol.params(CredentialParams.self, from: line)
            try key(params.authenticatorId).remove(credentialID: Base64URL.decode(params.credentialId, member: "credentialId"),
                                                  events: events)
            return EmptyResult()
        case "removeAllCredentials":
            let id = try RigProtocol.params(AuthenticatorParams.self, from: line).authenticatorId
            return RemovedCount(removed: try key(id).removeAll(events: events))
        case "setUserVerified":
            let params = try RigProtocol.params(SetUserVerifiedParams.self, from: line)
            let key = try key(params.authenticatorId)
            try verification(of: key.id).verified.store(params.isUserVerified, ordering: .releasing)
            return EmptyResult()
        case "setUserConsenting":
            let params = try RigProtocol.params(SetUserConsentingParams.self, from: line)
            try key(params.authenticatorId).presence.consenting.store(params.isUserConsenting, ordering: .releasing)
            return EmptyResult()
        case "setAutomaticPresenceSimulation":
            let params = try RigProtocol.params(SetAutomaticPresenceParams.self, from: line)
            try key(params.authenticatorId).presence.automatic.store(params.enabled, ordering: .releasing)
            return EmptyResult()
        case "setAutomaticUserVerification":
            let params = try RigProtocol.params(SetAutomaticPresenceParams.self, from: line)
            try verification(of: params.authenticatorId).automatic.store(params.enabled, ordering: .releasing)
            return EmptyResult()
        case "answerUserVerification":
            return try answerUserVerification(RigProtocol.params(AnswerVerificationParams.self, from: line), isAbandoned: isAbandoned)
        case "answerPresence":
            return try answerPresence(RigProtocol.params(AnswerPresenceParams.self, from: line), isAbandoned: isAbandoned)
        case "powerCycle":
            let id = try RigProtocol.params(AuthenticatorParams.self, from: line).authenticatorId
            try key(id).powerCycle()
            return EmptyResult()
        case "setResponseOverrideBits":
            let params = try RigProtocol.params(SetResponseOverrideBitsParams.self, from: line)
            let overridden = try key(params.authenticatorId)
            guard !overridden.options.isU2F else {
                throw .unsupported("\(overridden.id) is a u2f key: response overrides apply to CTAP2 makeCredential/getAssertion")
            }
            let overrides = overridden.overrides
            overrides.bogusSignature.store(params.isBogusSignature ?? false, ordering: .releasing)
            overrides.badUV.store(params.isBadUV ?? false, ordering: .releasing)
            overrides.badUP.store(params.isBadUP ?? false, ordering: .releasing)
            return EmptyResult()
        case "injectFault":
            let params = try RigProtocol.params(InjectFaultParams.self, from: line)
            let key = try key(params.authenticatorId)
            let (fault, match, times) = try params.checked()
            if key.options.isU2F, case .ctap2 = match {
                throw .invalidParams("\(key.id) is a u2f key: it answers no CTAP2 command (use any, u2fRegister, u2fAuthenticate or u2fVersion)")
            }
            return FaultAdded(faultId: key.faults.add(fault, for: match, times: times))
        case "clearFaults":
            let id = try RigProtocol.params(AuthenticatorParams.self, from: line).authenticatorId
            return FaultsCleared(cleared: try key(id).faults.clear())
        case "setCredentialProperties":
            let params = try RigProtocol.params(SetCredentialPropertiesParams.self, from: line)
            try key(params.authenticatorId).setProperties(
                credentialID: Base64URL.decode(params.credentialId, member: "credentialId"),
                backupEligibility: params.backupEligibility, backupState: params.backupState, events: events)
            return EmptyResult()
        case "selectCredential":
            let params = try RigProtocol.params(SelectCredentialParams.self, from: line)
            let choice: AccountChooser.Choice
            switch (params.credentialId, params.userHandle) {
            case let (id?, nil): choice = .credentialID(try Base64URL.decode(id, member: "credentialId"))
            case let (nil, handle?): choice = .userHandle(try Base64URL.decode(handle, member: "userHandle"))
            default: throw RigFailure.invalidParams("give credentialId or userHandle (one of them)")
            }
            try key(params.authenticatorId).selectAccount(rpID: params.rpId, choice: choice)
            return EmptyResult()
        default:
            throw RigFailure(.unknownMethod, "unknown method '\(method)'")
        }
    }

    /// The running keys, in the order they were added.
    func runningKeys() -> [RigKey] {
        lock.lock()
        defer { lock.unlock() }
        return order.compactMap { keys[$0] }
    }

    func key(_ id: String) throws(RigFailure) -> RigKey {
        lock.lock()
        defer { lock.unlock() }
        if let key = keys[id] { return key }
        let known = order.isEmpty ? "none" : order.joined(separator: ", ")
        throw RigFailure(.noSuchAuthenticator, "no authenticator '\(id)' (authenticators: \(known))")
    }

    // MARK: addAuthenticator / removeAuthenticator

    private func addAuthenticator(_ params: AddAuthenticatorParams) throws(RigFailure) -> RigAuthenticatorInfo {
        let specification: KeySpecification
        do {
            specification = try KeySpecification.make(params.keyValues, dialect: .rig)
        } catch {
            throw .invalidParams(error.message)
        }
        let transport: KeyConfiguration.Transport
        switch params.transport ?? "usb" {
        case "usb", "uhid":
            guard params.socketPath == nil else { throw .invalidParams("params.socketPath is for transport socket") }
            transport = .uhid(path: uhidPath)
        case "socket":
            guard let path = params.socketPath, path.hasPrefix("/") else {
                throw .invalidParams("params.socketPath (an absolute path) is required for transport socket")
            }
            transport = .socket(path: path)
        default:
            throw .invalidParams("params.transport must be usb (uhid) or socket")
        }

        lock.lock()
        let reserved = Result { () throws(RigFailure) -> String in try reserveID(params.authenticatorId) }
        lock.unlock()
        let id = try reserved.get()

        var options = RigKey.Options(id: id, transport: transport)
        options.key = specification
        let key: RigKey
        do {
            key = try RigKey(options: options, storeDirectory: root + "/" + id, events: events, logger: logger)
        } catch {
            // A key that did not start takes nothing with it: its id is free again (the next
            // addAuthenticator gets the same kN); a store it made KeyAssembly has removed already,
            // and one that was there before (an earlier rig's, with its credentials) is left alone.
            lock.lock()
            starting.remove(id)
            if params.authenticatorId == nil, id == "k\(nextNumber - 1)" { nextNumber -= 1 }
            lock.unlock()
            throw error
        }
        lock.lock()
        starting.remove(id)
        if isStopped {
            lock.unlock()
            key.stop()
            throw .failed("the rig is stopping")
        }
        keys[id] = key
        order.append(id)
        lock.unlock()
        logger.info("rig: authenticator \(id) is up (\(transport.name))")
        return key.info
    }

    /// Takes `requested` (or the next free `kN`) for a key being started. Called with `lock` held.
    private func reserveID(_ requested: String?) throws(RigFailure) -> String {
        guard !isStopped else { throw .failed("the rig is stopping") }
        guard keys.count + starting.count < Self.maximumKeys else {
            throw RigFailure(.tooMany, "this rig already runs \(Self.maximumKeys) authenticators; remove one first")
        }
        let id: String
        if let requested {
            guard requested.utf8.count <= 32, StoreLocation.isValidName(requested) else {
                throw .invalidParams("params.authenticatorId must be 1 to 32 letters, digits, '-', '_' or '.'")
            }
            guard keys[requested] == nil, !starting.contains(requested) else {
                throw .invalidParams("authenticator '\(requested)' already exists")
            }
            id = requested
        } else {
            while keys["k\(nextNumber)"] != nil || starting.contains("k\(nextNumber)") { nextNumber += 1 }
            id = "k\(nextNumber)"
            nextNumber += 1
        }
        starting.insert(id)
        return id
    }

    private func removeAuthenticator(_ id: String) throws(RigFailure) {
        lock.lock()
        guard let key = keys.removeValue(forKey: id) else {
            lock.unlock()
            _ = try self.key(id)   // the error, with the list
            return
        }
        order.removeAll { $0 == id }
        // The id stays taken until its store is closed and gone: a new key of the same id must
        // not open the old store (or have it deleted under it).
        starting.insert(id)
        lock.unlock()
        defer {
            lock.lock()
            starting.remove(id)
            lock.unlock()
        }
        key.stop()
        do {
            try FileManager.default.removeItem(atPath: key.storeDirectory)
        } catch {
            logger.warning("rig: the store of \(id) at \(key.storeDirectory) could not be removed: \(error.localizedDescription)")
        }
        logger.info("rig: authenticator \(id) removed")
    }

    /// The key's built-in UV, or why it has none.
    private func verification(of id: String) throws(RigFailure) -> RigVerification {
        let key = try key(id)
        guard let verification = key.verification else {
            throw .unsupported("\(key.id) has no user verification (add it with hasUserVerification true)")
        }
        return verification
    }

    private func answerUserVerification(_ params: AnswerVerificationParams, isAbandoned: () -> Bool) throws(RigFailure) -> VerificationAnswer {
        let verification = try verification(of: params.authenticatorId)
        let timeout = min(params.timeoutMs ?? 30_000, ControlCommand.maximumAnswerTimeoutMilliseconds)
        switch verification.control.answer(verified: params.verified, rpID: params.rpId, timeoutMilliseconds: timeout,
                                           isAbandoned: isAbandoned) {
        case let .applied(verified, request):
            return VerificationAnswer(result: verified ? "verified" : "notVerified", purpose: request.purpose.rawValue,
                                      rpId: request.rpID, message: nil)
        case .unused:
            return VerificationAnswer(result: "none", purpose: nil, rpId: nil,
                                      message: "no user verification\(params.rpId.map { " for \($0)" } ?? "") came within \(timeout) ms")
        case .stopped:
            throw .failed("\(params.authenticatorId) is stopping")
        }
    }

    // MARK: answerPresence

    private func answerPresence(_ params: AnswerPresenceParams, isAbandoned: () -> Bool) throws(RigFailure) -> PresenceAnswer {
        let key = try key(params.authenticatorId)
        let timeout = min(params.timeoutMs ?? 30_000, ControlCommand.maximumAnswerTimeoutMilliseconds)
        let target: ControlPresence.Target = params.rpId.map { .relyingParty($0) } ?? .pending
        let outcome = key.presence.control.answer(params.approve ? .approve : .deny, for: target, timeoutMilliseconds: timeout,
                                                  isAbandoned: isAbandoned)
        switch outcome {
        case let .applied(decision, request, _):
            return PresenceAnswer(result: decision == .approve ? "approved" : "denied", operation: request.operation.rawValue,
                                  rpId: request.rpID, message: nil)
        case .unused:
            return PresenceAnswer(result: "none", operation: nil, rpId: nil,
                                  message: "no presence request\(params.rpId.map { " for \($0)" } ?? "") came within \(timeout) ms")
        case let .noMatch(message):
            return PresenceAnswer(result: "none", operation: nil, rpId: nil, message: message)
        case .stopped:
            throw .failed("\(key.id) is stopping")
        }
    }
}

// MARK: Params and results

/// addAuthenticator's params: where the key appears, and the key's own options as KeyOption
/// declares them (each decoded by its shape: a wrong JSON type is named as Decodable names it).
struct AddAuthenticatorParams: Decodable {
    var authenticatorId: String?
    var transport: String?
    var socketPath: String?
    /// The key options given, in KeyOption.all's order.
    var keyValues: [(option: KeyOption, value: KeyOptionValue)] = []

    private struct Member: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Member.self)
        authenticatorId = try container.decodeIfPresent(String.self, forKey: Member("authenticatorId"))
        transport = try container.decodeIfPresent(String.self, forKey: Member("transport"))
        socketPath = try container.decodeIfPresent(String.self, forKey: Member("socketPath"))
        for option in KeyOption.all {
            guard let parameter = option.parameter else { continue }
            let member = Member(parameter)
            let value: KeyOptionValue? = switch option.shape {
            case .boolean: try container.decodeIfPresent(Bool.self, forKey: member).map(KeyOptionValue.boolean)
            case .list: try container.decodeIfPresent([String].self, forKey: member).map(KeyOptionValue.list)
            case .choice, .text: try container.decodeIfPresent(String.self, forKey: member).map(KeyOptionValue.text)
            }
            if let value { keyValues.append((option, value)) }
        }
    }
}

struct AuthenticatorParams: Decodable { var authenticatorId: String }
struct SelectCredentialParams: Decodable {
    var authenticatorId: String
    var rpId: String
    var credentialId: String?
    var userHandle: String?
}
struct CredentialParams: Decodable { var authenticatorId: String; var credentialId: String }
struct AddCredentialParams: Decodable { var authenticatorId: String; var credential: RigCredential }
struct SetCredentialPropertiesParams: Decodable {
    var authenticatorId: String
    var credentialId: String
    var backupEligibility: Bool?
    var backupState: Bool?
}
struct SetUserVerifiedParams: Decodable { var authenticatorId: String; var isUserVerified: Bool }
struct SetUserConsentingParams: Decodable { var authenticatorId: String; var isUserConsenting: Bool }
struct SetAutomaticPresenceParams: Decodable { var authenticatorId: String; var enabled: Bool }
struct AnswerVerificationParams: Decodable {
    var authenticatorId: String
    var verified: Bool
    var rpId: String?
    var timeoutMs: UInt64?
}
struct VerificationAnswer: Encodable {
    var result: String
    var purpose: String?
    var rpId: String?
    var message: String?
}
struct AnswerPresenceParams: Decodable {
    var authenticatorId: String
    var approve: Bool
    var rpId: String?
    var timeoutMs: UInt64?
}

struct AuthenticatorList: Encodable { var authenticators: [RigAuthenticatorInfo] }
struct CredentialList: Encodable { var credentials: [RigCredential] }
struct RemovedCount: Encodable { var removed: Int }
struct FaultAdded: Encodable { var faultId: Int }
struct FaultsCleared: Encodable { var cleared: Int }
struct PresenceAnswer: Encodable {
    var result: String
    var operation: String?
    var rpId: String?
    var message: String?
}
