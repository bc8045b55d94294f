import Glibc
import SystemIO
import XCTest

final class ProcessHardeningTests: XCTestCase {
    /// In a child process (the test runner itself stays dumpable): before, a crash could dump
    /// core; after, neither the limit nor the dumpable flag allows it, and the hard limit
    /// cannot be raised again.
    func testDisableCoreDumpsInAChild() throws {
        let child = fork()
        XCTAssertGreaterThanOrEqual(child, 0)
        if child == 0 {
            var raised = rlimit(rlim_cur: 1 << 20, rlim_max: 1 << 20)
            _ = setrlimit(Int32(RLIMIT_CORE.rawValue), &raised)
            guard ProcessHardening.mayDumpCore else { _exit(3) }
            do { try ProcessHardening.disableCoreDumps() } catch { _exit(4) }
            guard !ProcessHardening.mayDumpCore else { _exit(5) }
            raised = rlimit(rlim_cur: 1 << 20, rlim_max: 1 << 20)
            // Only root may raise a hard limit again: as root this is allowed, so check the flag only.
            if getuid() != 0 && setrlimit(Int32(RLIMIT_CORE.rawValue), &raised) == 0 { _exit(6) }
            _exit(0)
        }
        var status: Int32 = 0
        XCTAssertEqual(waitpid(child, &status, 0), child)
        XCTAssertEqual((status >> 8) & 0xFF, 0, "child exit status (3: dumpable before, 4: failed, 5: still dumpable, 6: limit raised)")
    }
}
