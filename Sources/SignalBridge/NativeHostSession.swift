import CBOR
import Authenticator
import CredentialStore
import Encoding
import FIDOClient

/// One browser's conversation with `latchkey native-host` (sans-IO but for the store): a message
/// in, its reply out. The contract is docs/native-host.md:
///
/// - `{"id": N, "type": "signal", "origin": O, "method": M, "options": {…}}` → `{"id": N, "ok":
///   true, "hidden": [ids], "unhidden": [ids], "renamed": [ids]}` or `{"id": N, "ok": false,
///   "error": "SecurityError" | "TypeError" | "NotFoundError" | "QuotaExceededError" |
///   "InternalError", "message": "…"}`;
/// - `{"id": N, "type": "publicSuffixes"}` → `{"id": N, "ok": true, "rules": [...]}` (the
///   extension checks RP IDs against the same list and cannot read files).
///
/// Checks run in the spec's order: members (TypeError), then the origin and RP ID (SecurityError),
/// then the origin's rate (QuotaExceededError), then the store. Only hides, un-hides (through
/// all-accepted) and renames: nothing is deleted.
public final class NativeHostSession {
    public typealias StoreOpener = () throws(SignalFailure) -> SQLiteCredentialStore
    public typealias SuffixLoader = () throws(SignalFailure) -> PublicSuffixList
    /// Opens a CTAP link to the key running on the store (the passkey provider's requests),
    /// which gives up on (and cancels) a request still waiting after the milliseconds given.
    public typealias KeyOpener = (_ timeoutMilliseconds: UInt64) throws(SignalFailure) -> CTAP2Link

    private let openStore: StoreOpener
    private let loadSuffixes: SuffixLoader
    let openKey: KeyOpener
    private let now: () -> Double
    let log: (String) -> Void
    private var store: SQLiteCredentialStore?
    private var suffixes: PublicSuffixList?
    private var limiter: SignalRateLimiter

    public init(openStore: @escaping StoreOpener, loadSuffixes: @escaping SuffixLoader,
                openKey: @escaping KeyOpener = { (_: UInt64) throws(SignalFailure) in throw .internal("no key to run passkey requests on") },
                limiter: SignalRateLimiter = SignalRateLimiter(), now: @escaping () -> Double,
                log: @escaping (String) -> Void = { _ in }) {
        self.openStore = openStore
        self.loadSuffixes = loadSuffixes
        self.openKey = openKey
        self.limiter = limiter
        self.now = now
        self.log = log
    }

    deinit { store?.close() }

    /// The reply to one message. `understood` is false when the message was not JSON at all: the
    /// host answers it and stops (the stream can no longer be trusted).
    public func handle(_ message: [UInt8]) -> (reply: String, understood: Bool) {
        guard let json = JSONDocument.parse(message) else {
            return (Self.failure(id: nil, .type("the message is not JSON (UTF-8)")), false)
        }
        guard case .object = json else {
            return (Self.failure(id: nil, .type("the message is not an object (it is \(json.typeName))")), true)
        }
        guard case .number(let number)? = json["id"], number >= 0, number <= 9_007_199_254_740_991,
              number.rounded(.towardZero) == number else {
            return (Self.failure(id: nil, .type("id must be an integer from 0 to 2^53-1")), true)
        }
        let id = Int64(number)
        switch json["type"] {
        case .string("signal")?:
            do throws(SignalFailure) {
                return (try signal(json, id: id), true)
            } catch {
                return (Self.failure(id: id, error), true)
            }
        case .string("publicSuffixes")?:
            do throws(SignalFailure) {
                var reply = JSONValue.Object()
                reply.add("id", id)
                reply.add("ok", true)
                reply.add("rules", strings: try publicSuffixes().asciiRules)
                return (reply.rendered, true)
            } catch {
                return (Self.failure(id: id, error), true)
            }
        case .string(let type)? where PasskeyRequestType(rawValue: type) != nil:
            do throws(SignalFailure) {
                return (try passkeyRequest(PasskeyRequestType(rawValue: type)!, json, id: id), true)
            } catch {
                return (Self.failure(id: id, error), true)
            }
        default:
            return (Self.failure(id: id, .type("type must be \"signal\", \"publicSuffixes\", \"accounts\", \"create\" or \"get\"")), true)
        }
    }

