@testable import CLI
import CTAP
import CTAPHID
import FIDOClient
import Foundation
import KeyService
import LatchkeyTestSupport
import XCTest

final class ProbeReportTests: XCTestCase {
    static let getInfoResponse = [UInt8(0x00)] + SampleAuthenticatorInfo.full.cborValue.encoded()

    func probe(_ link: FakeLink, pings: Int = 5) -> ProbeReport {
        let clock = ManualClock()
        link.clock = clock
        let client = CTAPHIDClient(link: link, replyTimeoutMilliseconds: 50, clock: clock.read)
        return ProbeReport.run(client: client, target: "fake key", transport: "test", pings: pings, clock: clock.read)
    }

    func testAWorkingKey() throws {
        let (link, winks) = FakeLink.stateMachine(cbor: { $0 == [0x04] ? Self.getInfoResponse : [0x01] })
        let report = probe(link)
        XCTAssertNil(report.failure)
        XCTAssertTrue(report.succeeded)
        XCTAssertEqual(report.initResponse?.channel, 0x0102_0304)
        XCTAssertEqual(report.ping?.count, 5)
        XCTAssertEqual(report.ping?.payloadBytes, 57, "one report per PING")
        // The fake clock moves 10 ms per receive: one report back per PING.
        XCTAssertEqual(report.ping?.minimumMicroseconds, 10_000)
        XCTAssertEqual(report.ping?.p99Microseconds, 10_000)
        XCTAssertEqual(report.echo?.bytes, 7609)
        XCTAssertNil(report.echo?.firstMismatch)
        XCTAssertEqual(report.echo?.reports, 129)
        XCTAssertEqual(report.winked, true)
        XCTAssertEqual(winks.value, 1)
        XCTAssertEqual(report.getInfo, SampleAuthenticatorInfo.full.cborValue)

        let text = report.text
        for expected in ["Probing fake key", "CTAPHID INIT      channel 0x01020304, protocol 2, device version 1.0.0",
                         "capabilities WINK, LOCK, CBOR (0x07); CTAP1/U2F MSG supported",
                         "PING              5 round trips of 57 bytes: min 10000 µs, median 10000 µs, p99 10000 µs",
                         "echoed byte for byte", "WINK              ok", "authenticatorGetInfo",
                         "aaguid                            d4a016d1-783d-4c7e-a521-dd2196f32a99"] {
            XCTAssertTrue(text.contains(expected), "missing \(expected) in\n\(text)")
        }
        XCTAssertFalse(text.contains("FAILED"))

        let json = try parseJSON(report.json.rendered)
        XCTAssertEqual(json["ok"] as? Bool, true)
        XCTAssertTrue(json["error"] is NSNull)
        let initialization = try XCTUnwrap(json["init"] as? [String: Any])
        XCTAssertEqual(initialization["protocolVersion"] as? Int, 2)
        XCTAssertEqual(initialization["capabilityNames"] as? [String], ["WINK", "LOCK", "CBOR"])
        XCTAssertEqual((json["echo"] as? [String: Any])?["matched"] as? Bool, true)
        XCTAssertEqual((json["getInfo"] as? [String: Any])?["maxMsgSize"] as? Int, 7609)
    }

    func testEchoSizeCanBeChosenOrSkipped() {
        let (link, _) = FakeLink.stateMachine(cbor: { _ in Self.getInfoResponse })
        let clock = ManualClock()
        link.clock = clock
        let client = CTAPHIDClient(link: link, replyTimeoutMilliseconds: 50, clock: clock.read)
        let small = ProbeReport.run(client: client, target: "k", transport: "test", pings: 0, echoBytes: 1500, clock: clock.read)
        XCTAssertEqual(small.echo?.bytes, 1500)
        XCTAssertEqual(small.echo?.reports, 26)
        XCTAssertTrue(small.text.contains("PING 1500 B"), small.text)
        let none = ProbeReport.run(client: client, target: "k", transport: "test", pings: 0, echoBytes: 0, clock: clock.read)
        XCTAssertNil(none.echo)
        XCTAssertTrue(none.succeeded)
    }

    func testMedianAndP99AreNearestRank() {
        let samples = Array(1...200)
        XCTAssertEqual(ProbeReport.nearestRank(samples, percent: 50), 100)
        XCTAssertEqual(ProbeReport.nearestRank(samples, percent: 99), 198)
        XCTAssertEqual(ProbeReport.nearestRank([7], percent: 99), 7)
    }

    func testACorruptedEchoIsFound() throws {
        let (link, _) = FakeLink.stateMachine(cbor: { _ in Self.getInfoResponse })
        let honest = link.onSend
        link.onSend = { report in
            var replies = honest(report)
            if replies.count > 100 { replies[100][20] ^= 0xFF }   // flip a byte deep in the long echo
            return replies
        }
        let report = probe(link)
        let mismatch = 57 + 99 * 59 + (20 - 5)
        XCTAssertEqual(report.echo?.firstMismatch, mismatch)
        XCTAssertEqual(report.failure, "CTAPHID PING of 7609 bytes: the echo differs from byte \(mismatch) on")
        XCTAssertEqual(report.winked, true, "the other steps still run")
        XCTAssertEqual(report.failures.count, 1)
        XCTAssertTrue(report.text.contains("FAILED  CTAPHID PING of 7609 bytes"))
        XCTAssertEqual(try parseJSON(report.json.rendered)["ok"] as? Bool, false)
    }

