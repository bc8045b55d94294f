import CBOR
import CTAPHID
import Foundation
import LatchkeyTestSupport
@testable import Trace
import XCTest

/// `latchkey proxy`'s trace: it learns each channel's request from the client's reports alone,
/// and no other client on the device can make it write a secret out.
final class ProxyTraceRecorderTests: XCTestCase {
    let channel: UInt32 = 0x0102_0304

    struct ProxyScript {
        var recorder = ProxyTraceRecorder()
        var records: [TraceRecord] = []
        var time: UInt64 = 1_000_000

        mutating func client(_ channel: UInt32, command: UInt8, _ payload: [UInt8]) {
            for report in MessageFragmenter.reports(channel: channel, command: command, payload: payload) {
                time += 100
                records += recorder.clientReport(report, time: time)
            }
        }

        mutating func key(_ channel: UInt32, command: UInt8, _ payload: [UInt8]) {
            for report in MessageFragmenter.reports(channel: channel, command: command, payload: payload) {
                time += 100
                records += recorder.keyReport(report, time: time)
            }
        }

        mutating func cbor(_ channel: UInt32, ctap command: UInt8, _ body: CBORValue?) {
            client(channel, command: CTAPHIDCommand.cbor.rawValue, [command] + (body?.encoded() ?? []))
        }

        func file() throws -> [UInt8] {
            let directory = try ShortTempDirectory()
            let path = directory.path + "/proxy.jsonl"
            let file = try TraceFile.create(path: path, header: TraceHeader(started: "2026-12-03T00:00:00.000Z", time: 1_000_000))
            file.write(records)
            file.close()
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
    }

    func getAssertionResponse(output: [UInt8], largeBlobKey: [UInt8]) -> [UInt8] {
        let authData = Array(repeating: 0xAB, count: 32) + [0x81, 0, 0, 0, 2]
            + CBORValue.map(["hmac-secret": .byteString(output)]).encoded()
        return [0x00] + CBORValue.map([1: .map(["id": .byteString(distinctiveBytes(64)), "type": "public-key"]),
                                       2: .byteString(authData), 3: .byteString(distinctiveBytes(70)),
                                       7: .byteString(largeBlobKey)]).encoded()
    }

    func testAPINTokenThroughTheProxyIsRedactedAsTheKeysOwnTraceWouldBe() throws {
        let token = distinctiveBytes(48)
        var script = ProxyScript()
        script.cbor(channel, ctap: 0x06, .map([1: 2, 2: 9, 3: sampleKeyAgreement, 6: .byteString(distinctiveBytes(16)), 9: 4]))
        script.key(channel, command: CTAPHIDCommand.keepalive.rawValue, [1])
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, [0x00] + CBORValue.map([2: .byteString(token)]).encoded())
        script.records += script.recorder.finish()
        let file = try script.file()
        assertNoTrace(of: token, in: file, "pinUvAuthToken")
        let events = TraceDecoder.decode(try TraceFile.parse(file))
        XCTAssertEqual(events.filter { $0.kind == .message }.count, 2, "request and response, decoded")
        XCTAssertTrue(events.contains { $0.redactions?.contains { $0.field == "clientPIN.pinUvAuthToken" } ?? false })
    }