    private func signal(_ json: JSONDocument, id: Int64) throws(SignalFailure) -> String {
        let parsed = try WebsiteSignal(method: json["method"], options: json["options"])
        let originText = try PasskeyJSON.string(json["origin"], "origin")
        let origin = try SignalOrigin(originText)
        let rpID = try origin.relyingPartyID(parsed.rpID, publicSuffixes: try publicSuffixes())
        guard limiter.admit(origin.serialized, now: now()) else {
            log("\(parsed.method.rawValue) refused: a site over its rate")
            throw .quotaExceeded("\(origin.serialized) sent more than \(Int(limiter.capacity)) signals at once; "
                + "try again in a second")
        }
        let changes = try apply(parsed.with(rpID: rpID), source: origin.serialized)
        guard changes.matched > 0 else {
            log("\(parsed.method.rawValue): no credential of the store is named")
            throw .notFound("the key holds no credential that this \(parsed.method.rawValue) signal names at \(rpID); nothing changed")
        }
        // Counts only: which sites a user visits is theirs (the sealed journal has the details).
        log("\(parsed.method.rawValue): \(changes.hidden.count) hidden, \(changes.unhidden.count) un-hidden, "
            + "\(changes.renamed.count) renamed")
        var reply = JSONValue.Object()
        reply.add("id", id)
        reply.add("ok", true)
        reply.add("hidden", strings: changes.hidden.map(Base64URL.encode))
        reply.add("unhidden", strings: changes.unhidden.map(Base64URL.encode))
        reply.add("renamed", strings: changes.renamed.map(Base64URL.encode))
        // Hidden credentials that gave PRF outputs: the site may have encrypted data with them
        // (added to the contract: the extension may warn; `credentials unhide` undoes a hide).
        if !changes.hiddenAfterPRFUse.isEmpty {
            log("\(parsed.method.rawValue): \(changes.hiddenAfterPRFUse.count) of the hidden gave PRF outputs")
            reply.add("prfUsed", strings: changes.hiddenAfterPRFUse.map(Base64URL.encode))
        }
        return reply.rendered
    }

    private func apply(_ signal: WebsiteSignal, source: String) throws(SignalFailure) -> SignalChanges {
        let store = try openedStore()
        do throws(StoreError) {
            switch signal {
            case let .unknownCredential(rpID, credentialID):
                return try store.signalUnknownCredential(rpID: rpID, credentialID: credentialID, source: source)
            case let .allAcceptedCredentials(rpID, userHandle, acceptedIDs):
                return try store.signalAllAcceptedCredentials(rpID: rpID, userHandle: userHandle,
                                                              acceptedIDs: acceptedIDs, source: source)
            case let .currentUserDetails(rpID, userHandle, name, displayName):
                return try store.signalCurrentUserDetails(rpID: rpID, userHandle: userHandle, name: name,
                                                          displayName: displayName, source: source)
            }
        } catch {
            throw .internal(error.message(directory: store.directory))
        }
    }

    func openedStore() throws(SignalFailure) -> SQLiteCredentialStore {
        if let store { return store }
        let opened = try openStore()
        store = opened
        return opened
    }

    func publicSuffixes() throws(SignalFailure) -> PublicSuffixList {
        if let suffixes { return suffixes }
        let loaded = try loadSuffixes()
        suffixes = loaded
        return loaded
    }

    /// `{"id": N, "ok": false, "error": …, "message": …}`; `id` null when the message had none.
    public static func failure(id: Int64?, _ failure: SignalFailure) -> String {
        var reply = JSONValue.Object()
        reply.add("id", id)
        reply.add("ok", false)
        reply.add("error", failure.name)
        reply.add("message", failure.message)
        if case .pin(let need) = failure { reply.add("pin", need.json) }
        return reply.rendered
    }
}
