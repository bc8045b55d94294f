import Glibc
import SystemIO

/// The key as a kernel HID device: /dev/uhid with the FIDO report descriptor
/// (docs/architecture.md, Transports). Clients open the resulting hidraw node; all
/// of them are connection 0. Creating the device is UHID_CREATE2 in `init`;
/// destroying it (UHID_DESTROY in `shutdown`) and creating it again is the
/// key's power cycle.
///
/// Kernel facts relied on (drivers/hid/uhid.c): every read returns exactly
/// one whole event; a non-blocking read of an empty queue is EAGAIN; writes
/// never block — and the kernel queues at most 32 events for us (UHID_BUFSIZE):
/// a client's hidraw writes do not wait, so a request of more than 32 reports
/// written back to back is cut short unless we read as fast as it writes.
/// Hence `readEvents` does not return to poll(2) while a message's
/// continuation packets are still due (`MessageFraming`): it spins for them
/// for up to `burstSpinNanoseconds` per gap and `burstSpinBudgetNanoseconds` per call, so a
/// client dribbling reports cannot keep the loop from its KEEPALIVEs and other channels.
///
/// The other direction has the same hazard: hidraw keeps at most 64 input reports per open
/// handle and drops the rest, and a real full-speed USB key never sends faster than one report
/// per millisecond, which clients are written for. So a reply of more than `unpacedReports`
/// reports sends those at once and the rest one per `pacedReportIntervalNanoseconds` (KeyRunner calls
/// `sendPending` when due): every usual reply is untouched, a 7609-byte one takes ~100 ms (a
/// USB key: 129 ms), and a client may stall for ~30 ms mid-reply without losing reports.
public final class UHIDDevice: ReportTransport {
    /// At most this many events are taken per `readEvents` call, so one busy
    /// descriptor cannot starve the poll loop (poll is level-triggered: the
    /// rest is read on the next turn).
    static let maximumEventsPerRead = 256
    /// How long `readEvents` waits, without sleeping, for the next report of a message.
    static let burstSpinNanoseconds: UInt64 = 2_000_000
    static let burstSpinBudgetNanoseconds: UInt64 = 10_000_000
    /// Replies up to this many reports go to the kernel at once; longer ones are paced.
    static let defaultUnpacedReports = 32
    let unpacedReports: Int
    static let pacedReportIntervalNanoseconds: UInt64 = 1_000_000
    /// Reports of a long reply not yet handed to the kernel, oldest first.
    private var paced: ArraySlice<[UInt8]> = []
    private var nextPacedRelease: UInt64 = 0
    private let clock: () -> UInt64

    public let path: String
    public let identity: Identity
    /// Through the uhid broker (a socket) rather than /dev/uhid itself.
    public let isBrokered: Bool
    private var device: FileDescriptor
    /// The UHID_CREATE2 this device was made with, sent again when a broker connection is remade.
    private let createEvent: UHIDEvent
    /// When the broker connection was remade, most recent last (at most `maximumReconnects` a minute).
    private var reconnectTimes: [UInt64] = []
    static let maximumReconnects = 5
    /// One event's worth of bytes, reused by every read (the loop is the only reader).
    private var readBuffer = [UInt8](repeating: 0, count: UHIDEventLayout.eventSize)
    /// Reports `send` could not hand to the kernel (log-worthy, never fatal).
    public private(set) var lostReportCount = 0

    /// Opens `path` (O_RDWR | O_CLOEXEC | O_NONBLOCK) and creates the device
    /// with UHID_CREATE2 on bus USB. ENOENT/ENODEV/ENXIO → `.uhidUnavailable`,
    /// EACCES/EPERM → `.permissionDenied` — unless the uhid broker listens on `broker`
    /// (docs/uhid-broker.md): then the same events go to it instead, and it creates the
    /// device for this user.
    public convenience init(path: String = "/dev/uhid", identity: Identity,
                            reportDescriptor: [UInt8] = UHIDDevice.fidoReportDescriptor,
                            broker: String? = UHIDDevice.brokerPath) throws(TransportError) {
        let device: FileDescriptor
        var brokered = false
        do {
            device = try FileDescriptor.open(path, flags: O_RDWR | O_CLOEXEC | O_NONBLOCK)
        } catch {
            switch error {
            case .noSuchFileOrDirectory, .noDevice, .noSuchDeviceOrAddress:
                throw .uhidUnavailable(path: path)
            case .permissionDenied, .notPermitted:
                guard let broker, let connection = Self.connectToBroker(broker) else {
                    throw TransportError(error, call: "open", path: path)
                }
                device = connection
                brokered = true
            default:
                throw TransportError(error, call: "open", path: path)
            }
        }
        try self.init(device: device, path: brokered ? broker ?? path : path, identity: identity,
                      reportDescriptor: reportDescriptor, brokered: brokered)
    }

    /// Where the package's uhid broker listens (udev/latchkey-uhid-broker.socket).
    public static let brokerPath = "/run/latchkey/uhid.socket"

