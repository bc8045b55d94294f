import Encoding
import Foundation
import LinuxHID
import Synchronization
import SystemIO
import Trace

/// `latchkey proxy`: a uhid device that looks like a real FIDO key (its report descriptor,
/// vendor and product ID, a name and uniq marked as the proxy's) and forwards every report
/// both ways between the clients of its hidraw node and the real key's hidraw node, tracing
/// them in `latchkey serve --trace`'s format with the same redaction (ProxyTraceRecorder).
/// The real key still does the cryptography and the touches; the proxy adds only the time of a
/// report's trip through it.
///
/// One loop owns all three descriptors (uhid, the real hidraw node, a wakeup event for stop):
/// client reports go to the key as they arrive, the key's go to the clients, paced by
/// UHIDDevice as a USB key would pace them.
public final class HIDProxy: @unchecked Sendable {
    public struct Options: Sendable {
        public var devicePath: String
        public var uhidPath = "/dev/uhid"
        public var name: String?
        public var tracePath: String?
        /// Each request and response, decoded, on standard error as it completes (`--live`).
        public var live = false
        public init(devicePath: String) { self.devicePath = devicePath }
    }

    /// What went wrong before the proxy could start, said the way `latchkey serve` says it.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private let options: Options
    private let logger: Logger
    private let loop: StoppableLoop

    public init(options: Options, logger: Logger) throws(Failure) {
        self.options = options
        self.logger = logger
        do {
            loop = try StoppableLoop(logger: logger)
        } catch {
            throw Failure(description: "the proxy: \(error.description)")
        }
    }

    /// The identity the proxy presents for `info`: the real key's IDs, its name marked as the
    /// proxy's, a uniq that says which node it stands for.
    public static func identity(for info: HIDDeviceInfo, name: String?) -> UHIDDevice.Identity {
        let real = info.product ?? info.name ?? "FIDO key"
        let node = (info.devicePath as NSString).lastPathComponent
        return UHIDDevice.Identity(name: name.map { "\($0) (Latchkey proxy)" } ?? "\(real) (Latchkey proxy of \(node))",
                                   vendorID: info.vendorID ?? 0, productID: info.productID ?? 0, version: 0,
                                   uniq: "latchkey-proxy:" + (info.uniq.flatMap { $0.isEmpty ? nil : $0 } ?? node),
                                   phys: "latchkey-proxy/\(node)")
    }

    public func requestStop() { loop.requestStop() }

    /// `run`, stopped by SIGINT or SIGTERM.
    public func runUntilSignalled() -> Int32 { loop.untilSignalled(run) }

    /// Runs until `requestStop` or until the real key goes away. Returns the exit status.
    public func run() -> Int32 {
        // A udev symlink (/dev/yubikey) names the same node.
        let devicePath = URL(fileURLWithPath: options.devicePath).resolvingSymlinksInPath().path
        guard let info = HIDDeviceEnumerator().allDevices().first(where: { $0.devicePath == devicePath }) else {
            logger.error("\(options.devicePath) is not a HID device this machine lists (see `latchkey devices`)")
            return 1
        }
        guard info.isFIDO, let descriptor = info.reportDescriptor?.bytes else {
            logger.error("\(options.devicePath) is not a FIDO device (its report descriptor has no FIDO usage page 0xF1D0)")
            return 1
        }
        let key: HIDRawDevice
        do {
            key = try HIDRawDevice.open(path: devicePath)
        } catch {
            logger.error(error.description)
            return 1
        }
        defer { key.close() }
        var traceFile: TraceFile?
        if let tracePath = options.tracePath {
            let header = TraceHeader(started: ISO8601DateFormatter().string(from: Date()), time: Self.traceTime(),
                                     key: "proxy of \(options.devicePath)", transport: "uhid proxy")
            do {
                traceFile = try TraceFile.create(path: tracePath, header: header)
            } catch {
                logger.error(error.description)
                return 1
            }
        }
        let identity = Self.identity(for: info, name: options.name)
        let device: UHIDDevice
        do {
            device = try UHIDDevice(path: options.uhidPath, identity: identity, reportDescriptor: descriptor)
        } catch {
            logger.error(error.description)
            traceFile?.close()
            return 1
        }
        logger.info("proxy up as \"\(identity.name)\" (uniq \(identity.uniq)) in front of \(options.devicePath)"
            + (options.tracePath.map { "; tracing to \($0) (secrets blanked)" } ?? ""))
        var recorder = ProxyTraceRecorder()
        var live = options.live ? LiveView(logger: logger) : nil
        let status = forward(device: device, key: key, trace: traceFile, recorder: &recorder, live: &live)
        device.shutdown()
        if let traceFile {
            traceFile.write(recorder.finish())
            if let failure = traceFile.flush() { logger.error(failure.description) }
            traceFile.close()
        }
        logger.info("proxy stopped")
        return status
    }

    private func forward(device: UHIDDevice, key: HIDRawDevice, trace: TraceFile?, recorder: inout ProxyTraceRecorder,
                         live: inout LiveView?) -> Int32 {
        guard let keyDescriptor = key.pollDescriptor else { return 1 }
        while !loop.isStopped {
            guard let ready = loop.wait(for: device.pollDescriptors + [keyDescriptor],
                                        pendingSendDeadline: device.pendingSendDeadline) else { return 1 }
            device.sendPending(nowNanoseconds: MonotonicClock.nanoseconds())
            for fd in device.pollDescriptors where ready.contains(fd) {
                for event in device.readEvents(from: fd) {
                    guard case let .report(report, _) = event else { continue }
                    if let trace { trace.write(recorder.clientReport(report, time: Self.traceTime())) }
                    live?.observe(report, toKey: true)
                    do {
                        try key.write(report: report)
                    } catch {
                        logger.error("the real key: \(error.description)")
                        return 1
                    }
                }
            }
            if ready.contains(keyDescriptor) {
                let reports: [[UInt8]]
                do {
                    reports = try key.readQueued()
                } catch {
                    logger.error("the real key went away: \(error.description)")
                    return 1
                }
                for report in reports {
                    if let trace { trace.write(recorder.keyReport(report, time: Self.traceTime())) }
                    live?.observe(report, toKey: false)
                }
                device.send(reports: reports, to: 0)
            }
            if let trace, trace.failure == nil, let failure = trace.flush() { logger.error(failure.description) }
        }
        return 0
    }

    /// Trace timestamps: CLOCK_MONOTONIC in microseconds, as KeyRunner writes them.
    static func traceTime() -> UInt64 { MonotonicClock.nanoseconds() / 1_000 }
}

/// `--live`: each message, decoded, as it completes (the trace decoder's own text, one line a
/// message, secrets blanked as in the trace file).
struct LiveView {
    let logger: Logger
    var recorder = ProxyTraceRecorder()
    let started = HIDProxy.traceTime()

    mutating func observe(_ report: [UInt8], toKey: Bool) {
        let time = HIDProxy.traceTime()
        let records = toKey ? recorder.clientReport(report, time: time) : recorder.keyReport(report, time: time)
        guard !records.isEmpty else { return }
        let contents = TraceFile.Contents(header: TraceHeader(started: "", time: started), records: records)
        let events = TraceDecoder.decode(contents)
        guard !events.isEmpty else { return }
        // The decoder's text without its title, column heads and message count.
        let lines = TraceDecoder.text(events, header: contents.header).split(separator: "\n").dropFirst(2).dropLast()
        FileHandle.standardError.write(Data((TerminalText.lines(lines.joined(separator: "\n")) + "\n").utf8))
    }
}