    /// Another client names the channel of a getAssertion waiting for a touch, twice, and gets
    /// CHANNEL_BUSY each time: the answer is still redacted as the getAssertion's.
    func testAnotherClientsRequestsOnABusyChannelDoNotChangeRedaction() throws {
        let output = distinctiveBytes(32), largeBlobKey = distinctiveBytes(32)
        var script = ProxyScript()
        script.cbor(channel, ctap: 0x02, .map([1: "example.com", 2: .byteString(Array(repeating: 0xCD, count: 32))]))
        for _ in 0..<2 {
            script.cbor(channel, ctap: 0x04, nil)
            script.key(channel, command: CTAPHIDCommand.error.rawValue, [CTAPHIDError.channelBusy.rawValue])
            script.key(channel, command: CTAPHIDCommand.keepalive.rawValue, [2])
        }
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, getAssertionResponse(output: output, largeBlobKey: largeBlobKey))
        // The next request on the channel is its own again (getInfo: nothing to blank).
        script.cbor(channel, ctap: 0x04, nil)
        let aaguid = distinctiveBytes(16)
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, [0x00] + CBORValue.map([1: ["FIDO_2_1"], 3: .byteString(aaguid)]).encoded())
        script.records += script.recorder.finish()
        let file = try script.file()
        assertNoTrace(of: largeBlobKey, in: file, "largeBlobKey")
        assertNoTrace(of: output, in: file, "hmac-secret output")
        XCTAssertTrue(String(decoding: file, as: UTF8.self).contains(Hex.encode(aaguid)), "a getInfo answer is shown")
    }

    /// An INIT on a channel with a request outstanding: a key that does not abort may still answer
    /// it, so the channel is in doubt (answers blanked) until it has answered everything.
    func testInitOnABusyChannelPutsItInDoubtUntilEverythingIsAnswered() throws {
        let output = distinctiveBytes(32), largeBlobKey = distinctiveBytes(32), aaguid = distinctiveBytes(16), later = distinctiveBytes(16)
        var script = ProxyScript()
        script.cbor(channel, ctap: 0x02, .map([1: "example.com", 2: .byteString(Array(repeating: 0xCD, count: 32))]))
        script.client(channel, command: CTAPHIDCommand.initialize.rawValue, distinctiveBytes(8))
        script.key(channel, command: CTAPHIDCommand.initialize.rawValue, distinctiveBytes(17))
        script.cbor(channel, ctap: 0x04, nil)
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, [0x00] + CBORValue.map([3: .byteString(aaguid)]).encoded())
        // The key did not abort: the getAssertion's answer comes now.
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, getAssertionResponse(output: output, largeBlobKey: largeBlobKey))
        // Everything answered: the next exchange is known again.
        script.cbor(channel, ctap: 0x04, nil)
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, [0x00] + CBORValue.map([3: .byteString(later)]).encoded())
        script.records += script.recorder.finish()
        let file = try script.file()
        assertNoTrace(of: largeBlobKey, in: file, "largeBlobKey")
        assertNoTrace(of: output, in: file, "hmac-secret output")
        assertNoTrace(of: aaguid, in: file, "an answer while in doubt")
        XCTAssertTrue(String(decoding: file, as: UTF8.self).contains(Hex.encode(later)))
    }

    /// The key refuses the *first* request on a channel (CHANNEL_BUSY: it is busy elsewhere), and
    /// the victim's request follows on that channel: the refusal leaves the channel in doubt, so
    /// the victim's answer is never taken for the refused request's.
    func testABusyAnswerToTheFirstRequestLeavesTheChannelInDoubt() throws {
        let output = distinctiveBytes(32), largeBlobKey = distinctiveBytes(32)
        var script = ProxyScript()
        script.cbor(channel, ctap: 0x04, nil)
        script.key(channel, command: CTAPHIDCommand.error.rawValue, [CTAPHIDError.channelBusy.rawValue])
        script.cbor(channel, ctap: 0x02, .map([1: "example.com", 2: .byteString(Array(repeating: 0xCD, count: 32))]))
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, getAssertionResponse(output: output, largeBlobKey: largeBlobKey))
        script.records += script.recorder.finish()
        let file = try script.file()
        assertNoTrace(of: largeBlobKey, in: file, "largeBlobKey")
        assertNoTrace(of: output, in: file, "hmac-secret output")
    }

    /// Another client fills the proxy's channel table (1,024 channels with requests outstanding):
    /// nothing is forgotten, and a channel beyond the table is blanked, never trusted.
    func testAFullChannelTableForgetsNothing() throws {
        let output = distinctiveBytes(32), largeBlobKey = distinctiveBytes(32)
        var script = ProxyScript()
        script.cbor(channel, ctap: 0x02, .map([1: "example.com", 2: .byteString(Array(repeating: 0xCD, count: 32))]))
        for other in 0..<UInt32(ProxyTraceRecorder.maximumChannels + 8) {
            script.cbor(0x5000_0000 + other, ctap: 0x04, nil)
        }
        script.cbor(channel, ctap: 0x04, nil)   // on the victim's channel, while its request runs
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, getAssertionResponse(output: output, largeBlobKey: largeBlobKey))
        let beyond: UInt32 = 0x6000_0000
        script.cbor(beyond, ctap: 0x02, .map([1: "example.com", 2: .byteString(Array(repeating: 0xCD, count: 32))]))
        let secondOutput = distinctiveBytes(32), secondKey = distinctiveBytes(32)
        script.key(beyond, command: CTAPHIDCommand.cbor.rawValue, getAssertionResponse(output: secondOutput, largeBlobKey: secondKey))
        script.records += script.recorder.finish()
        let file = try script.file()
        for (secret, name) in [(largeBlobKey, "largeBlobKey"), (output, "output"), (secondKey, "largeBlobKey beyond the table"),
                               (secondOutput, "output beyond the table")] {
            assertNoTrace(of: secret, in: file, name)
        }
    }

    /// An answer to a request the proxy never saw (a program talking to the real node directly)
    /// is blanked, whatever the channel's last request was.
    func testAnAnswerToARequestTheProxyNeverSawIsBlanked() throws {
        let token = distinctiveBytes(48)
        var script = ProxyScript()
        script.cbor(channel, ctap: 0x04, nil)
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, [0x00] + CBORValue.map([1: ["FIDO_2_1"]]).encoded())
        script.key(channel, command: CTAPHIDCommand.cbor.rawValue, [0x00] + CBORValue.map([2: .byteString(token)]).encoded())
        script.records += script.recorder.finish()
        assertNoTrace(of: token, in: try script.file(), "an unasked-for answer")
    }
}
