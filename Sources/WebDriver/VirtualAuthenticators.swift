import Encoding
import Synchronization

/// The WebAuthn extension's commands answered with rig keys: each WebDriver command becomes one
/// rig request (docs/rig-protocol.md, whose vocabulary is this extension's), and its answer the
/// command's value or error, with WebAuthn Level 3 §11's defaults and error codes. Sans IO: the
/// rig is a function from a request line to a response line (`Rig.respond(to:)` in the
/// intermediary, a fake in unit tests). A key belongs to the session that added it: another
/// session naming it meets "invalid argument", and it is removed when its session ends.
public final class VirtualAuthenticators: Sendable {
    /// Where the keys are put: on uhid (`usb`, what a browser finds) or, where a machine has no
    /// uhid, on the socket transport in a directory (no browser finds those; for testing).
    public enum KeyTransport: Equatable, Sendable {
        case usb
        case socket(directory: String)
    }

    let rig: @Sendable ([UInt8]) -> [UInt8]
    let transport: KeyTransport
    /// Session ID → its keys, in the order added. A session is known from its New Session answer.
    private let sessionKeys = Mutex<[String: [String]]>([:])

    public init(transport: KeyTransport, rig: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        self.transport = transport
        self.rig = rig
    }

    public func sessionStarted(_ id: String) {
        sessionKeys.withLock { if $0[id] == nil { $0[id] = [] } }
    }

    /// The sessions started, in no order.
    public var sessions: [String] { sessionKeys.withLock { Array($0.keys) } }

    public func isKnown(session id: String) -> Bool {
        sessionKeys.withLock { $0[id] != nil }
    }

    /// The session's keys, in the order added.
    public func keys(of session: String) -> [String] {
        sessionKeys.withLock { $0[session] ?? [] }
    }

    /// Removes the session's keys (their devices disappear, their stores are deleted).
    public func sessionEnded(_ id: String) {
        let keys = sessionKeys.withLock { $0.removeValue(forKey: id) } ?? []
        for key in keys { _ = try? call("removeAuthenticator", params: ["authenticatorId": .string(key)]) }
    }

    /// Every session's keys removed: the intermediary stops.
    public func endAll() {
        for session in sessions { sessionEnded(session) }
    }

    /// The error of a command for a session this intermediary did not see start.
    static func unknownSession(_ id: String) -> WebDriverError {
        .invalidSessionID("no session '\(id)' was started through this intermediary")
    }

    /// The answer to one command of `session` whose request body is `body`.
    public func answer(_ command: VirtualAuthenticatorCommand, session: String, body: [UInt8]) -> HTTPResponse {
        do throws(WebDriverError) {
            guard isKnown(session: session) else {
                throw Self.unknownSession(session)
            }
            if let id = command.authenticatorID {
                guard keys(of: session).contains(id) else {
                    throw .invalidArgument("no virtual authenticator '\(id)' in this session")
                }
            }
            return .success(try run(command, session: session, parameters: Self.parameters(body, for: command)))
        } catch {
            return error.response
        }
    }

    /// The rig methods a session's keys answer through `POST /session/{id}/latchkey/rig`: what
    /// WebDriver's commands cannot say (presence and UV answered per request, the account a
    /// discoverable sign-in picks, faults, response overrides, power cycles). The methods that
    /// add, remove or list keys are the WebAuthn commands' (a key belongs to its session).
    static let rigMethods: Set<String> = [
        "setUserConsenting", "setAutomaticPresenceSimulation", "setAutomaticUserVerification", "answerUserVerification",
        "answerPresence", "powerCycle", "setResponseOverrideBits", "injectFault", "clearFaults", "selectCredential",
        "getCredential", "setCredentialProperties",
    ]

    /// `{"method": …, "params": {…, "authenticatorId": one of the session's keys}}` → the rig's
    /// result as the command's value, its error as WebDriver's.
    public func rigRequest(session: String, body: [UInt8]) -> HTTPResponse {
        do throws(WebDriverError) {
            guard isKnown(session: session) else {
                throw Self.unknownSession(session)
            }
            guard let document = JSONDocument.parse(body), case .object(let members) = document else {
                throw .invalidArgument("the parameters must be a JSON object {\"method\": …, \"params\": {…}}")
            }
            guard case .string(let method)? = members["method"], Self.rigMethods.contains(method) else {
                throw .invalidArgument("method must be one of \(Self.rigMethods.sorted().joined(separator: ", ")) "
                                       + "(keys are added, removed and listed with the WebAuthn commands)")
            }
            var params: [String: JSONValue] = [:]
            switch members["params"] {
            case nil: break
            case .object(let given)?: for (name, value) in given { params[name] = JSONValue(value) }
            case let other?: throw .invalidArgument("params must be an object, not \(other.typeName)")
            }
            guard case .string(let id)? = params["authenticatorId"], keys(of: session).contains(id) else {
                throw .invalidArgument("params.authenticatorId must name a virtual authenticator of this session")
            }
            return .success(JSONValue(try call(method, params: params)))
        } catch {
            return error.response
        }
    }

