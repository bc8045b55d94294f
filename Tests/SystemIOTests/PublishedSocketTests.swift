import Foundation
import Glibc
@testable import SystemIO
import XCTest

/// Sockets that appear at their path only once they accept (issue 34, finding 9).
final class PublishedSocketTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "published-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        XCTAssertEqual(mkdir(directory, 0o700), 0)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func entries() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    func testPublishesListeningPrivateSocketAndRemovesOnlyItsOwn() throws {
        let path = directory + "/k.sock"
        let socket = try PublishedSocket.listen(at: path, type: SOCK_STREAM, backlog: 4, nonBlocking: true)
        XCTAssertEqual(entries(), ["k.sock"], "no temporary name is left behind")
        let status = try FileSystem.linkStatus(path)
        XCTAssertEqual(status.st_mode & S_IFMT, S_IFSOCK)
        XCTAssertEqual(status.st_mode & 0o7777, 0o600)
        let client = try FileDescriptor.unixSocket(type: SOCK_STREAM, nonBlocking: false)
        try client.connect(to: UnixSocketAddress(path: path))
        XCTAssertEqual(try client.peerCredentials().uid, getuid())
        XCTAssertEqual(try client.peerCredentials().pid, getpid())
        XCTAssertTrue(client.peerIsTrusted())

        // A second socket on a live path is refused and leaves the first in place.
        XCTAssertThrowsError(try PublishedSocket.listen(at: path, type: SOCK_STREAM, backlog: 4, nonBlocking: true)) {
            XCTAssertEqual($0 as? PublishedSocket.Failure, .inUse)
        }
        XCTAssertTrue(socket.isStillPublished)
        XCTAssertEqual(entries(), ["k.sock"])

        // Once it is gone (closed, not unlinked: a killed key), the file is stale and replaced.
        socket.descriptor.close()
        let replacement = try PublishedSocket.listen(at: path, type: SOCK_STREAM, backlog: 4, nonBlocking: true)
        XCTAssertFalse(socket.isStillPublished)
        socket.unpublish()   // not its file any more: left alone
        XCTAssertTrue(replacement.isStillPublished)
        replacement.unpublish()
        XCTAssertEqual(entries(), [])
    }

    func testRefusesWhatIsNotAStaleSocket() throws {
        let file = directory + "/file"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("keep".utf8)))
        XCTAssertThrowsError(try PublishedSocket.listen(at: file, type: SOCK_SEQPACKET, backlog: 4, nonBlocking: true)) {
            XCTAssertEqual($0 as? PublishedSocket.Failure, .notASocket)
        }
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), "keep")
        XCTAssertThrowsError(try PublishedSocket.listen(at: directory + "/none/k.sock", type: SOCK_SEQPACKET, backlog: 4,
                                                        nonBlocking: true)) {
            XCTAssertEqual($0 as? PublishedSocket.Failure, .bind(.noSuchFileOrDirectory))
        }
        XCTAssertEqual(entries(), ["file"])
    }

    /// The finding: a client that connects the moment the path appears was sometimes refused
    /// (bind, chmod, then listen). Here a loop of starts and stops races a client that connects
    /// as soon as it sees the file; every connect must be accepted.
    func testPathAppearsOnlyWhenAccepting() throws {
        let path = directory + "/race.sock"
        let rounds = 300
        let done = Atomic(false)
        let refused = Atomic(0)
        let connected = Atomic(0)
        let finished = DispatchSemaphore(value: 0)
        let watcher = Thread {
            defer { finished.signal() }
            while !done.load() {
                guard let seen = try? FileSystem.linkStatus(path),
                      let client = try? FileDescriptor.unixSocket(type: SOCK_SEQPACKET, nonBlocking: true) else { continue }
                do throws(Errno) {
                    try client.connect(to: UnixSocketAddress(path: path))
                    connected.increment()
                } catch where error == .connectionRefused {
                    // A socket stopped while this connect ran refuses too (the stop below unlinks,
                    // then closes): that is no failure. Only a refusal by the socket still published
                    // at the path — the same file after the refusal as before — counts.
                    if let now = try? FileSystem.linkStatus(path), now.st_ino == seen.st_ino, now.st_dev == seen.st_dev {
                        refused.increment()
                    }
                } catch {}
                client.close()
            }
        }
        watcher.start()
        for _ in 0..<rounds {
            let socket = try PublishedSocket.listen(at: path, type: SOCK_SEQPACKET, backlog: 64, nonBlocking: true)
            usleep(200)
            socket.unpublish()   // unlink first, then close: no refusal from a socket on its way out
            socket.descriptor.close()
        }
        done.store(true)
        finished.wait()
        XCTAssertEqual(refused.load(), 0, "a client was refused by a socket whose path had appeared")
        XCTAssertGreaterThan(connected.load(), 0, "the watcher never saw the socket: the test tested nothing")
    }
}

/// A tiny lock-protected value for the race test.
private final class Atomic<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func load() -> Value { lock.withLock { value } }
    func store(_ newValue: Value) { lock.withLock { value = newValue } }
}

private extension Atomic where Value == Int {
    func increment() { lock.withLock { value += 1 } }
}
