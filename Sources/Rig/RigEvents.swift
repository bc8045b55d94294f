import Authenticator
import CBOR
import CTAP
import CTAPHID
import Synchronization
import SystemIO
import KeyService
import Presence
import Encoding

/// One event line: `{"event":"credentialAdded","seq":3,"authenticatorId":"k1","params":{…}}`.
struct RigEvent: Encodable {
    var event: String
    var seq: UInt64
    var authenticatorId: String
    var params: RigEventParams
}

/// What an event says; absent members are left out of the line.
struct RigEventParams: Encodable, Equatable {
    var credentialId: String?
    var rpId: String?
    var userHandle: String?
    var userName: String?
    var userDisplayName: String?
    var isResidentCredential: Bool?
    var signCount: UInt32?
    var operation: String?
    var purpose: String?
    var backupEligibility: Bool?
    var backupState: Bool?
}

/// A `subscribe`d connection's queue of event lines, drained by its connection thread (woken
/// through `wakeup`). Bounded: a subscriber that falls `capacity` lines behind is marked
/// overflowed, told so and disconnected.
final class RigSubscriber: Sendable {
    static let capacity = 10_000

    let authenticatorID: String?
    let wakeup: WakeupEvent
    private let queue = Mutex<(lines: [[UInt8]], overflowed: Bool)>(([], false))

    init(authenticatorID: String?, wakeup: WakeupEvent) {
        self.authenticatorID = authenticatorID
        self.wakeup = wakeup
    }

    func post(_ line: [UInt8]) {
        let posted = queue.withLock { queue -> Bool in
            guard !queue.overflowed else { return false }
            if queue.lines.count >= Self.capacity {
                queue.overflowed = true
                queue.lines.removeAll()
            } else {
                queue.lines.append(line)
            }
            return true
        }
        if posted { wakeup.signal() }
    }

    /// The lines queued since the last call, and whether the queue overflowed.
    func take() -> (lines: [[UInt8]], overflowed: Bool) {
        queue.withLock { queue in
            defer { queue.lines.removeAll() }
            return queue
        }
    }
}

/// The rig's events, numbered in the order they happen and fanned out to subscribers.
final class RigEventHub: Sendable {
    private let state = Mutex<(seq: UInt64, subscribers: [ObjectIdentifier: RigSubscriber])>((0, [:]))

    func subscribe(_ subscriber: RigSubscriber) {
        state.withLock { $0.subscribers[ObjectIdentifier(subscriber)] = subscriber }
    }

    func unsubscribe(_ subscriber: RigSubscriber) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: ObjectIdentifier(subscriber)) }
    }

    /// Numbers and queues one event; its line is made under the lock, so `seq` is the order
    /// every subscriber sees.
    func emit(_ name: String, authenticatorID: String, _ params: RigEventParams) {
        state.withLock { state in
            guard !state.subscribers.isEmpty else { return }
            state.seq += 1
            let line = RigProtocol.line(RigEvent(event: name, seq: state.seq, authenticatorId: authenticatorID, params: params))
            for subscriber in state.subscribers.values
            where subscriber.authenticatorID == nil || subscriber.authenticatorID == authenticatorID {
                subscriber.post(line)
            }
        }
    }
}

/// The credential events a key's traffic carries, read from each typed request and the answer
/// the client gets (RigKeyHandler): what the relying party saw, not what the store did.
enum RigWireEvents {
    struct Event: Equatable {
        var name: String
        var params: RigEventParams
        /// credentialAdded / credentialAsserted: the counter the key signed with.
        var credentialID: [UInt8]?
    }

