import CTAP
import CTAPHID
import Synchronization
import KeyService
import Presence
import SystemIO

/// A rig key's injected faults (`injectFault` / `clearFaults`): each names the requests it
/// applies to and how many times; the first that matches a request is used up by it.
final class RigFaults: Sendable {
    /// Which requests a fault applies to.
    enum Match: Equatable {
        case any
        /// A CTAP2 command (the CBOR message's first byte).
        case ctap2(UInt8)
        /// A U2F instruction (the APDU's INS).
        case u2f(UInt8)

        /// The protocol's command names.
        static let names: [String: Match] = [
            "any": .any,
            "makeCredential": .ctap2(CTAPCommand.makeCredential.rawValue), "getAssertion": .ctap2(CTAPCommand.getAssertion.rawValue),
            "getInfo": .ctap2(CTAPCommand.getInfo.rawValue), "clientPIN": .ctap2(CTAPCommand.clientPIN.rawValue),
            "reset": .ctap2(CTAPCommand.reset.rawValue), "getNextAssertion": .ctap2(CTAPCommand.getNextAssertion.rawValue),
            "credentialManagement": .ctap2(CTAPCommand.credentialManagement.rawValue),
            "selection": .ctap2(CTAPCommand.selection.rawValue), "largeBlobs": .ctap2(CTAPCommand.largeBlobs.rawValue),
            "authenticatorConfig": .ctap2(CTAPCommand.config.rawValue),
            "u2fRegister": .u2f(0x01), "u2fAuthenticate": .u2f(0x02), "u2fVersion": .u2f(0x03),
        ]

        func matches(command: UInt8, request: [UInt8]) -> Bool {
            switch self {
            case .any: command == CTAPHIDCommand.cbor.rawValue || command == CTAPHIDCommand.msg.rawValue
            case let .ctap2(byte): command == CTAPHIDCommand.cbor.rawValue && request.first == byte
            case let .u2f(ins): command == CTAPHIDCommand.msg.rawValue && request.count > 1 && request[1] == ins
            }
        }
    }

    private struct Entry {
        var id: Int
        var match: Match
        var fault: KeyFault
        /// Requests it still applies to; nil: every one until cleared.
        var remaining: Int?
    }

    private let state = Mutex<(next: Int, entries: [Entry])>((1, []))

    /// Adds a fault; its id.
    func add(_ fault: KeyFault, for match: Match, times: Int?) -> Int {
        state.withLock { state in
            let id = state.next
            state.next += 1
            state.entries.append(Entry(id: id, match: match, fault: fault, remaining: times))
            return id
        }
    }

    /// Removes every fault; how many there were.
    func clear() -> Int {
        state.withLock { state in
            defer { state.entries.removeAll() }
            return state.entries.count
        }
    }

    /// The fault for this request, if one applies (and uses it up once).
    func take(command: UInt8, request: [UInt8]) -> KeyFault? {
        state.withLock { state in
            guard let index = state.entries.firstIndex(where: { $0.match.matches(command: command, request: request) }) else {
                return nil
            }
            let fault = state.entries[index].fault
            if let remaining = state.entries[index].remaining {
                if remaining <= 1 { state.entries.remove(at: index) } else { state.entries[index].remaining = remaining - 1 }
            }
            return fault
        }
    }
}

struct InjectFaultParams: Decodable {
    var authenticatorId: String
    var command: String
    var fault: String
    var status: Int?
    var delayMs: UInt64?
    var keepalives: Int?
    var times: Int?

    /// The fault and what it applies to, checked.
    func checked() throws(RigFailure) -> (KeyFault, RigFaults.Match, Int?) {
        guard let match = RigFaults.Match.names[command] else {
            throw .invalidParams("params.command must be one of \(RigFaults.Match.names.keys.sorted().joined(separator: ", "))")
        }
        let times = times ?? 1
        guard (0...1_000_000).contains(times) else { throw .invalidParams("params.times must be 0 (until clearFaults) to 1000000") }
        let keyFault: KeyFault
        switch fault {
        case "status":
            guard let status else { throw .invalidParams("params.status is required for a status fault") }
            switch match {
            case .any:
                throw .invalidParams("a status fault names its command (a CTAP2 status or a U2F status word), not any")
            case .ctap2:
                guard (0...255).contains(status) else { throw .invalidParams("params.status must be a CTAP2 status, 0 to 255") }
                keyFault = .answer([UInt8(status)])
            case .u2f:
                guard (0...0xFFFF).contains(status) else { throw .invalidParams("params.status must be a U2F status word, 0 to 65535") }
                keyFault = .answer([UInt8(status >> 8), UInt8(status & 0xFF)])
            }
        case "delay":
            guard let delayMs, delayMs <= 600_000 else { throw .invalidParams("params.delayMs (0 to 600000) is required for a delay fault") }
            keyFault = .delay(milliseconds: delayMs)
        case "drop":
            keyFault = .drop
        case "truncate":
            keyFault = .truncate
        case "keepaliveFlood":
            let count = keepalives ?? 1_000
            guard (1...100_000).contains(count) else { throw .invalidParams("params.keepalives must be 1 to 100000") }
            keyFault = .keepaliveFlood(count: count)
        default:
            throw .invalidParams("params.fault must be status, delay, drop, truncate or keepaliveFlood")
        }
        return (keyFault, match, times == 0 ? nil : times)
    }
}

struct SetResponseOverrideBitsParams: Decodable {
    var authenticatorId: String
    var isBogusSignature: Bool?
    var isBadUV: Bool?
    var isBadUP: Bool?
}
