import CBOR
import CTAPHID
import Foundation
@testable import Trace
import XCTest

/// `latchkey replay`'s reading of a trace and its comparison of answers.
final class TraceReplayTests: XCTestCase {
    let channel: UInt32 = 0x0102_0304

    func contents(_ script: TraceScript) -> TraceFile.Contents {
        TraceFile.Contents(header: TraceHeader(started: "2026-12-03T00:00:00.000Z", time: 1_000_000), records: script.records)
    }

    func testExchangesPairEachRequestWithItsAnswerSkippingKeepalives() {
        var script = TraceScript()
        script.request(channel, ctap: 0x04, nil)
        script.response(channel, .map([1: ["FIDO_2_1"]]))
        script.request(channel, ctap: 0x01, .map([1: .byteString([UInt8](repeating: 1, count: 32))]))
        script.keepalive(channel, status: 2, count: 3)
        script.response(channel, status: 0x27, nil)
        script.request(channel, ctap: 0x04, nil)   // the trace ends before its answer
        script.finish()
        let exchanges = TraceReplay.exchanges(contents(script))
        XCTAssertEqual(exchanges.count, 3)
        XCTAssertEqual(exchanges[0].payload, [0x04])
        XCTAssertEqual(exchanges[0].response?.payload.first, 0x00)
        XCTAssertEqual(exchanges[1].response, .init(command: CTAPHIDCommand.cbor.rawValue, payload: [0x27]), "the keepalives are not the answer")
        XCTAssertNil(exchanges[2].response)
        XCTAssertEqual(TraceReplay.describe(exchanges[1]), "CBOR authenticatorMakeCredential")
    }

    func testRedactedRequestsSayWhatWasBlanked() {
        var script = TraceScript()
        script.request(channel, ctap: 0x06, .map([1: 2, 2: 5, 3: sampleKeyAgreement, 6: .byteString(distinctiveBytes(16))]))
        script.response(channel, .map([2: .byteString(distinctiveBytes(48))]))
        script.finish()
        let exchange = try! XCTUnwrap(TraceReplay.exchanges(contents(script)).first)
        XCTAssertEqual(exchange.redactedFields, ["clientPIN.pinHashEnc"])
    }

    func testDecisionsDifferRandomnessDoesNot() {
        let cbor = CTAPHIDCommand.cbor.rawValue
        func answer(_ status: UInt8, _ body: CBORValue?) -> TraceReplay.Message {
            .init(command: cbor, payload: [status] + (body?.encoded() ?? []))
        }
        let recorded = answer(0, .map([1: .map(["id": .byteString(distinctiveBytes(64)), "type": "public-key"]),
                                       2: .byteString(distinctiveBytes(37)), 3: .byteString(distinctiveBytes(71)), 5: 2]))
        let sameDecision = answer(0, .map([1: .map(["id": .byteString(distinctiveBytes(80)), "type": "public-key"]),
                                           2: .byteString(distinctiveBytes(37)), 3: .byteString(distinctiveBytes(70)), 5: 2]))
        XCTAssertEqual(TraceReplay.differences(recorded: recorded, replayed: sameDecision), [])
        XCTAssertEqual(TraceReplay.differences(recorded: recorded, replayed: answer(0x2E, nil)),
                       ["status CTAP2_ERR_NO_CREDENTIALS (0x2e), recorded CTAP2_OK (0x00)"])
        let fewer = answer(0, .map([1: .map(["id": .byteString([1]), "type": "public-key"]), 2: .byteString([2]), 3: .byteString([3]), 5: 1]))
        XCTAssertEqual(TraceReplay.differences(recorded: recorded, replayed: fewer), ["5: 1, recorded 2"])
        let noCount = answer(0, .map([1: .map(["id": .byteString([1]), "type": "public-key"]), 2: .byteString([2]), 3: .byteString([3])]))
        XCTAssertEqual(TraceReplay.differences(recorded: recorded, replayed: noCount), ["5 is missing (recorded 2)"])
        let busy = TraceReplay.Message(command: CTAPHIDCommand.error.rawValue, payload: [0x06])
        XCTAssertEqual(TraceReplay.differences(recorded: recorded, replayed: busy).first?.hasPrefix("ERROR ERR_CHANNEL_BUSY"), true)
    }

