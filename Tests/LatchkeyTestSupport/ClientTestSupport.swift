// Shared by the test targets of the platform side and the CLI (FIDOClientTests, CLITests):
// fake report links, a manual clock, CTAPHID helpers, an in-process key, scratch directories.
import Authenticator
import CTAPHID
import FIDOClient
import Foundation
import KeyService
import LinuxHID
import Presence
import SystemIO
@_exported import TestScratch


/// A monotonic clock the test moves by hand (nanoseconds).
public final class ManualClock: @unchecked Sendable {
    public init() {}
    public var nanoseconds: UInt64 = 1_000_000_000
    public func advance(milliseconds: UInt64) { nanoseconds += milliseconds * 1_000_000 }
    public var read: () -> UInt64 { { self.nanoseconds } }
}

/// An in-memory device on the client side of a report link. Whatever the
/// client sends goes to `onSend`, which returns the reports the device answers
/// with; `receiveReport` hands them out in order, and is "silent" (nil, as after
/// a timeout) when there are none — unless `onIdle` makes one up.
public final class FakeLink: ClientReportTransport {
    public let path: String
    public var sent: [[UInt8]] = []
    public var pending: [[UInt8]] = []
    public var onSend: ([UInt8]) -> [[UInt8]]
    public var onIdle: (() -> [UInt8]?)?
    public var receiveCalls = 0
    public var clock: ManualClock?
    public var failure: TransportError?

    public init(path: String = "fake", onSend: @escaping ([UInt8]) -> [[UInt8]] = { _ in [] }) {
        self.path = path
        self.onSend = onSend
    }

    public func sendReport(_ report: [UInt8]) throws(TransportError) {
        if let failure { throw failure }
        sent.append(report)
        pending += onSend(report)
    }

    public func receiveReport(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]? {
        receiveCalls += 1
        clock?.advance(milliseconds: 10)
        if !pending.isEmpty { return pending.removeFirst() }
        return onIdle?()
    }

    /// A device driven by the real CTAPHID state machine: INIT, PING, WINK,
    /// LOCK answered by it; CBOR requests by `cbor` (request → response bytes).
    public static func stateMachine(configuration: CTAPHIDConfiguration = CTAPHIDConfiguration(channelIDSeed: 0x0102_0304),
                             cbor: @escaping ([UInt8]) -> [UInt8] = { _ in [0x01] }) -> (FakeLink, Counter) {
        var machine = CTAPHIDStateMachine(configuration: configuration)
        let winks = Counter()
        let link = FakeLink()
        link.onSend = { report in
            var replies: [[UInt8]] = []
            var actions = machine.receive(report: report, from: 0, now: 1_000_000)
            while !actions.isEmpty {
                let action = actions.removeFirst()
                switch action {
                case .send(let reply, _):
                    replies.append(reply)
                case .dispatch(let request):
                    actions += machine.complete(transactionID: request.transactionID, response: cbor(request.payload),
                                                now: 2_000_000)
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

public final class Counter: @unchecked Sendable {
    public var value = 0
}

/// Reports of one message, as a device would send them.
public func reports(channel: UInt32, command: CTAPHIDCommand, payload: [UInt8]) -> [[UInt8]] {
    MessageFragmenter.reports(channel: channel, command: command.rawValue, payload: payload)
}

/// The channel and payload of an INIT request the client sent (broadcast, 8-byte nonce).
public func initNonce(of report: [UInt8]) -> [UInt8]? {
    guard case let .initialization(channel, command, _, data)? = CTAPHIDPacket(report: report),
          channel == CTAPHIDPacket.broadcastChannel, command == CTAPHIDCommand.initialize.rawValue else { return nil }
    return Array(data.prefix(8))
}

/// An INIT response payload: nonce, channel, protocol 2, version 5.4.3, capabilities.
public func initResponse(nonce: [UInt8], channel: UInt32, capabilities: UInt8 = 0x05) -> [UInt8] {
    nonce + [UInt8(channel >> 24), UInt8(channel >> 16 & 0xFF), UInt8(channel >> 8 & 0xFF), UInt8(channel & 0xFF),
             2, 5, 4, 3, capabilities]
}

/// JSON text parsed back with Foundation (so the renderer's output is proven valid JSON).
public func parseJSON(_ text: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    guard let dictionary = object as? [String: Any] else { throw CocoaError(.propertyListReadCorrupt) }
    return dictionary
}

/// A directory under /tmp, removed by `remove()`.
public struct ScratchDirectory {
    public let path: String

    public init() throws {
        var template = Array("/tmp/lk-svc-XXXXXX".utf8CString)
        guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = String(cString: result)
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A fake /sys (see LinuxHIDTests' FakeSysfs for the layout): hidraw class links
/// to hidraw devices whose `device` link is the HID device.
public struct FakeSysfsTree {
    public let root: String

    public init(root: String) { self.root = root }

    public func addHID(node: Int, hidDirectory: String, uevent: String, descriptor: [UInt8]) throws {
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

    /// A key `serve` runs: as this user (`uid`), unless a test says otherwise; `vendorProduct`
    /// other than Latchkey's makes a device that only claims the name.
    public func addLatchkey(node: Int, name: String, uid: UInt32 = getuid(), vendorProduct: String = "00001209:00004C4B") throws {
        try addHID(node: node, hidDirectory: "devices/virtual/misc/uhid/0003:1209:4C4B.000\(node + 1)",
                   uevent: "HID_ID=0003:\(vendorProduct)\nHID_NAME=Latchkey \(name)\nHID_UNIQ=latchkey:\(name)"
                       + "\nHID_PHYS=latchkey/uid=\(uid)/\(name)",
                   descriptor: UHIDDevice.fidoReportDescriptor)
    }
}

/// An authenticator in this process on an in-memory store, reachable as a device.
public final class InProcessKey: @unchecked Sendable {
    public let store = InMemoryCredentialStore()
    public let authenticator: Authenticator

    /// `builtInUV`: the key verifies users itself, as `serve --uv auto` does.
    public init(builtInUV: Bool = false) throws {
        let logger = Logger(level: .error)
        authenticator = try KeySpecification().makeAuthenticator(
            store: store, presence: AutoPresence(logger: logger),
            userVerification: builtInUV ? AutoVerification(logger: logger) : nil)
    }

    /// A direct CTAP2 link.
    public func link() -> InProcessLink {
        let authenticator = self.authenticator
        return InProcessLink(label: "test key") { authenticator.handleCTAP2($0, context: RequestContext(channel: 1)) }
    }

    /// A CTAP2 link through the real CTAPHID state machine and the CTAPHID client.
    public func hidLink() throws -> CTAPHIDLink {
        let authenticator = self.authenticator
        let (fake, _) = FakeLink.stateMachine { request in
            authenticator.handleCTAP2(request, context: RequestContext(channel: 1))
        }
        return try CTAPHIDLink(client: CTAPHIDClient(link: fake), label: "test key (CTAPHID)")
    }

    /// For `CommandIO.openDevice`: every selection reaches this key.
    public var opener: @Sendable (DeviceSelection) throws(DeviceError) -> any CTAP2Link {
        { [self] _ throws(DeviceError) in
            do { return try self.hidLink() } catch let error as DeviceError { throw error } catch { throw .transport("\(error)") }
        }
    }
}


public func hexBytes(_ string: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = string.startIndex
    while index < string.endIndex {
        let next = string.index(index, offsetBy: 2)
        bytes.append(UInt8(string[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
