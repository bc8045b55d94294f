import Foundation
import Glibc
import LinuxHID
import SystemIO
import XCTest

/// A fresh directory under /tmp (short paths: sun_path holds 107 bytes),
/// removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/lk-hid-XXXXXX".utf8CString)
        guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw Errno.current
        }
        path = String(cString: result)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Polls the transport's descriptors and collects events until `count`
/// arrived or `timeoutMilliseconds` passed.
func collectEvents(from transport: ReportTransport, count: Int,
                   timeoutMilliseconds: Int = 2000) throws -> [TransportEvent] {
    var events: [TransportEvent] = []
    let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
    while events.count < count {
        let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
        let ready = try Poller.wait(for: transport.pollDescriptors, timeoutMilliseconds: remaining)
        if ready.isEmpty { break }
        for fd in ready { events += transport.readEvents(from: fd) }
    }
    return events
}

/// Events that arrive within a short quiet period (for "nothing else happened").
func pendingEvents(from transport: ReportTransport, waitMilliseconds: Int32 = 30) throws -> [TransportEvent] {
    var events: [TransportEvent] = []
    while true {
        let ready = try Poller.wait(for: transport.pollDescriptors, timeoutMilliseconds: waitMilliseconds)
        if ready.isEmpty { return events }
        for fd in ready { events += transport.readEvents(from: fd) }
    }
}

func fileMode(_ path: String) -> mode_t? {
    var status = stat()
    guard lstat(path, &status) == 0 else { return nil }
    return status.st_mode
}
