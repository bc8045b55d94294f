import Foundation
import Glibc
@testable import LinuxHID
import XCTest

/// HIDRawDevice against a FIFO standing in for /dev/hidrawN (a FIFO opened
/// O_RDWR reads back what was written, and is silent when empty): the report-ID
/// framing of writes, timeouts on reads, and the error sentences.
final class HIDRawDeviceTests: XCTestCase {
    var directory: TemporaryDirectory!
    var fifo: String!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        fifo = directory.file("hidraw0")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
    }

    override func tearDown() {
        directory.remove()
    }

    func testWritePrefixesReportIDZero() throws {
        let device = try HIDRawDevice.open(path: fifo)
        let report = (0..<64).map { UInt8($0 + 1) }
        try device.write(report: report)
        // The FIFO hands back the 65 bytes written, 64 per read.
        let first = try XCTUnwrap(device.read(timeoutMilliseconds: 1000))
        XCTAssertEqual(first, [0x00] + Array(report.prefix(63)))
        XCTAssertEqual(try device.read(timeoutMilliseconds: 1000), [64])
    }

    func testSilenceIsATimeoutNotAHang() throws {
        let device = try HIDRawDevice.open(path: fifo)
        let started = Date()
        XCTAssertNil(try device.read(timeoutMilliseconds: 80))
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 0.07)
        XCTAssertLessThan(elapsed, 2)
    }

    func testReportsMustBe64Bytes() throws {
        let device = try HIDRawDevice.open(path: fifo)
        XCTAssertThrowsError(try device.write(report: [1, 2, 3])) {
            XCTAssertTrue("\($0)".contains("64 bytes, not 3"), "\($0)")
        }
    }

    func testClosedDeviceThrows() throws {
        let device = try HIDRawDevice.open(path: fifo)
        device.close()
        device.close()
        XCTAssertThrowsError(try device.read(timeoutMilliseconds: 10))
        XCTAssertThrowsError(try device.write(report: [UInt8](repeating: 0, count: 64)))
    }

    func testMissingNodeSaysWhatToDo() {
        XCTAssertThrowsError(try HIDRawDevice.open(path: directory.file("hidraw99"))) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("there is no device at"), text)
            XCTAssertTrue(text.contains("latchkey devices"), text)
        }
    }

    /// A socket-transport key's path given where a hidraw node goes: open(2) says ENXIO, and
    /// the message says to use --socket, not "no device".
    func testASocketPathSaysToUseSocket() throws {
        let path = directory.file("key.sock")
        let listener = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() where index < buffer.count - 1 { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertThrowsError(try HIDRawDevice.open(path: path)) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("is a UNIX socket, not a hidraw device"), text)
            XCTAssertTrue(text.contains("--socket \(path)"), text)
        }
    }

    /// Root opens anything, so EACCES is checked through the one mapping function.
    func testPermissionDeniedPointsAtTheUdevRule() {
        let error = HIDRawDevice.openError(.permissionDenied, path: "/dev/hidraw3")
        let text = error.description
        XCTAssertTrue(text.contains("permission denied opening /dev/hidraw3"), text)
        XCTAssertTrue(text.contains("70-latchkey.rules"), text)
        XCTAssertTrue(text.contains("latchkey doctor"), text)
    }

    func testSocketClientAndHIDRawAreBothClientTransports() throws {
        let device: ClientReportTransport = try HIDRawDevice.open(path: fifo)
        XCTAssertEqual(device.path, fifo)
        try device.sendReport([UInt8](repeating: 7, count: 64))
        XCTAssertEqual(try device.receiveReport(timeoutMilliseconds: 1000)?.count, 64)
    }
}
