import Foundation
import Glibc
import LinuxHID
import Synchronization
import SystemIO

/// What the uhid broker adds to a report's round trip, on any machine: the broker's real loop on
/// a thread of its own, with one end of a socket pair standing in for /dev/uhid (a socket pair
/// delivers one whole event a read, as uhid does). One round trip: the "kernel" writes an
/// UHID_OUTPUT event, the key reads it and answers UHID_INPUT2, the kernel reads that. The
/// baseline is the same exchange with the key holding the other end of the pair itself, as a key
/// on /dev/uhid does; timed in alternation with it (docs/uhid-broker.md).
/// The broker and its stop flag, handed to the thread that alone runs the loop.
final class BrokerLoop: @unchecked Sendable {
    let broker: UHIDBroker
    let stop = Atomic<Bool>(false)
    init(_ broker: UHIDBroker) { self.broker = broker }
}

enum BrokerBenchmarks {
    static func run(report: Report, seconds: Double) throws {
        let section = "uhid broker"
        let directory = FileManager.default.temporaryDirectory.path + "/lk-bench-broker-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/uhid.socket"
        let listener = try FileDescriptor.unixSocket(type: SOCK_SEQPACKET, nonBlocking: true)
        try listener.bind(to: UnixSocketAddress(path: path))
        try listener.listen(backlog: 4)

        let kernelEnds = Mutex<[Int32]>([])
        let broker = UHIDBroker(listener: listener, openDevice: { () throws(Errno) -> FileDescriptor in
            let (kernel, device) = try socketPair()
            kernelEnds.withLock { $0.append(kernel) }
            let flags = fcntl(device, F_GETFL)
            _ = fcntl(device, F_SETFL, flags | O_NONBLOCK)
            return FileDescriptor(owning: device)
        }, logger: Logger(level: .error))
        let loop = BrokerLoop(broker)
        let thread = Thread { loop.broker.run { loop.stop.load(ordering: .acquiring) } }
        thread.start()
        defer {
            loop.stop.store(true, ordering: .releasing)
            while !thread.isFinished { usleep(1_000) }
            kernelEnds.withLock { $0.forEach { close($0) } }
        }

        // The key through the broker: its CREATE2, then wait for the broker's to reach the kernel.
        let key = try FileDescriptor.unixSocket(type: SOCK_SEQPACKET, nonBlocking: false)
        try key.connect(to: UnixSocketAddress(path: path))
        let identity = UHIDDevice.Identity.latchkey(name: "bench")
        let create = UHIDEvent.create2(name: identity.name, phys: identity.phys, uniq: identity.uniq, bus: 3,
                                       vendor: identity.vendorID, product: identity.productID, version: identity.version,
                                       country: 0, descriptor: UHIDDevice.fidoReportDescriptor).encoded()
        guard try key.send(create, flags: 0) == create.count else { throw BenchError.failed("the CREATE2 did not go") }
        var waited = 0
        while kernelEnds.withLock({ $0.isEmpty }) && waited < 5_000 { usleep(1_000); waited += 1 }
        guard let brokered = kernelEnds.withLock({ $0.first }) else { throw BenchError.failed("the broker made no device") }
        _ = try readEvent(brokered)   // the CREATE2 the broker wrote

        // The baseline: a key on the device end itself.
        let (directKernel, directKey) = try socketPair()
        defer { close(directKernel); close(directKey) }

        let output = UHIDEvent.output(data: [0] + [UInt8](repeating: 0x5A, count: 64), reportType: 1).encoded()
        let input = UHIDEvent.input2(data: [UInt8](repeating: 0xA5, count: 64)).encoded()
        func roundTrip(kernel: Int32, key: Int32) throws {
            try sendEvent(output, on: kernel)
            guard case .output = try UHIDEvent(decoding: readEvent(key)) else { throw BenchError.failed("no OUTPUT at the key") }
            try sendEvent(input, on: key)
            guard case .input2 = try UHIDEvent(decoding: readEvent(kernel)) else { throw BenchError.failed("no INPUT2 at the kernel") }
        }
        let (direct, through) = try Stopwatch.measureInterleaved(
            "report round trip, key on the device itself", "report round trip through the broker", seconds: seconds,
            { try roundTrip(kernel: directKernel, key: directKey) },
            { try roundTrip(kernel: brokered, key: key.rawValue) })
        report.add(section, direct, note: "baseline: OUTPUT to the key and INPUT2 back on a socket pair (as on /dev/uhid)")
        report.add(section, through, baseline: direct, note: "the same through UHIDBroker's loop (two relays, one thread)")
    }

    static func socketPair() throws(Errno) -> (Int32, Int32) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw Errno.current
        }
        return (pair[0], pair[1])
    }

    static func sendEvent(_ bytes: [UInt8], on fd: Int32) throws {
        guard Glibc.send(fd, bytes, bytes.count, 0) == bytes.count else { throw BenchError.failed("send: errno \(errno)") }
    }

    /// One event, waiting up to 5 s for it.
    static func readEvent(_ fd: Int32) throws -> [UInt8] {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 5_000) == 1 else { throw BenchError.failed("no event within 5 s") }
        var buffer = [UInt8](repeating: 0, count: 8_192)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { throw BenchError.failed("the other end closed") }
        return Array(buffer[..<count])
    }
}