    /// The events of one exchange; `continuing`: the RP of the getAssertion a getNextAssertion
    /// continues (it names none itself).
    static func events(request: CTAP2Request?, outcome: Result<CTAP2Response, CTAP2StatusCode>, continuing: String? = nil) -> [Event] {
        guard let request, case let .success(response) = outcome else { return [] }
        switch (request, response) {
        case let (.makeCredential(made), .credential(answer)):
            guard let authData = try? AuthenticatorData(decoding: answer.authenticatorData),
                  let credentialID = authData.attestedCredentialData?.credentialID else { return [] }
            return [Event(name: "credentialAdded", params: RigEventParams(
                credentialId: Base64URL.encode(credentialID), rpId: made.rp.id, userHandle: Base64URL.encode(made.user.id),
                userName: made.user.name, isResidentCredential: made.options["rk"] ?? false, signCount: authData.signCount),
                credentialID: credentialID)]
        case let (.getAssertion(asked), .assertion(answer)):
            return Self.asserted(answer, rpID: asked.rpID)
        case let (.getNextAssertion, .assertion(answer)):
            return Self.asserted(answer, rpID: continuing)
        case let (.credentialManagement(managed, _), .empty):
            // deleteCredential and updateUserInformation answer success with no body: their
            // events come from the request.
            guard let credentialID = managed.credentialID?.id else { return [] }
            switch managed.subcommand {
            case .deleteCredential?:
                return [Event(name: "credentialDeleted", params: RigEventParams(credentialId: Base64URL.encode(credentialID)))]
            case .updateUserInformation?:
                let user = managed.user
                return [Event(name: "credentialUpdated", params: RigEventParams(
                    credentialId: Base64URL.encode(credentialID), userHandle: user.map { Base64URL.encode($0.id) },
                    // An empty name removes it (as the key does): the event says what is stored.
                    userName: user?.name.flatMap { $0.isEmpty ? nil : $0 },
                    userDisplayName: user?.displayName.flatMap { $0.isEmpty ? nil : $0 }))]
            default:
                return []
            }
        default:
            return []
        }
    }

    private static func asserted(_ answer: GetAssertionResponse, rpID: String?) -> [Event] {
        guard let authData = try? AuthenticatorData(decoding: answer.authenticatorData) else { return [] }
        return [Event(name: "credentialAsserted", params: RigEventParams(
            credentialId: Base64URL.encode(answer.credential.id), rpId: rpID,
            userHandle: answer.user?["id"]?.bytesValue.map(Base64URL.encode), signCount: authData.signCount),
            credentialID: answer.credential.id)]
    }

    /// U2F (CTAPHID_MSG) register and authenticate answered 0x9000. U2F names the RP only by
    /// its application parameter (a hash), so these events have no rpId.
    static func u2fEvents(request: [UInt8], response: [UInt8]) -> [Event] {
        guard response.count >= 2, response.suffix(2).elementsEqual([0x90, 0x00]),
              let apdu = try? U2FAPDU(parsing: request) else { return [] }
        let body = Array(response.dropLast(2))
        switch U2FAPDU.Instruction(rawValue: apdu.ins) {
        case .register:
            // 0x05 ‖ public key (65) ‖ L ‖ key handle (L) ‖ certificate ‖ signature.
            guard body.count >= 67, body[0] == 0x05 else { return [] }
            let length = Int(body[66])
            guard body.count >= 67 + length else { return [] }
            let keyHandle = Array(body[67..<(67 + length)])
            return [Event(name: "credentialAdded", params: RigEventParams(
                credentialId: Base64URL.encode(keyHandle), isResidentCredential: false), credentialID: nil)]
        case .authenticate:
            // Request: challenge (32) ‖ application (32) ‖ L ‖ key handle; response: user
            // presence (1) ‖ counter (4, big-endian) ‖ signature.
            guard apdu.data.count >= 65, body.count >= 5 else { return [] }
            let length = Int(apdu.data[64])
            guard apdu.data.count >= 65 + length else { return [] }
            let keyHandle = Array(apdu.data[65..<(65 + length)])
            let counter = body[1..<5].reduce(0) { $0 << 8 | UInt32($1) }
            return [Event(name: "credentialAsserted", params: RigEventParams(
                credentialId: Base64URL.encode(keyHandle), signCount: counter), credentialID: nil)]
        default:
            return []
        }
    }
}
