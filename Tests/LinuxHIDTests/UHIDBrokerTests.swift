import Foundation
import Glibc
@testable import LinuxHID
import SystemIO
import XCTest

/// The uhid broker's rules (UHIDBrokerPolicy) and its loop (UHIDBroker) with a key connected
/// through a real SOCK_SEQPACKET listener, and a fake kernel: /dev/uhid is one end of a socket
/// pair per device, which delivers one whole event a read as uhid does.
final class UHIDBrokerTests: XCTestCase {
    let fido = UHIDDevice.fidoReportDescriptor

    func create2(uniq: String = "latchkey:main", phys: String = "latchkey/uid=0/main", vendor: UInt32 = 0x1209,
                 product: UInt32 = 0x4C4B, bus: UInt16 = 3, descriptor: [UInt8]? = nil) -> [UInt8] {
        UHIDEvent.create2(name: "Latchkey main", phys: phys, uniq: uniq, bus: bus, vendor: vendor, product: product,
                          version: 0x100, country: 0, descriptor: descriptor ?? fido).encoded()
    }

    // MARK: - Rules

    /// The phys (and so the hidraw node's owner, by udev/70-latchkey.rules) is the connecting
    /// user's, whatever the client wrote: a client claiming root gets its own uid.
    func testCreateIsStampedWithTheClientsUID() throws {
        let (event, name) = try UHIDBrokerPolicy.create(from: create2(phys: "latchkey/uid=0/main"), uid: 1000)
        XCTAssertEqual(name, "main")
        XCTAssertEqual(try UHIDEvent(decoding: event), .create2(name: "Latchkey main", phys: "latchkey/uid=1000/main",
                                                                 uniq: "latchkey:main", bus: 3, vendor: 0x1209, product: 0x4C4B,
                                                                 version: 0x100, country: 0, descriptor: fido))
        // The device's version and country are Latchkey's too, whatever the client wrote.
        var other = create2()
        if case let .create2(name, phys, uniq, bus, vendor, product, _, _, descriptor) = try UHIDEvent(decoding: other) {
            other = UHIDEvent.create2(name: name, phys: phys, uniq: uniq, bus: bus, vendor: vendor, product: product,
                                      version: 0xBEEF, country: 33, descriptor: descriptor).encoded()
        }
        XCTAssertEqual(try UHIDBrokerPolicy.create(from: other, uid: 1000).event, event)
    }

    /// Subordinate uids (/etc/subuid's ranges, a container's users) get no keys: one person has
    /// thousands, each of which would get its own 128. Directory users outside them are served.
    func testSubordinateUIDsAreRefused() {
        let ranges = UHIDBrokerPolicy.subordinateRanges(subuid: "alice:100000:65536\nbob:165536:65536\nbroken\nzero:5:0\n")
        XCTAssertEqual(ranges, [100_000...165_535, 165_536...231_071])
        XCTAssertTrue(UHIDBrokerPolicy.admits(uid: 0, subordinate: ranges))
        XCTAssertTrue(UHIDBrokerPolicy.admits(uid: 1000, subordinate: ranges))
        XCTAssertTrue(UHIDBrokerPolicy.admits(uid: 300_000, subordinate: ranges), "a directory (sssd) user")
        XCTAssertFalse(UHIDBrokerPolicy.admits(uid: 100_000, subordinate: ranges))
        XCTAssertFalse(UHIDBrokerPolicy.admits(uid: 231_071, subordinate: ranges))
    }

