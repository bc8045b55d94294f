import Foundation
import Glibc

/// What the operating system alone costs for one 64-byte report each way between two threads:
/// a SOCK_SEQPACKET socketpair whose far end waits in poll(2) and echoes, as the key's loop does.
/// Transport figures are reported as ratios to this, since thread wake-ups dominate them and vary
/// several-fold between machines (and inside a VM).
enum EchoBaseline {
    static func measure(_ name: String = "64 B echo, socketpair + poll (OS baseline)", seconds: Double,
                        reportsEachWay: Int = 1, work: @escaping @Sendable () -> Void = {}) throws -> Measurement {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0 else {
            throw BenchError.failed("socketpair: errno \(errno)")
        }
        let near = pair[0], far = pair[1]
        let echo = Thread {
            var buffer = [UInt8](repeating: 0, count: 64)
            while true {
                var descriptor = pollfd(fd: far, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, -1) >= 0 else { return }
                let count = recv(far, &buffer, 64, Int32(MSG_DONTWAIT))
                if count <= 0 { return }   // the near end closed
                work()
                _ = send(far, buffer, count, Int32(MSG_NOSIGNAL))
            }
        }
        echo.start()
        defer {
            shutdown(near, Int32(SHUT_RDWR))
            while !echo.isFinished { usleep(1000) }
            close(near); close(far)
        }
        let report = [UInt8](repeating: 0x42, count: 64)
        var buffer = [UInt8](repeating: 0, count: 64)
        return try Stopwatch.measure(name, seconds: seconds) {
            for _ in 0..<reportsEachWay {
                guard send(near, report, 64, Int32(MSG_NOSIGNAL)) == 64 else { throw BenchError.failed("send: errno \(errno)") }
            }
            for _ in 0..<reportsEachWay {
                var descriptor = pollfd(fd: near, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 10_000) == 1, recv(near, &buffer, 64, 0) == 64 else {
                    throw BenchError.failed("echo: errno \(errno)")
                }
            }
        }
    }
}
