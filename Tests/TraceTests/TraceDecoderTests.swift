import CBOR
import CTAPHID
import Foundation
@testable import Trace
import XCTest

final class TraceDecoderTests: XCTestCase {
    let channel: UInt32 = 0x0000_0007

    /// INIT, then a makeCredential that waits for a touch (1 PROCESSING + 12 UPNEEDED keepalives),
    /// then its response with attested credential data.
    func makeCredentialScript(status: UInt8 = 0) -> TraceScript {
        var script = TraceScript()
        let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        script.send(.toKey, channel: 0xFFFF_FFFF, command: CTAPHIDCommand.initialize.rawValue, payload: nonce)
        script.send(.fromKey, channel: 0xFFFF_FFFF, command: CTAPHIDCommand.initialize.rawValue,
                    payload: nonce + [0, 0, 0, 7, 2, 1, 0, 0, 0x05])
        script.request(channel, ctap: 0x01, .map([
            1: .byteString(Array(repeating: 0xCD, count: 32)), 2: .map(["id": "example.com", "name": "Example"]),
            3: .map(["id": .byteString([1, 2, 3, 4]), "name": "alice"]), 4: .array([.map(["alg": -7, "type": "public-key"])]),
        ]))
        script.keepalive(channel, status: 1, count: 1)
        script.keepalive(channel, status: 2, count: 12)
        if status == 0 {
            let authData = Array(repeating: 0xAB, count: 32) + [0x41, 0, 0, 0, 9] + Array(repeating: 0x5A, count: 16)
                + [0, 4] + [9, 9, 9, 9] + sampleKeyAgreement.encoded()
            script.response(channel, .map([1: "packed", 2: .byteString(authData), 3: .map(["alg": -7, "sig": .byteString([0x30, 0x44])])]))
        } else {
            script.response(channel, status: status, nil)
        }
        script.finish()
        return script
    }

    func decoded(_ script: TraceScript) throws -> (events: [TraceEvent], text: String, header: TraceHeader) {
        let contents = try TraceFile.parse(script.fileBytes())
        let events = TraceDecoder.decode(contents)
        return (events, TraceDecoder.text(events, header: contents.header), contents.header)
    }

