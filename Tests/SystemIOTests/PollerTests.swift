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
