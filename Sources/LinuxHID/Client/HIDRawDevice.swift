import Glibc
import SystemIO

/// A client's open handle on a hidraw node (`/dev/hidrawN`): how `latchkey
/// probe` and `wink` talk to any FIDO HID device, Latchkey's or a real one.
///
/// FIDO devices use no report IDs, so (Linux hidraw, Documentation/hid/hidraw.rst)
/// a write is the report-ID byte 0x00 followed by the 64-byte report — 65
/// bytes —, and a read returns the 64-byte input report alone. Every read
/// waits with poll(2) and a timeout: a silent device is a `nil`, never a hang.
/// The node is opened non-blocking, close-on-exec.
public final class HIDRawDevice: ClientReportTransport {
    public let path: String
    private let device: FileDescriptor
    /// Reports read ahead: each wakeup takes everything queued, so that a long reply is
    /// drained from hidraw's 64-report buffer as fast as possible (it drops what overflows).
    private var readAhead: [[UInt8]] = []
    private var readAheadIndex = 0
    static let maximumReadAhead = 64

    private init(path: String, device: FileDescriptor) {
        self.path = path
        self.device = device
    }

    /// Opens `path` read-write. A missing node, a permission problem or a
    /// node that is not a hidraw device each get a sentence saying what to do.
    public static func open(path: String) throws(TransportError) -> HIDRawDevice {
        do {
            let device = try FileDescriptor.open(path, flags: O_RDWR | O_CLOEXEC | O_NONBLOCK)
            return HIDRawDevice(path: path, device: device)
        } catch {
            throw openError(error, path: path)
        }
    }

    deinit {
        close()
    }

    /// Writes one 64-byte report (prefixed with report ID 0, so 65 bytes reach
    /// the kernel). A short write or a vanished device throws.
    public func write(report: [UInt8]) throws(TransportError) {
        guard report.count == reportSize else {
            throw .system(call: "write", errno: EINVAL,
                          message: "a CTAPHID report is \(reportSize) bytes, not \(report.count)")
        }
        guard device.isOpen else { throw TransportError(.badFileDescriptor, call: "write", path: path) }
        let written: Int
        do {
            written = try device.write([0x00] + report)
        } catch {
            throw ioError(error, call: "write")
        }
        guard written == reportSize + 1 else {
            throw .system(call: "write", errno: EIO,
                          message: "short write to \(path): \(written) of \(reportSize + 1) bytes")
        }
    }

    /// The next input report, or nil if none arrives within the timeout (−1:
    /// wait forever). A report longer than 64 bytes is cut to 64.
    public func read(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]? {
        guard device.isOpen else { throw TransportError(.badFileDescriptor, call: "read", path: path) }
        if readAheadIndex < readAhead.count {
            defer { readAheadIndex += 1 }
            return readAhead[readAheadIndex]
        }
        readAhead.removeAll(keepingCapacity: true)
        readAheadIndex = 0
        let deadline = timeoutMilliseconds >= 0 ? Self.monotonicMilliseconds() + Int64(timeoutMilliseconds) : nil
        while true {
            var remaining: Int32 = -1
            if let deadline {
                remaining = Int32(clamping: max(0, deadline - Self.monotonicMilliseconds()))
            }
            let ready: [Int32]
            do {
                ready = try Poller.wait(for: [device.rawValue], timeoutMilliseconds: remaining)
            } catch {
                throw .poll(error)
            }
            if ready.isEmpty { return nil }
            let bytes: [UInt8]
            do {
                bytes = try device.read(upToCount: reportSize)
            } catch {
                // A wakeup without a report (level-triggered poll raced another reader): wait again.
                if error == .wouldBlock {
                    if let deadline, Self.monotonicMilliseconds() >= deadline { return nil }
                    continue
                }
                throw ioError(error, call: "read")
            }
            if bytes.isEmpty {
                throw .system(call: "read", errno: ENODEV,
                              message: "\(path) was closed by the kernel (the device went away)")
            }
            // Whatever else is queued already (non-blocking: EAGAIN ends it).
            while readAhead.count < Self.maximumReadAhead,
                  let more = try? device.read(upToCount: reportSize), !more.isEmpty {
                readAhead.append(more)
            }
            return bytes
        }
    }

    /// The descriptor to poll(2) for input (`latchkey proxy` waits on it beside uhid); nil once closed.
    public var pollDescriptor: Int32? { device.isOpen ? device.rawValue : nil }

    /// Every input report queued now, without waiting (none: empty). The device gone throws.
    public func readQueued() throws(TransportError) -> [[UInt8]] {
        guard device.isOpen else { throw TransportError(.badFileDescriptor, call: "read", path: path) }
        var reports = Array(readAhead[readAheadIndex...])
        readAhead.removeAll(keepingCapacity: true)
        readAheadIndex = 0
        while reports.count < Self.maximumReadAhead {
            let bytes: [UInt8]
            do {
                bytes = try device.read(upToCount: reportSize)
            } catch {
                if error == .wouldBlock { break }
                throw ioError(error, call: "read")
            }
            if bytes.isEmpty {
                throw .system(call: "read", errno: ENODEV, message: "\(path) was closed by the kernel (the device went away)")
            }
            reports.append(bytes)
        }
        return reports
    }

    /// Closes the node (reports read ahead are dropped). Idempotent.
    public func close() {
        readAhead.removeAll()
        readAheadIndex = 0
        device.close()
    }

    // MARK: ClientReportTransport

    public func sendReport(_ report: [UInt8]) throws(TransportError) {
        try write(report: report)
    }

    public func receiveReport(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]? {
        try read(timeoutMilliseconds: timeoutMilliseconds)
    }

    // MARK: Errors

    /// The one mapping from a failed open(2) of a hidraw node to a sentence.
    static func openError(_ error: Errno, path: String) -> TransportError {
        var status = stat()
        if error == .noSuchDeviceOrAddress, stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK {
            // open(2) of a UNIX socket is ENXIO: a socket-transport key named where a hidraw node goes.
            return .system(call: "open", errno: error.rawValue,
                           message: "\(path) is a UNIX socket, not a hidraw device: reach a key on the socket transport with --socket \(path)")
        }
        switch error {
        case .noSuchFileOrDirectory, .noDevice, .noSuchDeviceOrAddress:
            return .system(call: "open", errno: error.rawValue,
                           message: "there is no device at \(path) (\(error)); `latchkey devices` lists the FIDO devices present")
        case .permissionDenied, .notPermitted:
            return .system(call: "open", errno: error.rawValue,
                           message: "permission denied opening \(path). A Latchkey key's node belongs to the user who runs the key "
                               + "(its udev rule, 70-latchkey.rules, installed by the package or by scripts/install): run the key "
                               + "as yourself; other FIDO keys get access for the user at the seat from systemd's "
                               + "60-fido-id.rules. `latchkey doctor` checks this. Or run as root.")
        default:
            return TransportError(error, call: "open", path: path)
        }
    }

    private func ioError(_ error: Errno, call: String) -> TransportError {
        if error == .noDevice || error == .ioError || error == .noSuchDeviceOrAddress {
            return .system(call: call, errno: error.rawValue,
                           message: "\(path) went away (\(error)): the device was unplugged or its key stopped")
        }
        return TransportError(error, call: call, path: path)
    }

    private static func monotonicMilliseconds() -> Int64 { Int64(MonotonicClock.milliseconds()) }
}
