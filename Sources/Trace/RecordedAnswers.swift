import CTAPHID

/// `latchkey replay --as-device`: the recorded key's answers, handed out in the order it gave
/// them, for a client to meet again without the key (a client bug reproduced from a user's
/// trace). Each request takes the next unused answer the recording has for the same request
/// kind — the CTAPHID command and, for CBOR, the CTAP command byte (and for clientPIN,
/// credentialManagement and config the subcommand) —, so a client that asks in the same order
/// gets the same conversation. Answers the recording blanked (PIN tokens, hmac-secret outputs)
/// are played as recorded: zeros. A request the recording has no (more) answers for gets
/// CTAP1_ERR_OTHER, and the caller says so.
public struct RecordedAnswers: Sendable {
    private var queues: [[UInt8]: [TraceReplay.Message]] = [:]
    /// The recorded INIT answer's protocol version, device version and capabilities (5 bytes).
    public private(set) var initTail: [UInt8] = [2, 0, 0, 0, CTAPHIDConfiguration.capabilityWink | CTAPHIDConfiguration.capabilityCBOR]

    public init(_ exchanges: [TraceReplay.Exchange]) {
        for exchange in exchanges {
            guard let response = exchange.response else { continue }
            if exchange.command == CTAPHIDCommand.initialize.rawValue {
                if response.payload.count >= 17 { initTail = Array(response.payload[12..<17]) }
                continue
            }
            queues[Self.kind(command: exchange.command, payload: exchange.payload), default: []].append(response)
        }
    }

    /// How many answers are left to play.
    public var remaining: Int { queues.values.reduce(0) { $0 + $1.count } }

    /// The answer to a request (CTAPHID `command`, `payload`); nil when the recording has none left.
    public mutating func answer(command: UInt8, payload: [UInt8]) -> TraceReplay.Message? {
        let kind = Self.kind(command: command, payload: payload)
        guard var queue = queues[kind], !queue.isEmpty else { return nil }
        let answer = queue.removeFirst()
        queues[kind] = queue
        return answer
    }

    /// The request kind answers are matched by.
    static func kind(command: UInt8, payload: [UInt8]) -> [UInt8] {
        guard command == CTAPHIDCommand.cbor.rawValue, let ctap = payload.first else { return [command] }
        // clientPIN (0x06), credentialManagement (0x0A, 0x41) and config (0x0D): {1: subcommand} or
        // {1: protocol, 2: subcommand} — the map's first entries say which.
        if [0x06, 0x0A, 0x41, 0x0D].contains(ctap), payload.count >= 4 {
            return [command, ctap] + Array(payload[1..<min(payload.count, 6)])
        }
        return [command, ctap]
    }
}