    func testACredentialIDTheRecordedKeyMadeIsReplacedInLaterRequests() {
        let old = distinctiveBytes(64), new = distinctiveBytes(80)
        let request: [UInt8] = [0x02] + CBORValue.map([1: "example.com", 2: .byteString(distinctiveBytes(32)),
                                                        3: .array([.map(["id": .byteString(old), "type": "public-key"])])]).encoded()
        let replaced = TraceReplay.substituting([old: new], in: request)
        let body = try! CBORDecoder.decode(Array(replaced.dropFirst()))
        XCTAssertEqual(body[3]?.arrayValue?.first?["id"]?.bytesValue, new)
        XCTAssertEqual(replaced.first, 0x02)
        XCTAssertEqual(TraceReplay.substituting([distinctiveBytes(64): new], in: request), request, "nothing to replace: unchanged")
    }

    func testRecordedAnswersArePlayedInOrderPerRequestKind() {
        let cbor = CTAPHIDCommand.cbor.rawValue
        func message(_ payload: [UInt8]) -> TraceReplay.Message { .init(command: cbor, payload: payload) }
        let initAnswer = TraceReplay.Message(command: CTAPHIDCommand.initialize.rawValue,
                                             payload: [UInt8](repeating: 9, count: 8) + [0, 0, 0, 7] + [2, 5, 4, 3, 0x05])
        let exchanges = [
            TraceReplay.Exchange(channel: 0xFFFF_FFFF, command: CTAPHIDCommand.initialize.rawValue, payload: [UInt8](repeating: 9, count: 8),
                                 response: initAnswer),
            TraceReplay.Exchange(channel: 7, command: cbor, payload: [0x04], response: message([0x00, 0xA0])),
            // clientPIN getPINRetries {1: 2, 2: 1} and getKeyAgreement {1: 2, 2: 2}: told apart by subcommand.
            TraceReplay.Exchange(channel: 7, command: cbor, payload: [0x06, 0xA2, 0x01, 0x02, 0x02, 0x01], response: message([0x35])),
            TraceReplay.Exchange(channel: 7, command: cbor, payload: [0x06, 0xA2, 0x01, 0x02, 0x02, 0x02], response: message([0x00, 0xA1])),
            TraceReplay.Exchange(channel: 7, command: cbor, payload: [0x04], response: message([0x00, 0xA1, 0x01, 0x80])),
            TraceReplay.Exchange(channel: 7, command: cbor, payload: [0x01], response: nil),
        ]
        var answers = RecordedAnswers(exchanges)
        XCTAssertEqual(answers.initTail, [2, 5, 4, 3, 0x05])
        XCTAssertEqual(answers.remaining, 4)
        XCTAssertEqual(answers.answer(command: cbor, payload: [0x06, 0xA2, 0x01, 0x02, 0x02, 0x02])?.payload, [0x00, 0xA1])
        XCTAssertEqual(answers.answer(command: cbor, payload: [0x04])?.payload, [0x00, 0xA0])
        XCTAssertEqual(answers.answer(command: cbor, payload: [0x04])?.payload, [0x00, 0xA1, 0x01, 0x80])
        XCTAssertNil(answers.answer(command: cbor, payload: [0x04]), "no more getInfo answers")
        XCTAssertNil(answers.answer(command: cbor, payload: [0x01]), "a request the recording never answered")
        XCTAssertEqual(answers.answer(command: cbor, payload: [0x06, 0xA2, 0x01, 0x02, 0x02, 0x01])?.payload, [0x35])
        XCTAssertEqual(answers.remaining, 0)
    }