    func testMakeCredentialExchange() throws {
        let (events, text, _) = try decoded(makeCredentialScript())
        XCTAssertEqual(events.map(\.kind), [.message, .message, .message, .keepalive, .keepalive, .message])
        XCTAssertEqual(events[0].summary, "nonce 0102030405060708")
        XCTAssertEqual(events[1].summary, "nonce 0102030405060708 → channel 00000007, CTAPHID protocol 2, device 1.0.0, capabilities WINK CBOR")
        let request = events[2]
        XCTAssertEqual(request.hidCommand, "CBOR")
        XCTAssertEqual(request.ctapCommand, "authenticatorMakeCredential")
        XCTAssertEqual(request.summary, "authenticatorMakeCredential (0x01)")
        XCTAssertEqual(request.reports, 2)
        // The RP and user entities are blanked (identifying), their field names kept.
        XCTAssertEqual(request.cbor, #"{1: h'cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 2: {"id": <redacted 11 bytes>, "name": <redacted 7 bytes>}, "#
                       + #"3: {"id": <redacted 4 bytes>, "name": <redacted 5 bytes>}, 4: [{"alg": -7, "type": "public-key"}]}"#)
        XCTAssertFalse(text.contains("example.com") || text.contains("alice"), text)
        XCTAssertEqual(events[3].summary, "KEEPALIVE PROCESSING")
        XCTAssertEqual(events[4].count, 12)
        XCTAssertEqual(events[4].summary, "KEEPALIVE UPNEEDED ×12 (over 1.100 s)")
        let response = events[5]
        XCTAssertEqual(response.ctapStatus, "CTAP2_OK")
        XCTAssertEqual(response.ctapCommand, "authenticatorMakeCredential")
        XCTAssertEqual(response.summary, "CTAP2_OK (0x00)")
        // The response's first report left 1.3 s (13 keepalives, 100 ms apart) after the request's last.
        XCTAssertEqual(try XCTUnwrap(response.latencyMilliseconds), 1_300.1, accuracy: 0.05)
        XCTAssertEqual(response.authData,
                       "rpIdHash h'abababababababababababababababababababababababababababababababab', flags UP AT (0x41), signCount 9, "
                       + "aaguid 5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a, credentialId h'09090909' (4 bytes), credentialPublicKey "
                       + "{1: 2, 3: -25, -1: 1, -2: h'1111111111111111111111111111111111111111111111111111111111111111', "
                       + "-3: h'2222222222222222222222222222222222222222222222222222222222222222'}")
        XCTAssertTrue(text.contains("CBOR authenticatorMakeCredential (0x01), "), text)
        XCTAssertTrue(text.contains("KEEPALIVE UPNEEDED ×12"), text)
        XCTAssertTrue(text.contains("CBOR CTAP2_OK (0x00), "), text)
        XCTAssertTrue(text.contains("[1300.1 ms]"), text)
        XCTAssertTrue(text.hasSuffix("4 messages"), text)
    }

    func testDeniedMakeCredential() throws {
        let (events, text, _) = try decoded(makeCredentialScript(status: 0x27))
        XCTAssertEqual(events.last?.ctapStatus, "CTAP2_ERR_OPERATION_DENIED")
        XCTAssertTrue(text.contains("CTAP2_ERR_OPERATION_DENIED (0x27), 1 byte"), text)
    }

    /// Keepalives collapse per channel and status only: a status change or another message on
    /// the channel starts a new run; keepalives on another channel do not interrupt it.
    func testKeepaliveCollapsing() throws {
        var script = TraceScript()
        script.keepalive(channel, status: 2, count: 3)
        script.keepalive(channel + 1, status: 2, count: 2)
        script.keepalive(channel, status: 2, count: 2)
        script.keepalive(channel, status: 1, count: 1)
        script.keepalive(channel, status: 2, count: 1)
        let (events, _, _) = try decoded(script)
        XCTAssertEqual(events.map(\.count), [5, 2, 1, 1])
        XCTAssertEqual(events.map(\.channel), [channel, channel + 1, channel, channel])
        XCTAssertEqual(events.map { $0.summary.components(separatedBy: " (").first! },
                       ["KEEPALIVE UPNEEDED ×5", "KEEPALIVE UPNEEDED ×2", "KEEPALIVE PROCESSING", "KEEPALIVE UPNEEDED"])
    }

    func testU2FAndCTAPHIDErrors() throws {
        var script = TraceScript()
        let register: [UInt8] = [0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x40] + Array(repeating: 0x61, count: 64) + [0x00, 0x00]
        script.send(.toKey, channel: channel, command: CTAPHIDCommand.msg.rawValue, payload: register)
        script.send(.fromKey, channel: channel, command: CTAPHIDCommand.msg.rawValue, payload: [0x69, 0x85])
        let authenticate: [UInt8] = [0x00, 0x02, 0x07, 0x00, 0x00, 0x00, 0x41] + Array(repeating: 0x62, count: 65) + [0x00, 0x00]
        script.send(.toKey, channel: channel, command: CTAPHIDCommand.msg.rawValue, payload: authenticate)
        script.send(.fromKey, channel: channel, command: CTAPHIDCommand.msg.rawValue, payload: [0x90, 0x00])
        script.send(.fromKey, channel: channel, command: CTAPHIDCommand.error.rawValue, payload: [0x06])
        let (events, _, _) = try decoded(script)
        XCTAssertEqual(events[0].summary, "U2F_REGISTER (ins 0x01) p1 0x03 p2 0x00, 64 bytes of data")
        XCTAssertEqual(events[0].u2f?.ins, 1)
        XCTAssertEqual(events[1].summary, "SW 6985 (SW_CONDITIONS_NOT_SATISFIED)")
        XCTAssertEqual(events[2].summary, "U2F_AUTHENTICATE (ins 0x02) p1 0x07 check-only p2 0x00, 65 bytes of data")
        XCTAssertEqual(events[3].u2f?.statusName, "SW_NO_ERROR")
        XCTAssertEqual(events[4].summary, "ERR_CHANNEL_BUSY")
    }

    func testJSONOutput() throws {
        let (events, _, _) = try decoded(makeCredentialScript(status: 0x27))
        let lines = TraceDecoder.jsonLines(events).split(separator: "\n")
        XCTAssertEqual(lines.count, events.count)
        let objects = try lines.map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        XCTAssertEqual(objects[2]["ctap_command"] as? String, "authenticatorMakeCredential")
        XCTAssertEqual(objects[2]["cid"] as? String, "00000007")
        XCTAssertEqual(objects[2]["dir"] as? String, "in")
        XCTAssertEqual(objects[4]["kind"] as? String, "keepalive")
        XCTAssertEqual(objects[4]["count"] as? Int, 12)
        XCTAssertEqual(objects[5]["ctap_status"] as? String, "CTAP2_ERR_OPERATION_DENIED")
        XCTAssertNotNil(objects[5]["latency_ms"] as? Double)
        // A message's bytes, command byte first, as the file holds them; none on a keepalive run.
        let request = try XCTUnwrap(objects[2]["payload"] as? String)
        XCTAssertEqual(request.prefix(2), "01")
        XCTAssertEqual(request.count, 2 * (objects[2]["length"] as? Int ?? -1))
        XCTAssertEqual(objects[5]["payload"] as? String, "27")
        XCTAssertNil(objects[4]["payload"])
    }

    /// `payload` is the message as recorded: a redacted span is zero there too, never the secret.
    func testJSONPayloadKeepsRedactedSpansZero() throws {
        var recorder = TraceRecorder()
        let pin = Array(repeating: UInt8(0x5A), count: 64)
        let body = [0x06] + CBORValue.map([1: .unsignedInt(2), 2: .unsignedInt(4), 5: .byteString(pin)]).encoded()
        var records: [TraceRecord] = []
        for (index, report) in MessageFragmenter.reports(channel: channel, command: 0x10, payload: body).enumerated() {
            records += recorder.record(report: report, direction: .toKey, connection: 1, time: UInt64(index + 1))
        }
        let contents = TraceFile.Contents(header: TraceHeader(started: "x", time: 0), records: records, truncatedLines: 0)
        let events = TraceDecoder.decode(contents, fullByteStrings: true)
        let payload = try XCTUnwrap(events.first?.payload)
        XCTAssertEqual(payload.count, body.count)
        XCTAssertFalse(payload.contains(0x5A), "the PIN's bytes are in the payload")
        XCTAssertEqual(Array(payload.prefix(payload.count - 64)), Array(body.prefix(body.count - 64)))
        let line = TraceDecoder.jsonLines(events)
        XCTAssertFalse(line.contains(String(repeating: "5a", count: 8)))
    }

    /// Records are written when their message is whole, so the file is not in time order; the
    /// decoder sorts. Long byte strings are shortened unless asked for in full.
    func testOutOfOrderRecordsAndLongByteStrings() throws {
        var recorder = TraceRecorder()
        let long = [0x01] + CBORValue.map([1: .byteString(Array(repeating: 0x77, count: 100))]).encoded()
        let reports = MessageFragmenter.reports(channel: channel, command: 0x10, payload: long)
        var records = recorder.record(report: reports[0], direction: .toKey, connection: 1, time: 10)
        records += recorder.record(report: MessageFragmenter.reports(channel: 9, command: 0x01, payload: [1])[0],
                                   direction: .toKey, connection: 2, time: 20)
        records += recorder.record(report: reports[1], direction: .toKey, connection: 1, time: 30)
        XCTAssertEqual(records.map(\.time), [20, 10, 30])
        let contents = TraceFile.Contents(header: TraceHeader(started: "x", time: 0), records: records, truncatedLines: 0)
        let events = TraceDecoder.decode(contents)
        XCTAssertEqual(events.map(\.time), [10, 20])
        XCTAssertEqual(events[0].cbor, "{1: h'77777777777777777777777777777777…'(100 bytes)}")
        XCTAssertEqual(TraceDecoder.decode(contents, fullByteStrings: true)[0].cbor,
                       "{1: h'" + String(repeating: "77", count: 100) + "'}")
    }

    func testCBORLayoutIsTotal() {
        // Truncated, indefinite, tagged and over-deep inputs give nil rather than trapping.
        for bytes: [UInt8] in [[0x5A, 0xFF, 0xFF, 0xFF, 0xFF], [0x9F, 0x01, 0xFF], [0xC1, 0x01], [0xBB] + Array(repeating: 0xFF, count: 8),
                               Array(repeating: 0x81, count: 20) + [0x01], [0x1C], []] {
            XCTAssertNil(CBORLayout.parse(bytes, at: 0), "\(bytes)")
        }
        let map = CBORValue.map([1: "a", -2: .byteString([1, 2]), "k": [true, nil]]).encoded()
        let layout = CBORLayout.parse(map, at: 0)
        XCTAssertEqual(layout?.range, 0..<map.count)
        XCTAssertEqual(layout?.value(forKey: -2)?.kind, .bytes)
        XCTAssertEqual(layout?.value(forKey: "k")?.children.count, 2)
        XCTAssertEqual(layout.map { TraceDecoder.diagnostic($0, in: map, redactions: [], full: true) },
                       CBORValue.map([1: "a", -2: .byteString([1, 2]), "k": [true, nil]]).description)
    }

    /// A crafted trace never traps the decoder: a redaction outside any CTAPHID message
    /// (negative, overflowing, past 7609 bytes) is an error naming its line; one inside the
    /// message limit but past the payload decodes as usual.
    func testCraftedRedactionsAreRejectedOrHarmless() throws {
        let script = makeCredentialScript()
        let header = try XCTUnwrap(String(decoding: try script.fileBytes(), as: UTF8.self).split(separator: "\n").first)
        let report = String(repeating: "00", count: 4) + "90000104" + String(repeating: "00", count: 56)
        func file(_ redaction: String) -> [UInt8] {
            Array((header + "\n" + "{\"t\":1000100,\"dir\":\"in\",\"conn\":1,\"report\":\"\(report)\",\"redacted\":[\(redaction)]}\n").utf8)
        }
        for bad in ["{\"field\":\"x\",\"offset\":-5,\"length\":10}",
                    "{\"field\":\"x\",\"offset\":\(Int.max),\"length\":1}",
                    "{\"field\":\"x\",\"offset\":10,\"length\":\(Int.max)}",
                    "{\"field\":\"x\",\"offset\":7000,\"length\":700}"] {
            XCTAssertThrowsError(try TraceFile.parse(file(bad)), bad) {
                XCTAssertTrue("\($0)".contains("line 2"), "\($0)")
            }
        }
        let contents = try TraceFile.parse(file("{\"field\":\"x\",\"offset\":3000,\"length\":4000}"))
        let events = TraceDecoder.decode(contents)
        XCTAssertFalse(TraceDecoder.text(events, header: contents.header).isEmpty)
    }

    /// A record that is not one is named by its line and member, in the shared JSON wording;
    /// Foundation's own text (Swift types, "Expected to decode") never reaches the user.
    func testABadRecordIsNamedByLineAndMember() throws {
        let header = try XCTUnwrap(String(decoding: try makeCredentialScript().fileBytes(), as: UTF8.self).split(separator: "\n").first)
        let bad = Array((header + "\n{\"t\":1000100,\"dir\":5,\"conn\":1,\"report\":\"00\"}\n").utf8)
        XCTAssertThrowsError(try TraceFile.parse(bad, name: "t.trace")) {
            XCTAssertEqual("\($0)", "t.trace, line 2: not a trace record (dir is not a string)")
        }
    }
}