    /// A connection to the broker at `path`, or nil when none listens there.
    static func connectToBroker(_ path: String) -> FileDescriptor? {
        guard let address = try? UnixSocketAddress(path: path),
              let socket = try? FileDescriptor.unixSocket(type: SOCK_SEQPACKET, nonBlocking: false) else { return nil }
        guard (try? socket.connect(to: address)) != nil else { return nil }
        // The broker is root's (its socket is in root's /run/latchkey); one of our own is fine too.
        guard let peer = try? socket.peerCredentials(), peer.uid == 0 || peer.uid == getuid() else { return nil }
        try? socket.setNonBlocking(true)
        return socket
    }

    /// Creates the device on an already open uhid descriptor (tests pass one
    /// end of a SOCK_SEQPACKET pair, which keeps event boundaries as uhid does).
    init(device: FileDescriptor, path: String, identity: Identity, reportDescriptor: [UInt8] = UHIDDevice.fidoReportDescriptor,
         clock: @escaping () -> UInt64 = MonotonicClock.nanoseconds,
         unpacedReports: Int = UHIDDevice.defaultUnpacedReports, brokered: Bool = false) throws(TransportError) {
        self.device = device
        self.isBrokered = brokered
        self.path = path
        self.identity = identity
        self.clock = clock
        self.unpacedReports = unpacedReports
        let create = UHIDEvent.create2(
            name: identity.name, phys: identity.phys, uniq: identity.uniq,
            bus: UHIDEventLayout.busUSB, vendor: identity.vendorID, product: identity.productID,
            version: identity.version, country: identity.country,
            descriptor: reportDescriptor)
        createEvent = create
        do {
            try write(create)
        } catch {
            device.close()   // never created: nothing to destroy
            throw TransportError(error, call: "write(UHID_CREATE2)", path: path,
                                 hint: "the kernel refused to create the HID device")
        }
    }

    deinit {
        shutdown()
    }

    public var pollDescriptors: [Int32] {
        device.isOpen ? [device.rawValue] : []
    }

    public func readEvents(from fd: Int32) -> [TransportEvent] {
        guard device.isOpen, fd == device.rawValue else { return [] }
        var events: [TransportEvent] = []
        var framing = MessageFraming()
        let started = MonotonicClock.nanoseconds()
        for _ in 0..<Self.maximumEventsPerRead {
            let device = self.device
            let count = readBuffer.withUnsafeMutableBytes { (try? device.read(into: $0)) ?? -1 }
            if count == 0, isBrokered {
                // /dev/uhid never ends; the broker's socket does when the broker stops or
                // refused an event. The device went with the connection. A broker that systemd
                // restarts keeps its socket: the key connects again and makes its device anew.
                device.close()
                paced = []
                if reconnectToBroker() {
                    events.append(.connectionClosed(0))
                    events.append(.transportRestored(reason: "the uhid broker (\(path)) closed the connection; connected "
                                                     + "again and made the device anew (clients must open it again)"))
                } else {
                    events.append(.transportLost(reason: "the uhid broker (\(path)) closed the connection: it stopped, "
                                                 + "or refused what the key sent (its log says which)"))
                }
                break
            }
            guard count > 0 else {
                // EAGAIN: queue empty (any other error: nothing to read either). Mid-message,
                // the rest is on its way: wait for it here rather than sleep in poll(2).
                if count < 0, framing.expectsMore, MonotonicClock.nanoseconds() - started < Self.burstSpinBudgetNanoseconds,
                   spinUntilReadable() { continue }
                break
            }
            // Output reports, nearly every event, are taken straight from the buffer: the reader
            // has to keep pace with a client's back-to-back writes (see the type's comment).
            if let output = outputReport(count: count) {
                if case let .report(report, _) = output { framing.observe(report: report) }
                events.append(output)
                continue
            }
            let bytes = Array(readBuffer[..<count])
            // The kernel writes whole events; one it could not have written is skipped.
            guard let event = try? UHIDEvent(decoding: bytes) else { continue }
            if let transportEvent = handle(event) {
                events.append(transportEvent)
            }
        }
        return events
    }

    /// The transport event of a UHID_OUTPUT event in `readBuffer`, read off its fixed fields
    /// (the same ones `UHIDEvent(decoding:)` reads); nil for any other event.
    private func outputReport(count: Int) -> TransportEvent? {
        typealias Output = UHIDEventLayout.Output
        guard count >= Output.reportType + 1 else { return nil }
        return readBuffer.withUnsafeBytes { raw -> TransportEvent? in
            guard raw.loadUnaligned(fromByteOffset: UHIDEventLayout.typeOffset, as: UInt32.self)
                    == UHIDEventLayout.EventType.output.rawValue else { return nil }
            let size = Int(raw.loadUnaligned(fromByteOffset: Output.size, as: UInt16.self))
            guard size <= UHIDEventLayout.dataCapacity else { return nil }   // the full decoder reports it
            let reportType = raw[Output.reportType]
            return Self.report(fromOutput: Array(raw[Output.data..<Output.data + size]), reportType: reportType)
        }
    }

