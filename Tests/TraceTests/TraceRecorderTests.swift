import CBOR
import CTAPHID
import Foundation
import LatchkeyTestSupport
@testable import Trace
import XCTest

/// Builds CTAPHID traffic by hand and runs it through `TraceRecorder` the way `KeyRunner` does.
struct TraceScript {
    var recorder = TraceRecorder()
    var records: [TraceRecord] = []
    var time: UInt64 = 1_000_000
    var connection = 1

    mutating func send(_ direction: TraceRecord.Direction, channel: UInt32, command: UInt8, payload: [UInt8],
                       spacing: UInt64 = 100) {
        for report in MessageFragmenter.reports(channel: channel, command: command, payload: payload) {
            time += spacing
            records += recorder.record(report: report, direction: direction, connection: connection, time: time)
        }
    }

    /// A CBOR request the key accepts: its reports, then its dispatch (as KeyRunner tells the recorder).
    mutating func request(_ channel: UInt32, ctap command: UInt8, _ body: CBORValue?) {
        let payload = [command] + (body?.encoded() ?? [])
        send(.toKey, channel: channel, command: CTAPHIDCommand.cbor.rawValue, payload: payload)
        recorder.dispatched(hidCommand: CTAPHIDCommand.cbor.rawValue, payload: payload, channel: channel, connection: connection)
    }

    mutating func response(_ channel: UInt32, status: UInt8 = 0, _ body: CBORValue?) {
        send(.fromKey, channel: channel, command: CTAPHIDCommand.cbor.rawValue, payload: [status] + (body?.encoded() ?? []))
    }

    mutating func keepalive(_ channel: UInt32, status: UInt8, count: Int) {
        for _ in 0..<count {
            send(.fromKey, channel: channel, command: CTAPHIDCommand.keepalive.rawValue, payload: [status], spacing: 100_000)
        }
    }

    mutating func finish() {
        records += recorder.finish()
    }