    func testWhatCouldHarmTheKeyIsNamed() {
        let cbor = CTAPHIDCommand.cbor.rawValue
        func exchange(_ payload: [UInt8], redacted: [String] = []) -> TraceReplay.Exchange {
            TraceReplay.Exchange(channel: channel, command: cbor, payload: payload, redactedFields: redacted)
        }
        XCTAssertNil(TraceReplay.harm(exchange([0x04])))
        XCTAssertNil(TraceReplay.harm(exchange([0x01] + CBORValue.map([1: .byteString([1])]).encoded())))
        XCTAssertNotNil(TraceReplay.harm(exchange([0x07])), "reset")
        XCTAssertNotNil(TraceReplay.harm(exchange([0x06] + CBORValue.map([1: 2, 2: 9]).encoded(), redacted: ["clientPIN.pinHashEnc"])))
        XCTAssertNil(TraceReplay.harm(exchange([0x06] + CBORValue.map([1: 2, 2: 2]).encoded())), "getKeyAgreement")
        XCTAssertNotNil(TraceReplay.harm(exchange([0x0A] + CBORValue.map([1: 6]).encoded())), "deleteCredential")
        XCTAssertNil(TraceReplay.harm(exchange([0x0A] + CBORValue.map([1: 1]).encoded())), "getCredsMetadata")
        XCTAssertNotNil(TraceReplay.harm(exchange([0x0D] + CBORValue.map([1: 2]).encoded())), "config")
        XCTAssertNotNil(TraceReplay.harm(exchange([0x0C] + CBORValue.map([2: .byteString([1]), 3: 0]).encoded())), "largeBlobs set")
        XCTAssertNil(TraceReplay.harm(exchange([0x0C] + CBORValue.map([1: 100, 3: 0]).encoded())), "largeBlobs get")
        // A discoverable makeCredential stores a credential (the trace's blanked RP ID and user: junk on a real key).
        XCTAssertNotNil(TraceReplay.harm(exchange([0x01] + CBORValue.map([7: .map([.textString("rk"): .boolean(true)])]).encoded())))
        XCTAssertNil(TraceReplay.harm(exchange([0x01] + CBORValue.map([7: .map([.textString("up"): .boolean(true)])]).encoded())))
    }

    /// A replay writes nothing by default, and skips what depends on what it skipped; --allow-writes
    /// sends writes but never a reset or a blanked PIN; --include-harmful sends everything.
    func testAReplayWritesNothingUnlessToldAndSkipsWhatDependsOnIt() {
        let cbor = CTAPHIDCommand.cbor.rawValue
        let rp = String(repeating: "\u{0}", count: 12)   // as a trace blanks an RP ID
        let recordedID: [UInt8] = Array(repeating: 0x42, count: 16)
        // A makeCredential answer: status, then {1: fmt, 2: authData with the attested credential}.
        var authData = [UInt8](repeating: 0, count: 32) + [0x41] + [0, 0, 0, 1] + [UInt8](repeating: 0, count: 16)
        authData += [0, UInt8(recordedID.count)] + recordedID + CBORValue.map([1: 2, 3: -7]).encoded()
        let made = TraceReplay.Message(command: cbor, payload: [0] + CBORValue.map([1: "none", 2: .byteString(authData), 3: .map([:])]).encoded())
        func request(_ ctap: UInt8, _ body: CBORValue?, channel: UInt32 = 1, answer: TraceReplay.Message? = nil,
                     redacted: [String] = []) -> TraceReplay.Exchange {
            TraceReplay.Exchange(channel: channel, command: cbor, payload: [ctap] + (body?.encoded() ?? []), redactedFields: redacted,
                                 response: answer ?? .init(command: cbor, payload: [0]))
        }
        let session = [
            request(0x04, nil),                                                                          // getInfo
            request(0x01, .map([2: .map([.textString("id"): .textString(rp)]), 7: .map([.textString("rk"): .boolean(true)])]),
                    answer: made),                                                                       // resident make
            request(0x02, .map([1: .textString(rp)])),                                                   // discoverable sign-in
            request(0x08, nil),                                                                          // getNextAssertion
            request(0x02, .map([1: .textString("other.example")])),                                     // another RP: sent
            request(0x02, .map([1: .textString("x"), 3: .array([.map([.textString("id"): .byteString(recordedID)])])])),
            request(0x0A, .map([1: 1])),                                                                 // metadata after a write
            request(0x07, nil),                                                                          // reset
        ]
        let readOnly = TraceReplay.skipReasons(session, allowance: .readOnly)
        XCTAssertEqual(readOnly.map { $0 != nil }, [false, true, true, true, false, true, true, true], "\(readOnly)")
        XCTAssertTrue(readOnly[2]?.contains("depends on a write the replay skipped") == true)
        let writes = TraceReplay.skipReasons(session, allowance: .writes)
        XCTAssertEqual(writes.map { $0 != nil }, [false, false, false, false, false, false, false, true], "a reset is never a mere write")
        XCTAssertEqual(TraceReplay.skipReasons(session, allowance: .everything).compactMap { $0 }, [])
    }
}
