import Glibc
@testable import SystemIO
import XCTest

/// ChildProcess: a child starts with an empty signal mask whatever the spawning thread blocks
/// (a key's threads block SIGINT and SIGTERM), so SIGINT reaches it; output and status come back.
final class ChildProcessTests: XCTestCase {
    struct StillRunning: Error {}

    func wait(_ child: ChildProcess, seconds: Double = 5) throws -> ChildProcess.Exit {
        let deadline = MonotonicClock.milliseconds() + UInt64(seconds * 1000)
        while MonotonicClock.milliseconds() < deadline {
            if let exit = child.exit { return exit }
            usleep(5_000)
        }
        throw StillRunning()
    }

    func testTheChildStartsWithNoSignalBlockedEvenFromAThreadThatBlocksThem() throws {
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGINT)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let child = try ChildProcess(executable: "/bin/cat", arguments: ["/proc/self/status"])
        let exit = try XCTUnwrap(try? wait(child), "cat did not finish")
        XCTAssertEqual(exit.status, 0)
        let status = String(decoding: exit.output, as: UTF8.self)
        let mask = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }
        XCTAssertEqual(mask?.split(separator: "\t").last, "0000000000000000", status)

        let sleeper = try ChildProcess(executable: "/bin/sleep", arguments: ["10"])
        usleep(50_000)
        sleeper.send(SIGINT)
        XCTAssertEqual(try XCTUnwrap(try? wait(sleeper)).status, 128 + SIGINT, "SIGINT reached it")
    }

    func testStatusAndBothOutputsAndAMissingProgram() throws {
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "echo out; echo err >&2; exit 7"])
        let exit = try XCTUnwrap(try? wait(child))
        XCTAssertEqual(exit, ChildProcess.Exit(status: 7, output: Array("out\n".utf8), errorOutput: Array("err\n".utf8)))
        XCTAssertThrowsError(try ChildProcess(executable: "/nonexistent/program", arguments: [])) { error in
            XCTAssertEqual(error as? Errno, Errno(rawValue: ENOENT))
        }
    }
}