    /// Polls without sleeping (yielding the CPU between tries) until the device is readable or
    /// the spin window ends; true if an event is waiting.
    private func spinUntilReadable() -> Bool {
        let start = MonotonicClock.nanoseconds()
        while true {
            if let events = try? Poller.wait(for: device.rawValue, events: Int16(POLLIN), timeoutMilliseconds: 0),
               events != 0 {
                return events & Int16(POLLIN) != 0
            }
            if MonotonicClock.nanoseconds() - start > Self.burstSpinNanoseconds { return false }
            sched_yield()
        }
    }

    /// Sends `report` as UHID_INPUT2 (`connection` must be 0, the only one).
    public func send(_ report: [UInt8], to connection: TransportConnection) {
        send(reports: [report], to: connection)
    }

    /// Sends `reports` as UHID_INPUT2 events, in order after anything still paced; a long reply
    /// is paced (see the type's comment).
    public func send(reports: [[UInt8]], to connection: TransportConnection) {
        guard connection == 0, device.isOpen, !reports.isEmpty else { return }
        if !paced.isEmpty {
            paced += reports
            return
        }
        for report in reports.prefix(unpacedReports) { input(report) }
        if reports.count > unpacedReports {
            paced = reports.dropFirst(unpacedReports)
            nextPacedRelease = clock() + Self.pacedReportIntervalNanoseconds
        }
    }

    public var pendingSendDeadline: UInt64? {
        paced.isEmpty ? nil : nextPacedRelease
    }

    /// Releases the paced reports that are due: one per interval since the last release.
    public func sendPending(nowNanoseconds now: UInt64) {
        guard !paced.isEmpty, now >= nextPacedRelease, device.isOpen else { return }
        let due = 1 + Int((now - nextPacedRelease) / Self.pacedReportIntervalNanoseconds)
        for report in paced.prefix(due) { input(report) }
        paced = paced.dropFirst(due)
        nextPacedRelease = now + Self.pacedReportIntervalNanoseconds
    }

    private func input(_ report: [UInt8]) {
        do {
            try write(.input2(data: report))
        } catch {
            lostReportCount += 1
        }
    }

    /// A new connection to the broker and the device made again on it; false when none listens
    /// or this has happened `maximumReconnects` times in the last minute (a broker that keeps
    /// refusing the key must not have it reconnect in a loop).
    private func reconnectToBroker() -> Bool {
        let now = clock()
        reconnectTimes.removeAll { now &- $0 > 60_000_000_000 }
        guard reconnectTimes.count < Self.maximumReconnects, let connection = Self.connectToBroker(path) else { return false }
        reconnectTimes.append(now)
        device = connection
        do {
            try write(createEvent)
            return true
        } catch {
            device.close()
            return false
        }
    }

    /// UHID_DESTROY, then close. Later calls do nothing.
    public func shutdown() {
        guard device.isOpen else { return }
        paced = []
        if !isBrokered { try? write(.destroy) }   // the broker destroys the device as the connection closes
        device.close()
    }

    /// What one kernel event means for the caller; replies the kernel waits
    /// for are written here.
    private func handle(_ event: UHIDEvent) -> TransportEvent? {
        switch event {
        case .start:
            return .deviceStarted
        case .stop:
            return .deviceStopped
        case .open:
            return .connectionOpened(0)
        case .close:
            paced = []   // nobody reads them any more
            return .connectionClosed(0)
        case let .output(data, reportType):
            return Self.report(fromOutput: data, reportType: reportType)
        case let .getReport(id, _, _):
            // The FIDO descriptor has no feature reports; answer at once so the
            // kernel's caller does not wait for its timeout.
            try? write(.getReportReply(id: id, error: UInt16(EIO), data: []))
            return nil
        case let .setReport(id, _, _, _):
            try? write(.setReportReply(id: id, error: UInt16(EIO)))
            return nil
        case .create2, .destroy, .input2, .getReportReply, .setReportReply, .unknown:
            return nil   // written by user space, or unknown: nothing to do
        }
    }

    /// A hidraw write arrives as UHID_OUTPUT of 65 bytes: the report-ID byte
    /// 0x00 (the descriptor has no report IDs), then the 64-byte report.
    /// Exactly 64 bytes are accepted as well; anything else is dropped.
    static func report(fromOutput data: [UInt8], reportType: UInt8) -> TransportEvent {
        guard reportType == UHIDEventLayout.ReportType.output.rawValue else {
            return .droppedPacket(size: data.count, from: 0)
        }
        if data.count == reportSize + 1, data[0] == 0 {
            return .report(Array(data[1...]), from: 0)
        }
        if data.count == reportSize {
            return .report(data, from: 0)
        }
        return .droppedPacket(size: data.count, from: 0)
    }

    /// Writes one whole event; a short write counts as an error (EIO).
    private func write(_ event: UHIDEvent) throws(Errno) {
        let bytes = event.encoded()
        let written = try device.write(bytes)
        if written != bytes.count { throw Errno.ioError }
    }
}