    private func run(_ command: VirtualAuthenticatorCommand, session: String,
                     parameters: [String: JSONDocument]) throws(WebDriverError) -> JSONValue {
        switch command {
        case .addAuthenticator:
            var params = try VirtualAuthenticatorOptions.rigParameters(parameters)
            switch transport {
            case .usb: params["transport"] = .string("usb")
            case .socket(let directory):
                params["transport"] = .string("socket")
                params["socketPath"] = .string(directory + "/" + "wd-\(Self.nextSocketNumber()).sock")
            }
            let result = try call("addAuthenticator", params: params)
            guard let id = result["authenticatorId"]?.stringValue else {
                throw .unknownError("the rig answered addAuthenticator without an authenticatorId")
            }
            // The session may have ended meanwhile (a Delete Session on another connection): its
            // key then goes at once, or it would stay on uhid for every browser to find.
            let kept = sessionKeys.withLock { sessions -> Bool in
                guard sessions[session] != nil else { return false }
                sessions[session]!.append(id)
                return true
            }
            guard kept else {
                _ = try? call("removeAuthenticator", params: ["authenticatorId": .string(id)])
                throw .invalidSessionID("the session ended while its authenticator was added")
            }
            return .string(id)
        case .removeAuthenticator(let id):
            _ = try call("removeAuthenticator", params: ["authenticatorId": .string(id)])
            sessionKeys.withLock { $0[session]?.removeAll { $0 == id } }
            return .null
        case .addCredential(let id):
            let credential = try CredentialParameters.rigCredential(parameters)
            _ = try call("addCredential", params: ["authenticatorId": .string(id), "credential": credential])
            return .null
        case .getCredentials(let id):
            let result = try call("getCredentials", params: ["authenticatorId": .string(id)])
            guard case .array(let credentials)? = result["credentials"] else {
                throw .unknownError("the rig answered getCredentials without credentials")
            }
            return .array(credentials.map(CredentialParameters.webDriverCredential))
        case .removeCredential(let id, let credentialID):
            _ = try call("removeCredential", params: ["authenticatorId": .string(id), "credentialId": .string(credentialID)])
            return .null
        case .removeAllCredentials(let id):
            _ = try call("removeAllCredentials", params: ["authenticatorId": .string(id)])
            return .null
        case .setUserVerified(let id):
            guard case .bool(let verified)? = parameters["isUserVerified"] else {
                throw .invalidArgument("isUserVerified must be a boolean")
            }
            do {
                _ = try call("setUserVerified", params: ["authenticatorId": .string(id), "isUserVerified": .bool(verified)])
            } catch where error.code == "unsupported operation" {
                // A key without user verification has nothing to verify: the spec sets the
                // property all the same, and so nothing changes (as Chromium's virtual authenticator).
            }
            return .null
        case .setCredentialProperties(let id, let credentialID):
            var params: [String: JSONValue] = ["authenticatorId": .string(id), "credentialId": .string(credentialID)]
            for member in ["backupEligibility", "backupState"] {
                switch parameters[member] {
                case nil: break
                case .bool(let flag)?: params[member] = .bool(flag)
                case let other?: throw .invalidArgument("\(member) must be a boolean, not \(other.typeName)")
                }
            }
            _ = try call("setCredentialProperties", params: params)
            return .null
        }
    }

    /// The command's parameters: a JSON object (commands that take none accept an empty body).
    static func parameters(_ body: [UInt8], for command: VirtualAuthenticatorCommand) throws(WebDriverError) -> [String: JSONDocument] {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            switch command {
            case .addAuthenticator, .addCredential, .setUserVerified, .setCredentialProperties:
                throw .invalidArgument("the command's parameters must be a JSON object")
            default:
                return [:]
            }
        }
        guard let document = JSONDocument.parse(body), case .object(let members) = document else {
            throw .invalidArgument("the command's parameters must be a JSON object")
        }
        return members
    }

    // MARK: The rig

    /// One rig request; its result, or its error as WebDriver's.
    func call(_ method: String, params: [String: JSONValue]) throws(WebDriverError) -> JSONDocument {
        var request = JSONValue.Object()
        request.add("v", .int(1))
        request.add("id", .int(1))
        request.add("method", method)
        request.add("params", JSONValue.sorted(params))
        let line = rig(Array(request.rendered.utf8))
        guard let response = JSONDocument.parse(line) else { throw .unknownError("the rig's answer to \(method) is not JSON") }
        if let error = response["error"] {
            let message = error["message"]?.stringValue ?? "the rig refused \(method)"
            switch error["code"]?.stringValue {
            case "invalidParams", "noSuchAuthenticator", "noSuchCredential": throw .invalidArgument(message)
            case "unsupported": throw .unsupportedOperation(message)
            default: throw .unknownError(message)
            }
        }
        guard let result = response["result"] else { throw .unknownError("the rig answered \(method) without a result") }
        return result
    }

    private static let socketNumbers = Atomic<Int>(0)
    private static func nextSocketNumber() -> Int { socketNumbers.add(1, ordering: .relaxed).newValue }
}