    func testAfterTheCreateOnlyInputAndRepliesPass() throws {
        let input = UHIDEvent.input2(data: Array(repeating: 7, count: 64))
        XCTAssertEqual(try UHIDBrokerPolicy.relay(input.encoded()), input.encoded())
        XCTAssertNoThrow(try UHIDBrokerPolicy.relay(UHIDEvent.getReportReply(id: 3, error: 5, data: []).encoded()))
        XCTAssertNoThrow(try UHIDBrokerPolicy.relay(UHIDEvent.setReportReply(id: 3, error: 5).encoded()))
        for event in [UHIDEvent.destroy, .create2(name: "x", phys: "y", uniq: "latchkey:x", bus: 3, vendor: 0x1209,
                                                  product: 0x4C4B, version: 0, country: 0, descriptor: fido),
                      .output(data: [1], reportType: 1), .start(flags: 0), .unknown(type: 99)] {
            XCTAssertThrowsError(try UHIDBrokerPolicy.relay(event.encoded()), "\(event)")
        }
        // Only what was decoded is written: trailing bytes of the client's do not reach the kernel.
        var padded = input.encoded()
        padded[4_300] = 0xAA
        XCTAssertEqual(try UHIDBrokerPolicy.relay(padded), input.encoded())
    }

    // MARK: - The loop