    /// A device behind a short queue (a uhid key whose reader is slow): report 40 of a message is
    /// lost when the reports come back to back, not when they are paced. The probe says so, and
    /// still checks the echo.
    func testABurstLosingDeviceIsAWarningWithAPacedEcho() throws {
        let (link, _) = FakeLink.stateMachine(cbor: { _ in Self.getInfoResponse })
        let honest = link.onSend
        var messageStart = Date()
        var index = 0
        link.onSend = { report in
            if case .initialization? = CTAPHIDPacket(report: report) { messageStart = Date(); index = 0 }
            index += 1
            if index == 40 && Date().timeIntervalSince(messageStart) < 0.02 { return [] }   // "Output queue is full"
            return honest(report)
        }
        let report = probe(link, pings: 2)
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.echo?.paced, true)
        XCTAssertNil(report.echo?.firstMismatch)
        XCTAssertEqual(report.warnings.count, 1)
        XCTAssertTrue(report.warnings[0].contains("CTAPHID_ERROR ERR_INVALID_SEQ (0x04)"), report.warnings[0])
        XCTAssertTrue(report.warnings[0].contains("loses reports in a burst"), report.warnings[0])
        XCTAssertTrue(report.text.contains("only with a pause between reports"), report.text)
        XCTAssertTrue(report.text.contains("WARNING  the 7609-byte echo failed"), report.text)
        XCTAssertNotNil(report.getInfo, "the probe goes on")
        let json = try parseJSON(report.json.rendered)
        XCTAssertEqual((json["warnings"] as? [String])?.count, 1)
        XCTAssertEqual((json["echo"] as? [String: Any])?["paced"] as? Bool, true)
    }

    func testADeviceThatLosesReportsEvenPacedFails() {
        let (link, _) = FakeLink.stateMachine()
        let honest = link.onSend
        var index = 0
        link.onSend = { report in
            if case .initialization? = CTAPHIDPacket(report: report) { index = 0 }
            index += 1
            return index == 40 ? [] : honest(report)
        }
        let report = probe(link, pings: 0)
        XCTAssertNil(report.echo)
        XCTAssertEqual(report.winked, true)
        XCTAssertEqual(report.failure, "CTAPHID PING of 7609 bytes: the device answered CTAPHID_PING with CTAPHID_ERROR "
            + "ERR_INVALID_SEQ (0x04); sent again with a 1 ms pause between reports: the device answered CTAPHID_PING "
            + "with CTAPHID_ERROR ERR_INVALID_SEQ (0x04)")
    }

    /// Over hidraw, a reply that arrives with a gap was lost on its way back (hidraw's 64-report
    /// buffer overflowed): the failure says so.
    func testAReplyThatLosesReportsOnTheWayBackIsExplained() {
        let (link, _) = FakeLink.stateMachine(cbor: { _ in Self.getInfoResponse })
        let honest = link.onSend
        link.onSend = { report in
            var replies = honest(report)
            if replies.count == 129 { replies.remove(at: 80) }
            return replies
        }
        let clock = ManualClock()
        link.clock = clock
        let client = CTAPHIDClient(link: link, replyTimeoutMilliseconds: 50, clock: clock.read)
        let report = ProbeReport.run(client: client, target: "/dev/hidraw0", transport: "hidraw", pings: 1, clock: clock.read)
        XCTAssertEqual(report.failures.count, 1, "\(report.failures)")
        XCTAssertTrue(report.failure?.contains("the reply lost reports on the way back") ?? false, report.failure ?? "")
        XCTAssertEqual(report.winked, true)
        XCTAssertNotNil(report.getInfo)
    }

    func testAU2FOnlyKeySkipsGetInfoAndWink() {
        let configuration = CTAPHIDConfiguration(capabilities: 0, channelIDSeed: 9)
        let (link, winks) = FakeLink.stateMachine(configuration: configuration)
        let report = probe(link, pings: 1)
        XCTAssertTrue(report.succeeded)
        XCTAssertEqual(report.winked, false)
        XCTAssertEqual(winks.value, 0)
        XCTAssertNil(report.getInfo)
        XCTAssertTrue(report.text.contains("getInfo           skipped: the device does not announce the CBOR capability"))
        XCTAssertTrue(report.text.contains("WINK              skipped"))
    }

    func testASilentDeviceFailsAtInitWithADiagnosis() throws {
        let report = probe(FakeLink())
        XCTAssertNil(report.initResponse)
        XCTAssertTrue(report.failure?.hasPrefix("CTAPHID INIT: no reply to CTAPHID_INIT within 50 ms: the device is silent") ?? false,
                      report.failure ?? "")
        let json = try parseJSON(report.json.rendered)
        XCTAssertTrue(json["init"] is NSNull)
        XCTAssertTrue((json["error"] as? String)?.contains("silent") ?? false)
    }

    func testAGetInfoErrorStatusIsReported() {
        let (link, _) = FakeLink.stateMachine(cbor: { _ in [0x27] })
        let report = probe(link, pings: 0)
        XCTAssertNil(report.ping)
        XCTAssertEqual(report.failure, "authenticatorGetInfo: getInfo failed: the device answered CTAP2_ERR_OPERATION_DENIED (0x27)")
    }

    func testWinkCommandCore() {
        let (link, winks) = FakeLink.stateMachine()
        let client = CTAPHIDClient(link: link, replyTimeoutMilliseconds: 50)
        XCTAssertEqual(WinkCommand.wink(client: client, label: "/dev/hidraw0 (Latchkey main)"),
                       .success("Winked /dev/hidraw0 (Latchkey main)."))
        XCTAssertEqual(winks.value, 1)

        let (plain, _) = FakeLink.stateMachine(configuration: CTAPHIDConfiguration(capabilities: 0x04, channelIDSeed: 3))
        let result = WinkCommand.wink(client: CTAPHIDClient(link: plain, replyTimeoutMilliseconds: 50), label: "k")
        XCTAssertEqual(result, .failure(.init(message: "k does not support WINK (its INIT capabilities: CBOR)")))
    }
}
