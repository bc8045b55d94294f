import CTAPHID
import FuzzSupport

/// CTAPHID: the transport's state machine fed reports from four connections (INIT, resync,
/// interleaved channels, CANCEL, LOCK, closing mid-message), with time moving and requests
/// completing; plus fragment → reassemble identity for a message the input chooses.
///
/// Script: op ‖ body. op % 8: 0–3 a 64-byte report (the body, padded) from connection op % 4
/// (an INIT or continuation as the bytes say); 4 time moves body[0] × 10 ms; 5 the running
/// request completes with a response of body's bytes; 6 a connection closes; 7 a keepalive update.
/// Invariants: every report sent is 64 bytes and goes to an open connection; at most one
/// request runs at a time; the channel table stays within its limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    reassemblyIdentity(&input)

    var machine = CTAPHIDStateMachine(configuration: CTAPHIDConfiguration(maxChannels: 8, channelIDSeed: 0x1000))
    var now: UInt64 = 1_000_000_000
    var closed: Set<ConnectionID> = []
    var running: CTAPHIDRequest?
    var steps = 0
    while !input.isAtEnd, steps < 256 {
        steps += 1
        let op = input.byte()
        let body = input.take(Int(input.byte()))
        var actions: [CTAPHIDAction] = []
        switch op % 8 {
        case 0, 1, 2, 3:
            let connection = ConnectionID(op % 4)
            closed.remove(connection)
            let report = Array((body + [UInt8](repeating: 0, count: 64)).prefix(op & 0x80 != 0 ? body.count : 64))
            actions = machine.receive(report: report, from: connection, now: now)
        case 4:
            now += UInt64(body.first ?? 1) * 10_000_000
            actions = machine.tick(now: now)
        case 5:
            if let request = running {
                actions = machine.complete(transactionID: request.transactionID, response: Array(body.prefix(7609)), now: now)
                running = nil
            }
        case 6:
            let connection = ConnectionID((body.first ?? 0) % 4)
            closed.insert(connection)
            actions = machine.connectionClosed(connection)
        default:
            if let request = running {
                actions = machine.updateKeepalive(transactionID: request.transactionID,
                                                  status: (body.first ?? 0) & 1 == 0 ? .processing : .userPresenceNeeded, now: now)
            }
        }
        for action in actions {
            switch action {
            case let .send(report, connection):
                invariant(report.count == 64, "a \(report.count)-byte report")
                invariant(!closed.contains(connection), "a report to closed connection \(connection)")
            case let .dispatch(request):
                invariant(running == nil, "a second request dispatched while one runs")
                running = request
            case let .cancelRequest(transactionID):
                if running?.transactionID == transactionID { running = nil }
            case .wink:
                break
            }
        }
        invariant(machine.allocatedChannelCount <= 8, "\(machine.allocatedChannelCount) channels over the limit of 8")
    }
    return 0
}

/// fragment → reassemble is the identity for any channel, command and payload ≤ 7609 bytes.
func reassemblyIdentity(_ input: inout FuzzInput) {
    let channel = input.uint32()
    let command = input.byte() & 0x7F
    let payload = input.take(Int(input.uint16() % 7610))
    let reports = MessageFragmenter.reports(channel: channel, command: command, payload: payload)
    var assembler = MessageAssembler()
    for (index, report) in reports.enumerated() {
        let result = assembler.feed(report: report)
        if index == reports.count - 1 {
            invariant(result == .complete(command: command, payload: payload),
                      "reassembly of \(payload.count) bytes on channel \(channel) gave \(result)")
        } else {
            invariant(result == .needMore, "report \(index) of \(reports.count) gave \(result)")
        }
    }
}
