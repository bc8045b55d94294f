import Glibc

/// The key as a kernel HID device: /dev/uhid with the FIDO report descriptor
/// (ARCHITECTURE.md, Transports). Clients open the resulting hidraw node; all
/// of them are connection 0. Creating the device is UHID_CREATE2 in `init`;
/// destroying it (UHID_DESTROY in `shutdown`) and creating it again is the
/// key's power cycle.
///
/// Kernel facts relied on (drivers/hid/uhid.c): every read returns exactly
/// one whole event; a non-blocking read of an empty queue is EAGAIN; writes
/// never block.
public final class UHIDDevice: ReportTransport {
    /// At most this many events are taken per `readEvents` call, so one busy
    /// descriptor cannot starve the poll loop (poll is level-triggered: the
    /// rest is read on the next turn).
    static let maximumEventsPerRead = 64

    public let path: String
    public let identity: Identity
    private let device: FileDescriptor
    /// Reports `send` could not hand to the kernel (log-worthy, never fatal).
    public private(set) var lostReportCount = 0

    /// Opens `path` (O_RDWR | O_CLOEXEC | O_NONBLOCK) and creates the device
    /// with UHID_CREATE2 on bus USB. ENOENT/ENODEV/ENXIO → `.uhidUnavailable`,
    /// EACCES/EPERM → `.permissionDenied`.
    public convenience init(path: String = "/dev/uhid", identity: Identity) throws(TransportError) {
        let device: FileDescriptor
        do {
            device = try FileDescriptor.open(path, flags: O_RDWR | O_CLOEXEC | O_NONBLOCK)
        } catch {
            switch error {
            case .noSuchFileOrDirectory, .noDevice, .noSuchDeviceOrAddress:
                throw .uhidUnavailable(path: path)
            default:
                throw TransportError(error, call: "open", path: path)
            }
        }
        try self.init(device: device, path: path, identity: identity)
    }

    /// Creates the device on an already open uhid descriptor (tests pass one
    /// end of a SOCK_SEQPACKET pair, which keeps event boundaries as uhid does).
    init(device: FileDescriptor, path: String, identity: Identity) throws(TransportError) {
        self.device = device
        self.path = path
        self.identity = identity
        let create = UHIDEvent.create2(
            name: identity.name, phys: identity.phys, uniq: identity.uniq,
            bus: UHIDEventLayout.busUSB, vendor: identity.vendorID, product: identity.productID,
            version: identity.version, country: identity.country,
            descriptor: Self.fidoReportDescriptor)
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
        for _ in 0..<Self.maximumEventsPerRead {
            let bytes: [UInt8]
            do {
                bytes = try device.read(upToCount: UHIDEventLayout.eventSize)
            } catch {
                break   // EAGAIN: queue empty (any other error: nothing to read either)
            }
            if bytes.isEmpty { break }
            // The kernel writes whole events; one it could not have written is skipped.
            guard let event = try? UHIDEvent(decoding: bytes) else { continue }
            if let transportEvent = handle(event) {
                events.append(transportEvent)
            }
        }
        return events
    }

    /// Sends `report` as UHID_INPUT2 (`connection` must be 0, the only one).
    public func send(_ report: [UInt8], to connection: TransportConnection) {
        guard connection == 0, device.isOpen else { return }
        do {
            try write(.input2(data: report))
        } catch {
            lostReportCount += 1
        }
    }

    /// UHID_DESTROY, then close. Later calls do nothing.
    public func shutdown() {
        guard device.isOpen else { return }
        try? write(.destroy)
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
