import CTAPHID
import Foundation
import LinuxHID
import Service
import XCTest

/// A monotonic clock the test moves by hand (nanoseconds).
final class ManualClock: @unchecked Sendable {
    var nanoseconds: UInt64 = 1_000_000_000
    func advance(milliseconds: UInt64) { nanoseconds += milliseconds * 1_000_000 }
    var read: () -> UInt64 { { self.nanoseconds } }
}

/// An in-memory device on the client side of a report link. Whatever the
/// client sends goes to `onSend`, which returns the reports the device answers
/// with; `receiveReport` hands them out in order, and is "silent" (nil, as after
/// a timeout) when there are none — unless `onIdle` makes one up.
final class FakeLink: ClientReportTransport {
    let path: String
    var sent: [[UInt8]] = []
    var pending: [[UInt8]] = []
    var onSend: ([UInt8]) -> [[UInt8]]
    var onIdle: (() -> [UInt8]?)?
    var receiveCalls = 0
    var clock: ManualClock?
    var failure: TransportError?

    init(path: String = "fake", onSend: @escaping ([UInt8]) -> [[UInt8]] = { _ in [] }) {
        self.path = path
        self.onSend = onSend
    }

    func sendReport(_ report: [UInt8]) throws(TransportError) {
        if let failure { throw failure }
        sent.append(report)
        pending += onSend(report)
    }

    func receiveReport(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]? {
        receiveCalls += 1
        clock?.advance(milliseconds: 10)
        if !pending.isEmpty { return pending.removeFirst() }
        return onIdle?()
    }

    /// A device driven by the real CTAPHID state machine: INIT, PING, WINK,
    /// LOCK answered by it; CBOR requests by `cbor` (request → response bytes).
    static func stateMachine(configuration: CTAPHIDConfiguration = CTAPHIDConfiguration(channelIDSeed: 0x0102_0304),
                             cbor: @escaping ([UInt8]) -> [UInt8] = { _ in [0x01] }) -> (FakeLink, Counter) {
        var machine = CTAPHIDStateMachine(configuration: configuration)
        let winks = Counter()
        let link = FakeLink()
        link.onSend = { report in
            var replies: [[UInt8]] = []
            var actions = machine.receive(report: report, from: 0, now: MonotonicInstant(milliseconds: 1))
            while !actions.isEmpty {
                let action = actions.removeFirst()
                switch action {
                case .send(let reply, _):
                    replies.append(reply)
                case .dispatch(let request):
                    actions += machine.complete(transactionID: request.transactionID, response: cbor(request.payload),
                                                now: MonotonicInstant(milliseconds: 2))
                case .wink:
                    winks.value += 1
                case .cancelRequest:
                    break
                }
            }
            return replies
        }
        return (link, winks)
    }
}

final class Counter: @unchecked Sendable {
    var value = 0
}

/// Reports of one message, as a device would send them.
func reports(channel: UInt32, command: CTAPHIDCommand, payload: [UInt8]) -> [[UInt8]] {
    MessageFragmenter.reports(channel: channel, command: command.rawValue, payload: payload)
}

/// The channel and payload of an INIT request the client sent (broadcast, 8-byte nonce).
func initNonce(of report: [UInt8]) -> [UInt8]? {
    guard case let .initialization(channel, command, _, data)? = CTAPHIDPacket(report: report),
          channel == CTAPHIDPacket.broadcastChannel, command == CTAPHIDCommand.initialize.rawValue else { return nil }
    return Array(data.prefix(8))
}

/// An INIT response payload: nonce, channel, protocol 2, version 5.4.3, capabilities.
func initResponse(nonce: [UInt8], channel: UInt32, capabilities: UInt8 = 0x05) -> [UInt8] {
    nonce + [UInt8(channel >> 24), UInt8(channel >> 16 & 0xFF), UInt8(channel >> 8 & 0xFF), UInt8(channel & 0xFF),
             2, 5, 4, 3, capabilities]
}

/// JSON text parsed back with Foundation (so the renderer's output is proven valid JSON).
func parseJSON(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try XCTUnwrap(object as? [String: Any], file: file, line: line)
}

/// A directory under /tmp, removed by `remove()`.
struct ScratchDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/lk-svc-XXXXXX".utf8CString)
        guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = String(cString: result)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A fake /sys (see LinuxHIDTests' FakeSysfs for the layout): hidraw class links
/// to hidraw devices whose `device` link is the HID device.
struct FakeSysfsTree {
    let root: String

    func addHID(node: Int, hidDirectory: String, uevent: String, descriptor: [UInt8]) throws {
        let manager = FileManager.default
        let hid = root + "/" + hidDirectory
        let hidraw = hid + "/hidraw/hidraw\(node)"
        try manager.createDirectory(atPath: hidraw, withIntermediateDirectories: true)
        try (uevent + "\n").write(toFile: hid + "/uevent", atomically: false, encoding: .utf8)
        _ = manager.createFile(atPath: hid + "/report_descriptor", contents: Data(descriptor))
        try "DEVNAME=hidraw\(node)\n".write(toFile: hidraw + "/uevent", atomically: false, encoding: .utf8)
        try manager.createSymbolicLink(atPath: hidraw + "/device", withDestinationPath: "../..")
        try manager.createDirectory(atPath: root + "/class/hidraw", withIntermediateDirectories: true)
        try manager.createSymbolicLink(atPath: root + "/class/hidraw/hidraw\(node)",
                                       withDestinationPath: "../../" + hidDirectory + "/hidraw/hidraw\(node)")
    }

    func addLatchkey(node: Int, name: String) throws {
        try addHID(node: node, hidDirectory: "devices/virtual/misc/uhid/0003:1209:4C4B.000\(node + 1)",
                   uevent: "HID_ID=0003:00001209:00004C4B\nHID_NAME=Latchkey \(name)\nHID_UNIQ=latchkey:\(name)",
                   descriptor: UHIDDevice.fidoReportDescriptor)
    }
}
