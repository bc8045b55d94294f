import Glibc
@testable import LinuxHID
import SystemIO
import XCTest

/// The socket transport for real, in a temporary directory
/// (docs/socket-transport.md is the contract each test is named after).
final class SocketTransportTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var path: String { directory.file("key.sock") }

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    /// Connects a client and waits for the transport to accept it.
    private func connect(to transport: SocketTransport) throws -> (SocketClient, TransportConnection) {
        let client = try SocketClient(path: path)
        let events = try collectEvents(from: transport, count: 1)
        guard case let .connectionOpened(connection)? = events.first, events.count == 1 else {
            XCTFail("expected one connectionOpened, got \(events)")
            throw TransportError.socketInUse(path: path)
        }
        return (client, connection)
    }

    func testSocketFileIsCreatedWithMode0600() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        XCTAssertEqual(transport.path, path)
        let mode = try XCTUnwrap(fileMode(path))
        XCTAssertEqual(mode & S_IFMT, S_IFSOCK)
        XCTAssertEqual(mode & 0o7777, 0o600)
    }

    func testStaleSocketFileIsReplaced() throws {
        // A socket file left behind by a key that died: bound, never listening now.
        let stale = try FileDescriptor.unixSocket(type: SOCK_SEQPACKET, nonBlocking: false)
        try stale.bind(to: UnixSocketAddress(path: path))
        stale.close()
        XCTAssertNotNil(fileMode(path))

        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (client, connection) = try connect(to: transport)
        XCTAssertEqual(connection, 1)
        client.close()
    }

    func testLiveSocketIsInUseAndKeepsWorking() throws {
        let first = try SocketTransport(path: path)
        defer { first.shutdown() }
        XCTAssertThrowsError(try SocketTransport(path: path)) { error in
            XCTAssertEqual(error as? TransportError, .socketInUse(path: path))
        }
        // The liveness probe was a real connection: the live key saw it come and go.
        XCTAssertEqual(try collectEvents(from: first, count: 2), [.connectionOpened(1), .connectionClosed(1)])
        let (client, connection) = try connect(to: first)
        try client.send(KernelBytes.report(1))
        XCTAssertEqual(try collectEvents(from: first, count: 1), [.report(KernelBytes.report(1), from: connection)])
    }

    /// Past its connection cap the key accepts a client and closes it at once: the client sees
    /// end of stream (not a hang in connect), and the clients already there keep working.
    func testAClientPastTheCapIsClosedAndTheOthersKeepWorking() throws {
        let transport = try SocketTransport(path: path, maximumConnections: 2)
        defer { transport.shutdown() }
        let (first, firstConnection) = try connect(to: transport)
        let (second, _) = try connect(to: transport)
        let third = try SocketClient(path: path)
        let events = try collectEvents(from: transport, count: 1)
        guard case .connectionRefused(let reason)? = events.first, events.count == 1 else {
            return XCTFail("expected one connectionRefused, got \(events)")
        }
        XCTAssertTrue(reason.contains("2 clients"), reason)
        XCTAssertThrowsError(try third.receive(timeoutMilliseconds: 2_000), "the key closed the third client")
        try first.send(KernelBytes.report(7))
        XCTAssertEqual(try collectEvents(from: transport, count: 1), [.report(KernelBytes.report(7), from: firstConnection)])
        second.close()
        XCTAssertEqual(try collectEvents(from: transport, count: 1), [.connectionClosed(2)])
        let (_, fourth) = try connect(to: transport)
        XCTAssertEqual(fourth, 3, "room again after a client left")
    }

    func testAFileThatIsNotASocketIsLeftAlone() throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        XCTAssertThrowsError(try SocketTransport(path: path)) { error in
            guard case let .system(_, errno, message) = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertEqual(errno, EADDRINUSE)
            XCTAssertTrue(message.contains("not a socket"), message)
        }
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data("keep me".utf8))
    }

    func testPathLongerThanSunPathIsAClearError() {
        let long = directory.file(String(repeating: "k", count: 120))
        XCTAssertThrowsError(try SocketTransport(path: long)) { error in
            guard case let .system(call, errno, message) = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertEqual(call, "bind")
            XCTAssertEqual(errno, ENAMETOOLONG)
            XCTAssertTrue(message.contains("107 bytes"), message)
        }
        XCTAssertThrowsError(try SocketClient(path: long))
    }

    /// "Many clients may be connected at once. Each connection behaves like
    /// its own open handle": own IDs, own reports, replies only to it.
    func testTwoClientsHaveTheirOwnConnections() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (alice, aliceID) = try connect(to: transport)
        let (bob, bobID) = try connect(to: transport)
        XCTAssertEqual([aliceID, bobID], [1, 2])
        XCTAssertEqual(transport.pollDescriptors.count, 3)

        try alice.send(KernelBytes.report(0xA0))
        try bob.send(KernelBytes.report(0xB0))
        let events = try collectEvents(from: transport, count: 2)
        XCTAssertEqual(Set(events.map { "\($0)" }), Set([
            "\(TransportEvent.report(KernelBytes.report(0xA0), from: aliceID))",
            "\(TransportEvent.report(KernelBytes.report(0xB0), from: bobID))",
        ]))

        transport.send(KernelBytes.report(0x2B), to: bobID)
        XCTAssertEqual(try bob.receive(timeoutMilliseconds: 1000), KernelBytes.report(0x2B))
        XCTAssertNil(try alice.receive(timeoutMilliseconds: 30), "a reply reaches only the addressed client")
        transport.send(KernelBytes.report(0x2A), to: aliceID)
        XCTAssertEqual(try alice.receive(timeoutMilliseconds: 1000), KernelBytes.report(0x2A))
        XCTAssertNil(try bob.receive(timeoutMilliseconds: 30))
    }

    /// "A packet of any other size from a client is dropped (and logged); it
    /// never crashes the key or affects other clients."
    func testWrongSizedPacketsAreDroppedAndTheConnectionKeepsWorking() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (client, connection) = try connect(to: transport)
        try client.send(Array(KernelBytes.report(1).prefix(63)))
        try client.send(KernelBytes.report(2) + [0xFF])
        try client.send([UInt8](repeating: 7, count: 1000))
        try client.send([])
        try client.send(KernelBytes.report(3))
        XCTAssertEqual(try collectEvents(from: transport, count: 5), [
            .droppedPacket(size: 63, from: connection),
            .droppedPacket(size: 65, from: connection),
            .droppedPacket(size: 1000, from: connection),
            .droppedPacket(size: 0, from: connection),
            .report(KernelBytes.report(3), from: connection),
        ])
        transport.send(KernelBytes.report(4), to: connection)
        XCTAssertEqual(try client.receive(timeoutMilliseconds: 1000), KernelBytes.report(4))
    }

    /// Fairness: a flooding client gets one receive per poll round, so a quiet client that
    /// becomes ready in the same round is read before the flood's next batch.
    func testAFloodingClientIsReadOneBatchAtATime() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (flooder, flooding) = try connect(to: transport)
        let (quiet, quietConnection) = try connect(to: transport)
        for index in 0..<(SocketTransport.packetsPerReceive * 4) {
            try flooder.send(KernelBytes.report(UInt8(index)))
        }
        try quiet.send(KernelBytes.report(0xAA))
        var ready = try Poller.wait(for: transport.pollDescriptors, timeoutMilliseconds: 1000)
        XCTAssertEqual(ready.count, 2, "both clients are readable")
        var rounds: [[TransportEvent]] = []
        while !ready.isEmpty, rounds.count < 10 {
            rounds.append(ready.flatMap { transport.readEvents(from: $0) })
            ready = try Poller.wait(for: transport.pollDescriptors, timeoutMilliseconds: 0)
        }
        XCTAssertEqual(rounds.first?.count, SocketTransport.packetsPerReceive + 1,
                       "the first round holds one batch from the flood and the quiet client's report")
        XCTAssertTrue(rounds.first?.contains(.report(KernelBytes.report(0xAA), from: quietConnection)) ?? false)
        XCTAssertTrue(rounds.dropFirst().allSatisfy { $0.count <= SocketTransport.maximumPacketsPerRead })
        XCTAssertEqual(rounds.flatMap { $0 }.filter { event in
            if case let .report(_, connection) = event { return connection == flooding }
            return false
        }.count, SocketTransport.packetsPerReceive * 4, "every flood packet is read, in later rounds")
    }

    /// Batched I/O (recvmmsg/sendmmsg) keeps the contract: every packet is its own report, in
    /// order, wrong sizes are still dropped one by one, across more packets than one batch holds.
    func testBatchesKeepOrderAndDropWrongSizesAcrossBatchBoundaries() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (client, connection) = try connect(to: transport)
        let count = SocketTransport.packetsPerReceive * 2 + 5
        var expected: [TransportEvent] = []
        for index in 0..<count {
            if index == SocketTransport.packetsPerReceive {
                try client.send(KernelBytes.report(0xEE) + [0xEE])   // 65 bytes, at a batch edge
                expected.append(.droppedPacket(size: 65, from: connection))
            }
            try client.send(KernelBytes.report(UInt8(index)))
            expected.append(.report(KernelBytes.report(UInt8(index)), from: connection))
        }
        XCTAssertEqual(try collectEvents(from: transport, count: expected.count), expected)

        let replies = (0..<20).map { KernelBytes.report(UInt8(100 + $0)) }
        transport.send(reports: replies, to: connection)
        var received: [[UInt8]] = []
        while received.count < replies.count, let packet = try client.receive(timeoutMilliseconds: 1000) {
            received.append(packet)
        }
        XCTAssertEqual(received, replies)
        XCTAssertEqual(transport.lostReportCount, 0)
    }

    /// SocketClient.send(reports:) batches equal-sized packets and still sends odd sizes as they
    /// are (rigs use it to test the key's size checks).
    func testClientBatchSendKeepsOrderAndOddSizes() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (client, connection) = try connect(to: transport)
        try client.send(reports: (0..<3).map { KernelBytes.report(UInt8($0)) })
        try client.send(reports: [KernelBytes.report(9), [1, 2, 3]])
        XCTAssertEqual(try collectEvents(from: transport, count: 5), [
            .report(KernelBytes.report(0), from: connection),
            .report(KernelBytes.report(1), from: connection),
            .report(KernelBytes.report(2), from: connection),
            .report(KernelBytes.report(9), from: connection),
            .droppedPacket(size: 3, from: connection),
        ])
    }

    /// "A client that disconnects mid-transaction cancels its pending request;
    /// the key stays up": the transport reports the close, others carry on.
    func testClientCloseIsReportedAndOthersCarryOn() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (leaving, leavingID) = try connect(to: transport)
        let (staying, stayingID) = try connect(to: transport)
        try leaving.send(KernelBytes.report(5))
        leaving.close()
        XCTAssertEqual(try collectEvents(from: transport, count: 2),
                       [.report(KernelBytes.report(5), from: leavingID), .connectionClosed(leavingID)])
        XCTAssertEqual(transport.pollDescriptors.count, 2)
        transport.send(KernelBytes.report(6), to: leavingID)   // gone: ignored
        try staying.send(KernelBytes.report(7))
        XCTAssertEqual(try collectEvents(from: transport, count: 1), [.report(KernelBytes.report(7), from: stayingID)])

        let (next, nextID) = try connect(to: transport)
        XCTAssertEqual(nextID, 3, "connection IDs are never reused")
        next.close()
    }

    /// send() never blocks: a client that does not read loses reports.
    func testAClientThatDoesNotReadNeverStallsTheKey() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        let (client, connection) = try connect(to: transport)
        for index in 0..<500 {
            transport.send(KernelBytes.report(UInt8(truncatingIfNeeded: index)), to: connection)
        }
        XCTAssertGreaterThan(transport.lostReportCount, 0)
        XCTAssertEqual(try client.receive(timeoutMilliseconds: 1000), KernelBytes.report(0), "the first ones were queued")
    }

    func testShutdownClosesClientsAndUnlinksThePath() throws {
        let transport = try SocketTransport(path: path)
        let (client, _) = try connect(to: transport)
        transport.shutdown()
        XCTAssertNil(fileMode(path))
        XCTAssertEqual(transport.pollDescriptors, [])
        XCTAssertThrowsError(try client.receive(timeoutMilliseconds: 1000)) { error in
            guard case let .system(_, errno, _) = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertEqual(errno, ECONNRESET)
        }
        transport.shutdown()   // idempotent
        XCTAssertThrowsError(try SocketClient(path: path))
    }

    func testShutdownLeavesAReplacementSocketAlone() throws {
        let transport = try SocketTransport(path: path)
        unlink(path)   // someone removed our file and another key took the path
        let other = try SocketTransport(path: path)
        transport.shutdown()
        XCTAssertNotNil(fileMode(path))
        other.shutdown()
        XCTAssertNil(fileMode(path))
    }

    func testReadEventsIgnoresForeignDescriptors() throws {
        let transport = try SocketTransport(path: path)
        defer { transport.shutdown() }
        XCTAssertEqual(transport.readEvents(from: 0), [])
    }

    func testClientWithoutAKeyGetsAClearError() {
        XCTAssertThrowsError(try SocketClient(path: path)) { error in
            let message = (error as? TransportError)?.description ?? ""
            XCTAssertTrue(message.contains("no key is listening"), message)
        }
    }
}
