import Glibc
@testable import LinuxHID
import SystemIO
import XCTest

/// UHIDDevice against a fake kernel: one end of a SOCK_SEQPACKET socket pair,
/// which, like /dev/uhid, delivers one whole event per read in each direction.
final class UHIDDeviceTests: XCTestCase {
    private var kernel: Int32 = -1
    private var device: UHIDDevice!
    private let identity = UHIDDevice.Identity(
        name: "Latchkey test key", vendorID: 0x1209, productID: 0x0001, version: 2,
        country: 0, uniq: "serial-ß", phys: "latchkey-test")

    override func setUpWithError() throws {
        var pair: [Int32] = [-1, -1]
        let socketType = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, socketType, 0, &pair) == 0 else { throw Errno.current }
        kernel = pair[0]
        let flags = fcntl(pair[1], F_GETFL)
        XCTAssertEqual(fcntl(pair[1], F_SETFL, flags | O_NONBLOCK), 0)
        device = try UHIDDevice(device: FileDescriptor(owning: pair[1]), path: "/fake/uhid", identity: identity)
    }

    override func tearDown() {
        device = nil
        if kernel >= 0 { close(kernel) }
    }

    private func kernelReads(waitMilliseconds: Int32 = 500) throws -> UHIDEvent? {
        var entry = pollfd(fd: kernel, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, waitMilliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = recv(kernel, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }   // the device closed its end
        XCTAssertEqual(count, 4380, "every event is written as the full struct")
        return try UHIDEvent(decoding: Array(buffer[..<count]))
    }

    private func kernelWrites(_ event: UHIDEvent) {
        let bytes = event.encoded()
        XCTAssertEqual(send(kernel, bytes, bytes.count, 0), bytes.count)
    }

    /// What the device delivers within a short quiet period.
    private func deviceReads() throws -> [TransportEvent] {
        try pendingEvents(from: device, waitMilliseconds: 100)
    }

    func testCreatesTheDeviceWithCreate2OnBusUSB() throws {
        XCTAssertEqual(try kernelReads(), .create2(
            name: "Latchkey test key", phys: "latchkey-test", uniq: "serial-?", bus: 0x03,
            vendor: 0x1209, product: 0x0001, version: 2, country: 0,
            descriptor: UHIDDevice.fidoReportDescriptor))
    }

    /// `latchkey proxy` presents the real key's own descriptor (and IDs), not Latchkey's.
    func testAProxyCreatesTheDeviceWithTheRealKeysDescriptor() throws {
        var pair: [Int32] = [-1, -1]
        let socketType = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, socketType, 0, &pair) == 0 else { throw Errno.current }
        defer { close(pair[0]) }
        // A YubiKey 5's FIDO interface: the same collection with a vendor's extra output usage.
        let descriptor: [UInt8] = UHIDDevice.fidoReportDescriptor + [0x06, 0x00, 0xFF, 0x09, 0x01, 0xA1, 0x01, 0xC0]
        let identity = UHIDDevice.Identity(name: "YubiKey OTP+FIDO+CCID (Latchkey proxy of hidraw3)", vendorID: 0x1050,
                                           productID: 0x0407, uniq: "latchkey-proxy:hidraw3", phys: "latchkey-proxy/hidraw3")
        let proxy = try UHIDDevice(device: FileDescriptor(owning: pair[1]), path: "/fake/uhid", identity: identity,
                                   reportDescriptor: descriptor)
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = recv(pair[0], &buffer, buffer.count, 0)
        XCTAssertEqual(try UHIDEvent(decoding: Array(buffer[..<count])), .create2(
            name: identity.name, phys: identity.phys, uniq: identity.uniq, bus: 0x03, vendor: 0x1050, product: 0x0407,
            version: 0, country: 0, descriptor: descriptor))
        proxy.shutdown()
    }

    func testKernelEventsBecomeTransportEvents() throws {
        _ = try kernelReads()
        let report = KernelBytes.report(0x11)
        kernelWrites(.start(flags: 0))
        kernelWrites(.open)
        kernelWrites(.output(data: [0] + report, reportType: 1))
        kernelWrites(.output(data: Array(report.prefix(10)), reportType: 1))
        kernelWrites(.close)
        kernelWrites(.stop)
        XCTAssertEqual(try deviceReads(), [
            .deviceStarted, .connectionOpened(0), .report(report, from: 0),
            .droppedPacket(size: 10, from: 0), .connectionClosed(0), .deviceStopped,
        ])
        XCTAssertEqual(try deviceReads(), [], "nothing more: EAGAIN ends the read")
    }

    func testSendWritesInput2() throws {
        _ = try kernelReads()
        let report = KernelBytes.report(0x80)
        device.send(report, to: 0)
        XCTAssertEqual(try kernelReads(), .input2(data: report))
        device.send(report, to: 1)   // uhid has only connection 0
        XCTAssertNil(try kernelReads(waitMilliseconds: 20))
        XCTAssertEqual(device.lostReportCount, 0)
    }

    /// The kernel waits (with a timeout) for a reply to GET_REPORT and
    /// SET_REPORT; the FIDO descriptor has no such reports, so answer EIO.
    func testGetAndSetReportAreAnsweredWithEIO() throws {
        _ = try kernelReads()
        kernelWrites(.getReport(id: 41, reportNumber: 0, reportType: 0))
        XCTAssertEqual(try deviceReads(), [])
        XCTAssertEqual(try kernelReads(), .getReportReply(id: 41, error: UInt16(EIO), data: []))
        kernelWrites(.setReport(id: 42, reportNumber: 0, reportType: 0, data: [1, 2]))
        XCTAssertEqual(try deviceReads(), [])
        XCTAssertEqual(try kernelReads(), .setReportReply(id: 42, error: UInt16(EIO)))
    }

    func testMalformedAndUnknownEventsAreSkipped() throws {
        _ = try kernelReads()
        XCTAssertEqual(send(kernel, [6, 0, 0, 0, 1], 5, 0), 5)   // OUTPUT cut short
        kernelWrites(.unknown(type: 7))
        kernelWrites(.open)
        XCTAssertEqual(try deviceReads(), [.connectionOpened(0)])
    }

    /// Every event is handed over, in order, however many come back to back (the kernel's own
    /// queue holds 32; here the fake kernel writes 300 output reports).
    func testABurstOfReportsArrivesWholeAndInOrder() throws {
        _ = try kernelReads()
        let reports = (0..<300).map { KernelBytes.report(UInt8(truncatingIfNeeded: $0)) }
        let writer = Thread { [kernel] in
            for report in reports {
                let bytes = UHIDEvent.output(data: [0] + report, reportType: 1).encoded()
                _ = send(kernel, bytes, bytes.count, 0)   // blocks while the socket buffer is full
            }
        }
        writer.start()
        XCTAssertEqual(try collectEvents(from: device, count: reports.count, timeoutMilliseconds: 10_000),
                       reports.map { .report($0, from: 0) })
    }

    /// The hint that a message's continuation packets are still due.
    func testMessageFramingKnowsWhenMoreReportsAreDue() {
        func output(_ report: [UInt8]) -> [UInt8] { report }
        func initPacket(length: Int) -> [UInt8] {
            [0x11, 0x22, 0x33, 0x44, 0x81, UInt8(length >> 8), UInt8(length & 0xFF)] + [UInt8](repeating: 0, count: 57)
        }
        let continuation = [0x11, 0x22, 0x33, 0x44, 0x00] + [UInt8](repeating: 0, count: 59)
        var framing = MessageFraming()
        framing.observe(report: output(initPacket(length: 57)))
        XCTAssertFalse(framing.expectsMore, "57 bytes fit in the initialization packet")
        framing.observe(report: output(initPacket(length: 7609)))
        XCTAssertTrue(framing.expectsMore)
        for _ in 0..<127 { framing.observe(report: output(continuation)) }
        XCTAssertTrue(framing.expectsMore, "7609 bytes need 128 continuation packets")
        framing.observe(report: output(continuation))
        XCTAssertFalse(framing.expectsMore)
        framing.observe(report: [0x81, 0, 0])
        XCTAssertFalse(framing.expectsMore, "a packet that is not 64 bytes changes nothing")
    }

    /// A reply longer than the unpaced limit (32; 4 here, to stay inside a socketpair's buffer):
    /// that many at once, the rest one per 1 ms as `sendPending` is called; later replies queue
    /// behind it; the client closing drops what is left.
    func testLongRepliesArePacedForHidrawsBuffer() throws {
        final class Clock: @unchecked Sendable { var now: UInt64 = 1_000_000_000 }
        let clock = Clock()
        var pair: [Int32] = [-1, -1]
        let socketType = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, socketType, 0, &pair) == 0 else { throw Errno.current }
        let kernel = pair[0]
        defer { close(kernel) }
        XCTAssertEqual(fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK), 0)   // as /dev/uhid is opened
        let paced = try UHIDDevice(device: FileDescriptor(owning: pair[1]), path: "/fake/uhid", identity: identity,
                                   clock: { clock.now }, unpacedReports: 4)
        func kernelInputs() -> [[UInt8]] {
            var inputs: [[UInt8]] = []
            var buffer = [UInt8](repeating: 0, count: 8192)
            while true {
                var entry = pollfd(fd: kernel, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 20) == 1 else { return inputs }
                let count = recv(kernel, &buffer, buffer.count, 0)
                guard count > 0, let event = try? UHIDEvent(decoding: Array(buffer[..<count])) else { return inputs }
                if case let .input2(data) = event { inputs.append(data) }
            }
        }
        _ = kernelInputs()   // CREATE2
        let reply = (0..<10).map { KernelBytes.report(UInt8($0)) }
        paced.send(reports: Array(reply.prefix(4)), to: 0)
        XCTAssertEqual(kernelInputs(), Array(reply.prefix(4)), "a reply within the limit goes at once")
        XCTAssertNil(paced.pendingSendDeadline)

        paced.send(reports: reply, to: 0)
        XCTAssertEqual(kernelInputs(), Array(reply.prefix(4)))
        XCTAssertEqual(paced.pendingSendDeadline, clock.now + 1_000_000)
        paced.send(KernelBytes.report(0xF0), to: 0)   // queued behind the tail
        XCTAssertEqual(kernelInputs(), [])

        clock.now += 900_000
        paced.sendPending(nowNanoseconds: clock.now)
        XCTAssertEqual(kernelInputs(), [], "not due yet")
        clock.now += 100_000
        paced.sendPending(nowNanoseconds: clock.now)
        XCTAssertEqual(kernelInputs(), [reply[4]])
        clock.now += 2_000_000   // 2 ms later: 2 more are due
        paced.sendPending(nowNanoseconds: clock.now)
        XCTAssertEqual(kernelInputs(), Array(reply[5..<7]))
        clock.now += 5_000_000
        paced.sendPending(nowNanoseconds: clock.now)
        XCTAssertEqual(kernelInputs(), Array(reply[7...]) + [KernelBytes.report(0xF0)])
        XCTAssertNil(paced.pendingSendDeadline)

        paced.send(reports: reply, to: 0)
        XCTAssertEqual(kernelInputs().count, 4)
        let closeEvent = UHIDEvent.close.encoded()
        XCTAssertEqual(send(kernel, closeEvent, closeEvent.count, 0), closeEvent.count)
        XCTAssertEqual(try pendingEvents(from: paced, waitMilliseconds: 100), [.connectionClosed(0)])
        XCTAssertNil(paced.pendingSendDeadline, "nobody reads the rest")
        XCTAssertEqual(paced.lostReportCount, 0)
    }

    func testShutdownDestroysThenCloses() throws {
        _ = try kernelReads()
        device.shutdown()
        XCTAssertEqual(try kernelReads(), .destroy)
        XCTAssertEqual(device.pollDescriptors, [])
        device.shutdown()   // idempotent: nothing more is written
        XCTAssertNil(try kernelReads(waitMilliseconds: 20))
    }

    func testMissingUHIDNodeIsUnavailableAndTellsTheFix() {
        XCTAssertThrowsError(try UHIDDevice(path: "/nonexistent/uhid", identity: identity)) { error in
            XCTAssertEqual(error as? TransportError, .uhidUnavailable(path: "/nonexistent/uhid"))
            let message = (error as? TransportError)?.description ?? ""
            XCTAssertTrue(message.contains("sudo modprobe uhid"), message)
            XCTAssertTrue(message.contains("udev"), message)
            XCTAssertTrue(message.contains("--transport socket:"), message)
        }
    }

    func testPermissionDeniedMessageNamesTheBrokerAndTheGroup() {
        let message = TransportError.permissionDenied(path: "/dev/uhid").description
        XCTAssertTrue(message.contains("sudo systemctl enable --now latchkey-uhid-broker.socket"), message)
        XCTAssertTrue(message.contains("group latchkey"), message)
        XCTAssertTrue(message.contains("--transport socket:"), message)
    }
}