    final class FakeKernel: @unchecked Sendable {
        var ends: [Int32] = []   // the kernel's end of each device the broker opened
        func open() throws(Errno) -> FileDescriptor {
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                throw Errno.current
            }
            let flags = fcntl(pair[1], F_GETFL)
            _ = fcntl(pair[1], F_SETFL, flags | O_NONBLOCK)
            ends.append(pair[0])
            return FileDescriptor(owning: pair[1])
        }
        func read(_ end: Int32, waitMilliseconds: Int32 = 0) -> UHIDEvent?? {
            var entry = pollfd(fd: end, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, waitMilliseconds) == 1 else { return .some(nil) }   // nothing yet
            var buffer = [UInt8](repeating: 0, count: 8192)
            let count = recv(end, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return nil }   // closed: the device is destroyed
            return try? UHIDEvent(decoding: Array(buffer[..<count]))
        }
        func write(_ end: Int32, _ event: UHIDEvent) {
            let bytes = event.encoded()
            _ = send(end, bytes, bytes.count, 0)
        }
    }

    var scratch: TemporaryDirectory!
    var kernel: FakeKernel!
    var broker: UHIDBroker!
    var socketPath: String!
    var listener: FileDescriptor!

    override func setUpWithError() throws {
        scratch = try TemporaryDirectory()
        kernel = FakeKernel()
        try startBroker(socket: "uhid.socket")
    }

    /// A broker with `limits` listening on SCRATCH/`socket` (`socketPath`, `listener`), whose
    /// /dev/uhid is the fake kernel.
    func startBroker(socket: String, limits: UHIDBroker.Limits = UHIDBroker.Limits()) throws {
        socketPath = scratch.path + "/" + socket
        let listener = try FileDescriptor.unixSocket(type: SOCK_SEQPACKET, nonBlocking: true)
        self.listener = listener
        try listener.bind(to: UnixSocketAddress(path: socketPath))
        try listener.listen(backlog: 8)
        let kernel = self.kernel!
        broker = UHIDBroker(listener: listener, openDevice: { () throws(Errno) -> FileDescriptor in try kernel.open() },
                            logger: Logger(level: .error, sink: { _ in }), limits: limits)
    }

    override func tearDown() {
        broker = nil
        for end in kernel.ends { close(end) }
        scratch.remove()
    }

    /// Turns the broker's loop until `condition` holds (or a few seconds pass).
    func turn(until condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(5)
        while !condition() && Date() < deadline { broker.turn(timeoutMilliseconds: 20) }
    }

    /// A key through the broker (UHIDDevice's own code path), and its device's kernel end.
    func brokeredKey(name: String = "main") throws -> (UHIDDevice, Int32) {
        let connection = try XCTUnwrap(UHIDDevice.connectToBroker(socketPath))
        let key = try UHIDDevice(device: connection, path: socketPath, identity: .latchkey(name: name, uid: 0), brokered: true)
        turn { kernel.ends.count == 1 }
        return (key, try XCTUnwrap(kernel.ends.last))
    }

    func testAKeyThroughTheBrokerIsCreatedAsItsUserAndTalksBothWays() throws {
        let (key, end) = try brokeredKey()
        // The key said uid 0 (as root would); the broker wrote this process's uid.
        guard case let .create2(_, phys, uniq, _, _, _, _, _, _)?? = kernel.read(end, waitMilliseconds: 500) else {
            return XCTFail("no CREATE2 reached the kernel")
        }
        XCTAssertEqual(phys, "latchkey/uid=\(getuid())/main")
        XCTAssertEqual(uniq, "latchkey:main")
        XCTAssertEqual(broker.devicesByUser, [getuid(): 1])

        // The kernel's events reach the key: a client opens the node and writes a report.
        kernel.write(end, .open)
        kernel.write(end, .output(data: [0] + Array(repeating: 9, count: 64), reportType: 1))
        var seen: [TransportEvent] = []
        let deadline = Date().addingTimeInterval(5)
        while seen.count < 2 && Date() < deadline {
            broker.turn(timeoutMilliseconds: 20)
            seen += key.pollDescriptors.flatMap { key.readEvents(from: $0) }
        }
        XCTAssertEqual(seen, [.connectionOpened(0), .report(Array(repeating: 9, count: 64), from: 0)])

        // The key's reply reaches the kernel as UHID_INPUT2.
        key.send(Array(repeating: 4, count: 64), to: 0)
        var reply: UHIDEvent?
        turn {
            if case let event?? = kernel.read(end) { reply = event }
            return reply != nil
        }
        XCTAssertEqual(reply, .input2(data: Array(repeating: 4, count: 64)))

        // The key stops: no DESTROY is sent through the broker; the connection closing destroys it.
        key.shutdown()
        var closed = false
        turn {
            if case nil = kernel.read(end) { closed = true }
            return closed
        }
        XCTAssertTrue(closed, "the device outlived its key")
        XCTAssertEqual(broker.devicesByUser, [:])
    }

    /// A client that sends what only a creator may (a second CREATE2, a DESTROY) loses its
    /// connection and its device; the key learns its device is gone (it connects again, at most
    /// five times a minute, and then gives up: a lost transport, not polled again).
    func testAClientBreakingTheRulesLosesItsDevice() throws {
        let (key, end) = try brokeredKey()
        _ = kernel.read(end, waitMilliseconds: 500)   // the CREATE2
        let socket = try XCTUnwrap(key.pollDescriptors.first)
        let destroy = UHIDEvent.destroy.encoded()
        XCTAssertEqual(Glibc.send(socket, destroy, destroy.count, 0), destroy.count)
        var closed = false
        turn {
            if case nil = kernel.read(end) { closed = true }
            return closed
        }
        XCTAssertTrue(closed, "a DESTROY from the client must close the device, not reach the kernel as one")
        var events: [TransportEvent] = []
        let deadline = Date().addingTimeInterval(5)
        while events.isEmpty && Date() < deadline {
            events = key.pollDescriptors.flatMap { key.readEvents(from: $0) }
            usleep(10_000)
        }
        XCTAssertEqual(events.first, .connectionClosed(0), "the key did not learn: \(events)")
        // The same refusal again and again: five reconnects, then the transport is lost for good.
        var lost = false
        let giveUp = Date().addingTimeInterval(10)
        while !lost && Date() < giveUp {
            broker.turn(timeoutMilliseconds: 10)
            if let socket = key.pollDescriptors.first { _ = Glibc.send(socket, destroy, destroy.count, Int32(MSG_DONTWAIT)) }
            broker.turn(timeoutMilliseconds: 10)
            for event in key.pollDescriptors.flatMap({ key.readEvents(from: $0) }) {
                if case .transportLost = event { lost = true }
            }
        }
        XCTAssertTrue(lost, "the key reconnected without end")
        XCTAssertTrue(key.pollDescriptors.isEmpty, "a lost transport is not polled again")
        XCTAssertLessThanOrEqual(kernel.ends.count, 1 + UHIDDevice.maximumReconnects)
    }

    /// systemd restarts the broker but keeps its socket: every connection closes, and the key
    /// connects again at once, makes its device anew (its clients start over, as after a replug),
    /// and the new broker creates it stamped as before. It does not loop when refused.
    func testAKeySurvivesABrokerRestartWhileItsSocketStays() throws {
        let (key, firstEnd) = try brokeredKey()
        _ = kernel.read(firstEnd, waitMilliseconds: 500)   // the first CREATE2
        broker.run { true }   // the broker stops: every connection (and device) goes
        var events: [TransportEvent] = []
        let deadline = Date().addingTimeInterval(5)
        while !events.contains(where: { if case .transportRestored = $0 { true } else { false } }) && Date() < deadline {
            events += key.pollDescriptors.flatMap { key.readEvents(from: $0) }
            usleep(10_000)
        }
        XCTAssertEqual(events.first, .connectionClosed(0), "\(events)")
        guard events.count == 2, case .transportRestored = events[1] else { return XCTFail("\(events)") }
        // The new broker, on the socket systemd kept, takes the waiting connection.
        let kernel = self.kernel!
        broker = UHIDBroker(listener: listener, openDevice: { () throws(Errno) -> FileDescriptor in try kernel.open() },
                            logger: Logger(level: .error, sink: { _ in }))
        turn { kernel.ends.count == 2 }
        guard case let .create2(_, phys, _, _, _, _, _, _, _)?? = kernel.read(kernel.ends[1], waitMilliseconds: 500) else {
            return XCTFail("the key made no device on the new broker")
        }
        XCTAssertEqual(phys, "latchkey/uid=\(getuid())/main")
        // With nothing listening, the end is for good: transportLost, no reconnect loop.
        broker.run { true }
        try FileSystem.remove(socketPath)
        events = []
        let second = Date().addingTimeInterval(5)
        while events.isEmpty && Date() < second {
            events += key.pollDescriptors.flatMap { key.readEvents(from: $0) }
            usleep(10_000)
        }
        guard case .transportLost? = events.last else { return XCTFail("\(events)") }
    }

    /// A connection that never sends its CREATE2 is closed after the deadline, so idle
    /// connections cannot hold the broker's 1,024 places.
    func testAConnectionThatNeverCreatesIsClosed() throws {
        var limits = UHIDBroker.Limits()
        limits.createWithinNanoseconds = 200_000_000
        try startBroker(socket: "idle.socket", limits: limits)
        let idle = try XCTUnwrap(UHIDDevice.connectToBroker(socketPath))
        turn { broker.connectionCount == 1 }
        XCTAssertEqual(broker.connectionCount, 1)
        let started = Date()
        turn { broker.connectionCount == 0 }
        XCTAssertEqual(broker.connectionCount, 0, "an idle connection is held past its deadline")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.1)
        var byte: UInt8 = 0
        XCTAssertEqual(recv(idle.rawValue, &byte, 1, 0), 0, "the idle client sees end of stream")
        // A key that creates at once is not affected.
        let (key, _) = try brokeredKey()
        for _ in 0..<30 { broker.turn(timeoutMilliseconds: 10) }
        XCTAssertEqual(broker.devicesByUser, [getuid(): 1])
        withExtendedLifetime(key) {}
    }

    /// Another user cannot claim someone else's uid, and one user's keys are bounded.
    func testKeysPerUserAreBounded() throws {
        var limits = UHIDBroker.Limits()
        limits.devicesPerUser = 2
        try startBroker(socket: "limited.socket", limits: limits)
        let first = try brokeredKey(name: "one")
        let second = try XCTUnwrap(UHIDDevice.connectToBroker(socketPath))
        let secondKey = try UHIDDevice(device: second, path: socketPath, identity: .latchkey(name: "two", uid: 0), brokered: true)
        turn { kernel.ends.count == 2 }
        let third = try XCTUnwrap(UHIDDevice.connectToBroker(socketPath))
        _ = try? UHIDDevice(device: third, path: socketPath, identity: .latchkey(name: "three", uid: 0), brokered: true)
        for _ in 0..<20 { broker.turn(timeoutMilliseconds: 10) }
        XCTAssertEqual(kernel.ends.count, 2, "a third key of the same user was created")
        XCTAssertEqual(broker.devicesByUser, [getuid(): 2])
        _ = (first, secondKey)
    }
}
