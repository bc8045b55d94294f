import XCTest
@testable import CTAPHID

let broadcast: UInt32 = 0xFFFF_FFFF

/// An instant `ms` milliseconds after the test clock's origin.
func t(_ ms: UInt64) -> UInt64 { ms * 1_000_000 }

/// A raw initialization report; `length` defaults to `data.count`.
func initReport(_ channel: UInt32, _ command: UInt8, length: Int? = nil, data: [UInt8] = []) -> [UInt8] {
    CTAPHIDPacket.initialization(channel: channel, command: command,
                                 declaredLength: length ?? data.count, data: Array(data.prefix(57))).report
}

func contReport(_ channel: UInt32, seq: UInt8, data: [UInt8] = []) -> [UInt8] {
    CTAPHIDPacket.continuation(channel: channel, sequence: seq, data: data).report
}

/// The one report of a CTAPHID_ERROR response.
func errorReport(_ channel: UInt32, _ error: CTAPHIDError) -> [UInt8] {
    initReport(channel, 0x3F, data: [error.rawValue])
}

/// Deterministic, non-repeating-looking content.
func pattern(_ count: Int, salt: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 8) &+ salt) }
}

let nonce: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]

extension Array where Element == CTAPHIDAction {
    /// The reports of all `.send` actions, in order.
    var reports: [[UInt8]] {
        compactMap { if case let .send(report, _) = $0 { return report } else { return nil } }
    }

    /// The connections of all `.send` actions, in order.
    var destinations: [ConnectionID] {
        compactMap { if case let .send(_, to) = $0 { return to } else { return nil } }
    }

    var dispatched: [CTAPHIDRequest] {
        compactMap { if case let .dispatch(request) = $0 { return request } else { return nil } }
    }

    var cancelled: [UInt64] {
        compactMap { if case let .cancelRequest(id) = $0 { return id } else { return nil } }
    }

    /// Reassembles the sent reports into one message (fails the test otherwise).
    func message(file: StaticString = #filePath, line: UInt = #line) -> (channel: UInt32, command: UInt8, payload: [UInt8])? {
        var assembler = MessageAssembler()
        for (index, report) in reports.enumerated() {
            XCTAssertEqual(report.count, 64, "report \(index) is not 64 bytes", file: file, line: line)
            let channel = CTAPHIDPacket(report: report)?.channel ?? 0
            switch assembler.feed(report: report) {
            case let .complete(command, payload):
                XCTAssertEqual(index, reports.count - 1, "message completed before its last report", file: file, line: line)
                return (channel, command, payload)
            case .needMore: continue
            case let other:
                XCTFail("unexpected assembler result \(other)", file: file, line: line)
                return nil
            }
        }
        XCTFail("no complete message in \(reports.count) reports", file: file, line: line)
        return nil
    }
}

extension CTAPHIDStateMachine {
    /// Sends a whole message as reports (fragmented), returning all actions.
    mutating func send(_ channel: UInt32, _ command: UInt8, _ payload: [UInt8],
                       from connection: ConnectionID = 0, now: UInt64 = t(0)) -> [CTAPHIDAction] {
        var actions: [CTAPHIDAction] = []
        for report in MessageFragmenter.reports(channel: channel, command: command, payload: payload) {
            actions += receive(report: report, from: connection, now: now)
        }
        return actions
    }

    /// INIT on broadcast; returns the allocated channel ID.
    mutating func allocateChannel(from connection: ConnectionID = 0, now: UInt64 = t(0),
                                  file: StaticString = #filePath, line: UInt = #line) -> UInt32 {
        let actions = receive(report: initReport(broadcast, 0x06, data: nonce), from: connection, now: now)
        guard let message = actions.message(file: file, line: line), message.payload.count == 17 else {
            XCTFail("INIT failed: \(actions)", file: file, line: line)
            return 0
        }
        let p = message.payload
        return UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11])
    }

    /// Sends a CBOR request and returns the dispatched request.
    mutating func startCBOR(_ channel: UInt32, payload: [UInt8] = [0x04], from connection: ConnectionID = 0,
                            now: UInt64 = t(0), file: StaticString = #filePath, line: UInt = #line) -> CTAPHIDRequest? {
        let actions = send(channel, 0x10, payload, from: connection, now: now)
        guard actions.count == 1, let request = actions.dispatched.first else {
            XCTFail("CBOR not dispatched: \(actions)", file: file, line: line)
            return nil
        }
        return request
    }
}
