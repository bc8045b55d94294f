import Foundation
import Glibc
import SystemIO
import XCTest

final class PollerTests: XCTestCase {
    private func makePipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        return (fds[0], fds[1])
    }

    func testReturnsOnlyReadableDescriptors() throws {
        let first = makePipe()
        let second = makePipe()
        defer { [first.read, first.write, second.read, second.write].forEach { _ = close($0) } }
        XCTAssertEqual(try Poller.wait(for: [first.read, second.read], timeoutMilliseconds: 0), [])
        XCTAssertEqual(write(second.write, "x", 1), 1)
        XCTAssertEqual(try Poller.wait(for: [first.read, second.read], timeoutMilliseconds: 1000), [second.read])
    }

    func testHangUpCountsAsReady() throws {
        let channel = makePipe()
        defer { close(channel.read) }
        close(channel.write)
        XCTAssertEqual(try Poller.wait(for: [channel.read], timeoutMilliseconds: 1000), [channel.read])
    }

    func testTimesOut() throws {
        let channel = makePipe()
        defer { close(channel.read); close(channel.write) }
        let start = Date()
        XCTAssertEqual(try Poller.wait(for: [channel.read, -1], timeoutMilliseconds: 40), [])
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.035)
    }

    func testPollSetAnswersAsPollerAndIsReusedWithOtherDescriptors() throws {
        let first = makePipe()
        let second = makePipe()
        let extra = makePipe()
        defer { [first, second, extra].forEach { close($0.read); close($0.write) } }
        var set = PollSet()
        XCTAssertEqual(try set.wait(for: [first.read, second.read], and: extra.read, timeoutMilliseconds: 0), [])
        XCTAssertEqual(write(extra.write, "x", 1), 1)
        XCTAssertEqual(write(first.write, "x", 1), 1)
        let ready = try set.wait(for: [first.read, second.read], and: extra.read, timeoutMilliseconds: 1000)
        XCTAssertEqual(ready, [first.read, extra.read])
        // A second wait with fewer descriptors leaves the first answer as it was (its own copy).
        XCTAssertEqual(try set.wait(for: [second.read], and: extra.read, timeoutMilliseconds: 1000), [extra.read])
        XCTAssertEqual(ready, [first.read, extra.read])
    }
}

final class ReceivedPacketsTests: XCTestCase {
    func testABatchKeepsEachPacketsBytesAndTrueSizeAndIsReusedByTheNextReceive() throws {
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair), 0)
        let reader = FileDescriptor(owning: pair[0])
        defer { reader.close(); close(pair[1]) }
        for packet in [[UInt8](repeating: 1, count: 4), [], [UInt8](repeating: 2, count: 9)] {
            XCTAssertEqual(send(pair[1], packet, packet.count, 0), packet.count)
        }
        var batch = ReceivedPackets(capacity: 6, slots: 2)
        XCTAssertEqual(try reader.receivePackets(into: &batch, flags: Int32(MSG_DONTWAIT)), 2)
        XCTAssertEqual(batch.bytes(at: 0), [1, 1, 1, 1])
        XCTAssertEqual(batch.size(at: 1), 0)
        XCTAssertEqual(batch.takeNext()?.bytes, [1, 1, 1, 1])
        // The next receive starts the batch again: the packet cut to the capacity, its true size beside it.
        XCTAssertEqual(try reader.receivePackets(into: &batch, flags: Int32(MSG_DONTWAIT)), 1)
        XCTAssertEqual(batch.count, 1)
        let cut = try XCTUnwrap(batch.takeNext())
        XCTAssertEqual(cut.bytes, [UInt8](repeating: 2, count: 6))
        XCTAssertEqual(cut.size, 9)
        XCTAssertNil(batch.takeNext())
        XCTAssertThrowsError(try reader.receivePackets(into: &batch, flags: Int32(MSG_DONTWAIT))) {
            XCTAssertEqual($0 as? Errno, .wouldBlock)
        }
        XCTAssertEqual(batch.count, 0)
    }
}

final class WakeupEventTests: XCTestCase {
    func testSignalMakesReadableAndDrainResets() throws {
        let wakeup = try WakeupEvent()
        XCTAssertGreaterThanOrEqual(wakeup.descriptor, 0)
        XCTAssertEqual(try Poller.wait(for: [wakeup.descriptor], timeoutMilliseconds: 0), [])
        wakeup.signal()
        wakeup.signal()
        XCTAssertEqual(try Poller.wait(for: [wakeup.descriptor], timeoutMilliseconds: 0), [wakeup.descriptor])
        wakeup.drain()
        XCTAssertEqual(try Poller.wait(for: [wakeup.descriptor], timeoutMilliseconds: 0), [])
        wakeup.drain()   // draining when not signalled does not block
    }

    func testAnotherThreadWakesAWaitingPoll() throws {
        let wakeup = try WakeupEvent()
        let thread = Thread { [wakeup] in
            usleep(20_000)
            wakeup.signal()
        }
        thread.start()
        XCTAssertEqual(try Poller.wait(for: [wakeup.descriptor], timeoutMilliseconds: 5000), [wakeup.descriptor])
        wakeup.drain()
    }

    func testDescriptorIsCloseOnExecAndNonBlocking() throws {
        let wakeup = try WakeupEvent()
        XCTAssertNotEqual(fcntl(wakeup.descriptor, F_GETFD) & FD_CLOEXEC, 0)
        XCTAssertNotEqual(fcntl(wakeup.descriptor, F_GETFL) & O_NONBLOCK, 0)
    }
}