    /// The records as a trace file would hold them.
    func fileBytes(header: TraceHeader = TraceHeader(started: "2025-01-01T00:00:00.000Z", time: 1_000_000)) throws -> [UInt8] {
        let directory = try ShortTempDirectory()
        let path = directory.path + "/trace.jsonl"
        let file = try TraceFile.create(path: path, header: header)
        file.write(records)
        file.close()
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// Random bytes that will not turn up in a trace by chance.
func distinctiveBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

/// Fails if any 8-byte window of `secret` appears in `file`, raw or as hex in either case.
func assertNoTrace(of secret: [UInt8], in file: [UInt8], _ label: String, line: UInt = #line) {
    let text = String(decoding: file, as: UTF8.self).lowercased()
    for start in stride(from: 0, through: max(0, secret.count - 8), by: 1) {
        let window = Array(secret[start..<min(secret.count, start + 8)])
        XCTAssertFalse(text.contains(Hex.encode(window)), "\(label): hex bytes \(start)… are in the trace", line: line)
        XCTAssertNil(file.firstRange(of: window), "\(label): raw bytes \(start)… are in the trace", line: line)
    }
}

/// A COSE_Key as clients send for key agreement (values are arbitrary here).
let sampleKeyAgreement: CBORValue = .map([1: 2, 3: -25, -1: 1, -2: .byteString(Array(repeating: 0x11, count: 32)),
                                          -3: .byteString(Array(repeating: 0x22, count: 32))])

final class TraceRecorderTests: XCTestCase {
    let channel: UInt32 = 0x0102_0304

    // CTAP 2.1 §6.5.5.5 setPIN and §6.5.5.7 getPinToken: newPinEnc, pinHashEnc and the returned
    // pinUvAuthToken are secret and must never be written (architecture rule 5).
    func testClientPINSetPINAndGetPinTokenNeverReachTheTrace() throws {
        let newPinEnc = distinctiveBytes(80)      // protocol 2: IV ‖ AES-CBC(64-byte padded PIN)
        let pinHashEnc = distinctiveBytes(32)
        let token = distinctiveBytes(48)          // IV ‖ encrypted 32-byte token
        let pinUvAuthParam = distinctiveBytes(32)
        var script = TraceScript()
        script.request(channel, ctap: 0x06, .map([1: 2, 2: 2]))
        script.response(channel, .map([1: sampleKeyAgreement]))
        script.request(channel, ctap: 0x06, .map([1: 2, 2: 3, 3: sampleKeyAgreement, 4: .byteString(pinUvAuthParam),
                                                  5: .byteString(newPinEnc)]))
        script.response(channel, nil)
        script.request(channel, ctap: 0x06, .map([1: 2, 2: 5, 3: sampleKeyAgreement, 6: .byteString(pinHashEnc)]))
        script.response(channel, .map([2: .byteString(token)]))
        script.finish()

        let file = try script.fileBytes()
        assertNoTrace(of: newPinEnc, in: file, "newPinEnc")
        assertNoTrace(of: pinHashEnc, in: file, "pinHashEnc")
        assertNoTrace(of: token, in: file, "pinUvAuthToken")
        // pinUvAuthParam is a MAC, not a secret: it stays for debugging.
        XCTAssertTrue(String(decoding: file, as: UTF8.self).contains(Hex.encode(Array(pinUvAuthParam.prefix(16)))))

        let redactions = script.records.compactMap(\.redactions).flatMap { $0 }
        XCTAssertEqual(redactions.map(\.field), ["clientPIN.newPinEnc", "clientPIN.pinHashEnc", "clientPIN.pinUvAuthToken"])
        XCTAssertEqual(redactions.map(\.length), [80, 32, 48])

        let contents = try TraceFile.parse(file)
        let text = TraceDecoder.text(TraceDecoder.decode(contents), header: contents.header)
        XCTAssertTrue(text.contains("authenticatorClientPIN (0x06) setPIN"), text)
        XCTAssertTrue(text.contains("5: <redacted 80 bytes>"), text)
        XCTAssertTrue(text.contains("6: <redacted 32 bytes>"), text)
        XCTAssertTrue(text.contains("{2: <redacted 48 bytes>}"), text)
    }

    func testHmacSecretSaltsOutputsCredBlobAndLargeBlobKeyAreRedacted() throws {
        let saltEnc = distinctiveBytes(80), saltAuth = distinctiveBytes(32)
        let output = distinctiveBytes(80), credBlob = distinctiveBytes(32), largeBlobKey = distinctiveBytes(32)
        let mcSaltEnc = distinctiveBytes(48), mcOutput = distinctiveBytes(48)
        var script = TraceScript()
        // makeCredential with hmac-secret-mc and credBlob in; largeBlobKey and hmac-secret-mc output back.
        script.request(channel, ctap: 0x01, .map([
            1: .byteString(Array(repeating: 0xCD, count: 32)), 2: .map(["id": "example.com"]),
            3: .map(["id": .byteString([1, 2, 3, 4])]), 4: .array([.map(["alg": -7, "type": "public-key"])]),
            6: .map(["credBlob": .byteString(credBlob), "hmac-secret": true,
                     "hmac-secret-mc": .map([1: sampleKeyAgreement, 2: .byteString(mcSaltEnc), 3: .byteString(saltAuth)])]),
        ]))
        let credentialID = distinctiveBytes(64)
        let extensionsOut = CBORValue.map(["hmac-secret": true, "hmac-secret-mc": .byteString(mcOutput)]).encoded()
        let mcAuthData = Array(repeating: 0xAB, count: 32) + [0xC5, 0, 0, 0, 1] + Array(repeating: 0, count: 16)
            + [0, 64] + credentialID + sampleKeyAgreement.encoded() + extensionsOut
        script.response(channel, .map([1: "none", 2: .byteString(mcAuthData), 3: .map([:]), 5: .byteString(largeBlobKey)]))
        // getAssertion with hmac-secret in, hmac-secret and credBlob outputs back.
        script.request(channel, ctap: 0x02, .map([
            1: "example.com", 2: .byteString(Array(repeating: 0xCD, count: 32)),
            4: .map(["hmac-secret": .map([1: sampleKeyAgreement, 2: .byteString(saltEnc), 3: .byteString(saltAuth), 4: 2])]),
        ]))
        let gaAuthData = Array(repeating: 0xAB, count: 32) + [0x81, 0, 0, 0, 2]
            + CBORValue.map(["credBlob": .byteString(credBlob), "hmac-secret": .byteString(output)]).encoded()
        script.response(channel, .map([1: .map(["id": .byteString(credentialID), "type": "public-key"]),
                                       2: .byteString(gaAuthData), 3: .byteString(distinctiveBytes(70)),
                                       7: .byteString(largeBlobKey)]))
        script.finish()

        let file = try script.fileBytes()
        for (secret, label) in [(saltEnc, "saltEnc"), (output, "hmac-secret output"), (credBlob, "credBlob"),
                                (largeBlobKey, "largeBlobKey"), (mcSaltEnc, "hmac-secret-mc saltEnc"),
                                (mcOutput, "hmac-secret-mc output")] {
            assertNoTrace(of: secret, in: file, label)
        }
        // Credential IDs are sealed blobs and stay: they are what one debugs.
        XCTAssertTrue(String(decoding: file, as: UTF8.self).contains(Hex.encode(Array(credentialID.prefix(16)))))
        let fields = Set(script.records.compactMap(\.redactions).flatMap { $0 }.map(\.field))
        XCTAssertEqual(fields, ["makeCredential.rp", "makeCredential.user", "getAssertion.rpId",
                                "makeCredential.extensions.credBlob", "makeCredential.extensions.hmac-secret-mc.saltEnc",
                                "makeCredential.authData.extensions.hmac-secret-mc", "makeCredential.largeBlobKey",
                                "getAssertion.extensions.hmac-secret.saltEnc", "getAssertion.authData.extensions.credBlob",
                                "getAssertion.authData.extensions.hmac-secret", "getAssertion.largeBlobKey"])

        let contents = try TraceFile.parse(file)
        let events = TraceDecoder.decode(contents)
        let assertion = try XCTUnwrap(events.last { $0.ctapStatus == "CTAP2_OK" })
        XCTAssertEqual(assertion.authData?.contains(#"extensions {"credBlob": <redacted 32 bytes>, "hmac-secret": <redacted 80 bytes>}"#),
                       true, assertion.authData ?? "")
    }

    /// A third party on the same device sends a getInfo on the channel of a getAssertion that
    /// waits for a touch. The key answers it CHANNEL_BUSY and never runs it, so the assertion's
    /// answer is still redacted as getAssertion's.
    func testABusyChannelsSpoofedRequestDoesNotChangeRedaction() throws {
        let largeBlobKey = distinctiveBytes(32)
        let output = distinctiveBytes(32)
        var script = TraceScript()
        script.request(channel, ctap: 0x02, .map([1: "example.com", 2: .byteString(Array(repeating: 0xCD, count: 32))]))
        script.send(.toKey, channel: channel, command: CTAPHIDCommand.cbor.rawValue, payload: [0x04])
        script.send(.fromKey, channel: channel, command: CTAPHIDCommand.error.rawValue, payload: [0x06])
        let authData = Array(repeating: 0xAB, count: 32) + [0x81, 0, 0, 0, 2]
            + CBORValue.map(["hmac-secret": .byteString(output)]).encoded()
        script.response(channel, .map([1: .map(["id": .byteString(distinctiveBytes(64)), "type": "public-key"]),
                                       2: .byteString(authData), 3: .byteString(distinctiveBytes(70)),
                                       7: .byteString(largeBlobKey)]))
        script.finish()
        let file = try script.fileBytes()
        assertNoTrace(of: largeBlobKey, in: file, "largeBlobKey")
        assertNoTrace(of: output, in: file, "hmac-secret output")
    }

    func testLargeBlobDataIsRedacted() throws {
        let blob = distinctiveBytes(300)
        var script = TraceScript()
        script.request(channel, ctap: 0x0C, .map([2: .byteString(blob), 3: 0, 4: 300]))
        script.response(channel, nil)
        script.request(channel, ctap: 0x0C, .map([1: 1024, 3: 0]))
        script.response(channel, .map([1: .byteString(blob)]))
        let file = try script.fileBytes()
        assertNoTrace(of: blob, in: file, "large blob")
    }

    /// A secret-bearing command whose CBOR cannot be walked is blanked whole: when in doubt, leave it out.
    func testUndecodableClientPINBodyIsBlankedWhole() throws {
        let pin = Array("123456".utf8) + distinctiveBytes(20)
        var script = TraceScript()
        script.send(.toKey, channel: channel, command: CTAPHIDCommand.cbor.rawValue, payload: [0x06, 0xA5, 0x05, 0x58, 0xFF] + pin)
        let redaction = try XCTUnwrap(script.records.first?.redactions?.first)
        XCTAssertEqual(redaction.field, "clientPIN (undecodable CBOR)")
        XCTAssertEqual(redaction.range, 1..<(5 + pin.count))
        assertNoTrace(of: pin, in: try script.fileBytes(), "undecodable PIN block")
    }

    func testResponseToAnUnseenRequestIsBlanked() throws {
        let token = distinctiveBytes(32)
        var script = TraceScript()
        script.response(channel, .map([2: .byteString(token)]))
        assertNoTrace(of: token, in: try script.fileBytes(), "token")
    }

    /// Reports of a message that never completes are withheld: their data could be a secret.
    func testUnfinishedMessagesAreWithheld() throws {
        let newPinEnc = distinctiveBytes(80)
        let payload = [0x06] + CBORValue.map([1: 2, 2: 3, 3: sampleKeyAgreement, 5: .byteString(newPinEnc)]).encoded()
        let reports = MessageFragmenter.reports(channel: channel, command: 0x10, payload: payload)
        XCTAssertGreaterThan(reports.count, 2)
        var recorder = TraceRecorder()
        var records: [TraceRecord] = []
        for (index, report) in reports.dropLast().enumerated() {
            records += recorder.record(report: report, direction: .toKey, connection: 3, time: UInt64(index))
        }
        XCTAssertTrue(records.isEmpty, "held until the message is whole")
        records += recorder.connectionClosed(3, time: 99)
        XCTAssertEqual(records.count, reports.count)   // the withheld reports and a note
        for (record, report) in zip(records.dropLast(), reports) {
            XCTAssertEqual(record.withheld, "connection closed mid-message")
            let headerSize = report[4] & 0x80 != 0 ? 7 : 5
            XCTAssertEqual(Array(record.report![..<headerSize]), Array(report[..<headerSize]), "the CTAPHID header stays")
            XCTAssertTrue(record.report![headerSize...].allSatisfy { $0 == 0 })
        }
        XCTAssertEqual(records.last?.note, "connection closed")

        // An initialization packet interrupting a message: the first is withheld, the second recorded.
        var interrupted = TraceRecorder()
        var out = interrupted.record(report: reports[0], direction: .toKey, connection: 1, time: 1)
        let ping = MessageFragmenter.reports(channel: channel, command: CTAPHIDCommand.ping.rawValue, payload: [1, 2, 3])[0]
        out += interrupted.record(report: ping, direction: .toKey, connection: 1, time: 2)
        XCTAssertEqual(out.map(\.withheld), ["interrupted message", nil])
        XCTAssertEqual(out.last?.report, ping)

        // A continuation with no message in progress.
        var stray = TraceRecorder()
        let withheld = stray.record(report: reports[1], direction: .toKey, connection: 1, time: 1)
        XCTAssertEqual(withheld.map(\.withheld), ["continuation without a message"])
        assertNoTrace(of: newPinEnc, in: try TraceScript(records: records + out + withheld).fileBytes(), "newPinEnc")
    }

    func testPaddingIsWrittenAsZero() {
        var report = MessageFragmenter.reports(channel: channel, command: CTAPHIDCommand.ping.rawValue, payload: [7, 7])[0]
        for index in 9..<64 { report[index] = 0xEE }   // a client that does not clear its buffer
        var recorder = TraceRecorder()
        let records = recorder.record(report: report, direction: .toKey, connection: 1, time: 5)
        XCTAssertEqual(records.first?.report, MessageFragmenter.reports(channel: channel, command: 0x01, payload: [7, 7])[0])
    }

    func testTraceFileRoundTripAndPrivacy() throws {
        var script = TraceScript()
        script.send(.toKey, channel: 0xFFFF_FFFF, command: CTAPHIDCommand.initialize.rawValue, payload: Array(1...8))
        script.records += script.recorder.droppedPacket(size: 65, connection: 1, time: 5)
        script.request(channel, ctap: 0x06, .map([1: 2, 2: 5, 3: sampleKeyAgreement, 6: .byteString(distinctiveBytes(32))]))
        let header = TraceHeader(started: "2025-01-01T00:00:00.000Z", time: 42, key: "k", transport: "socket:/tmp/k")
        let directory = try ShortTempDirectory()
        let path = directory.path + "/t.jsonl"
        // An existing world-readable file is made private before anything is written.
        FileManager.default.createFile(atPath: path, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644])
        let file = try TraceFile.create(path: path, header: header)
        file.write(script.records)
        file.close()
        var status = stat()
        XCTAssertEqual(stat(path, &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o600)
        let contents = try TraceFile.read(path: path)
        XCTAssertEqual(contents.header, header)
        XCTAssertEqual(contents.records, script.records)
        XCTAssertEqual(contents.truncatedLines, 0)

        // A key killed mid-write leaves a cut line at the end: skipped and counted.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes += Array(#"{"t":12,"dir":"in","co"#.utf8)
        let cut = try TraceFile.parse(bytes)
        XCTAssertEqual(cut.records, script.records)
        XCTAssertEqual(cut.truncatedLines, 1)

        XCTAssertThrowsError(try TraceFile.parse(Array("{\"hello\":1}\n".utf8)))
        let symlink = directory.path + "/link"
        XCTAssertEqual(Glibc.symlink(path, symlink), 0)
        XCTAssertThrowsError(try TraceFile.create(path: symlink, header: header), "symlinks are not followed")
    }
}

extension TraceScript {
    init(records: [TraceRecord]) {
        self.init()
        self.records = records
    }
}
