import CBOR
import CTAP
import CTAPHID
import FIDOClient
import SystemIO
import Encoding

/// What `latchkey probe` found, step by step. Without INIT nothing else can
/// run; after it, each step (PINGs, echo, WINK, getInfo) runs whatever the
/// others did, and every failed step adds to `failures`. Built by
/// `run(client:…)` over any report link, shown as text or JSON.
public struct ProbeReport: Sendable {
    public struct PingStatistics: Sendable, Equatable {
        public var count: Int
        public var payloadBytes: Int
        public var minimumMicroseconds: Int
        public var medianMicroseconds: Int
        public var p99Microseconds: Int
    }

    public struct Echo: Sendable, Equatable {
        public var bytes: Int
        public var microseconds: Int
        /// Where the echo first differed (nil: identical); a mismatch is also a failure.
        public var firstMismatch: Int?
        /// The echo only worked with a pause between reports (see `warnings`).
        public var paced = false
        public var reports: Int { CTAPHIDPacket.reportsNeeded(for: bytes) }
    }

    public var target: String
    public var transport: String
    public var initResponse: CTAPHIDClient.InitResponse?
    public var ping: PingStatistics?
    public var echo: Echo?
    /// nil: not reached; true: done; false: skipped (`winkNote` says why).
    public var winked: Bool?
    public var winkNote: String?
    public var getInfo: CBORValue?
    public var getInfoNote: String?
    /// KEEPALIVE statuses seen during getInfo (1 processing, 2 touch needed).
    public var getInfoKeepalives: [UInt8] = []
    /// Each failed step, in order.
    public var failures: [String] = []
    /// Findings that are not failures (a device that loses bursts of reports).
    public var warnings: [String] = []

    /// The first failure.
    public var failure: String? { failures.first }
    public var succeeded: Bool { failures.isEmpty }

    /// The pause between reports of the echo's second try.
    static let pacedDelayMicroseconds: UInt32 = 1_000

    /// The length of the long echo: the largest CTAPHID message.
    public static let echoLength = CTAPHIDPacket.maxMessageLength

    /// INIT, `pings` PINGs of one report each, one PING of `echoBytes` (default
    /// 7609, the largest message; 0: none) checked byte for byte, WINK (if the
    /// device has the capability), getInfo (if CBOR).
    public static func run(client: CTAPHIDClient, target: String, transport: String, pings: Int,
                           echoBytes: Int = echoLength,
                           clock: () -> UInt64 = MonotonicClock.nanoseconds,
                           random: (Int) -> [UInt8] = { count in (0..<count).map { _ in UInt8.random(in: 0...255) } })
        -> ProbeReport
    {
        var report = ProbeReport(target: target, transport: transport)
        let initResponse: CTAPHIDClient.InitResponse
        do {
            initResponse = try client.initialize()
        } catch {
            report.failures.append("CTAPHID INIT: \(error)")
            return report
        }
        report.initResponse = initResponse

        var samples: [Int] = []
        let payload = random(CTAPHIDPacket.initializationDataSize)
        for _ in 0..<max(0, pings) {
            let started = clock()
            do {
                let echoed = try client.ping(payload)
                guard echoed == payload else {
                    report.failures.append("CTAPHID PING: the device echoed different bytes")
                    break
                }
            } catch {
                report.failures.append("CTAPHID PING: \(error)")
                client.drain()
                break
            }
            samples.append(Int((clock() &- started) / 1_000))
        }
        if !samples.isEmpty {
            let sorted = samples.sorted()
            report.ping = PingStatistics(count: sorted.count, payloadBytes: payload.count,
                                         minimumMicroseconds: sorted[0],
                                         medianMicroseconds: nearestRank(sorted, percent: 50),
                                         p99Microseconds: nearestRank(sorted, percent: 99))
        }

        if echoBytes > 0 {
            report.checkEcho(random(min(echoBytes, echoLength)), client: client, clock: clock)
        }

        if initResponse.supportsWink {
            do {
                try client.wink()
                report.winked = true
            } catch {
                report.failures.append("CTAPHID WINK: \(error)")
                client.drain()
            }
        } else {
            report.winked = false
            report.winkNote = "the device does not announce the WINK capability"
        }

        guard initResponse.supportsCBOR else {
            report.getInfoNote = "the device does not announce the CBOR capability (a CTAP1/U2F-only key)"
            return report
        }
        do {
            let response = try client.cbor([CTAPCommand.getInfo.rawValue])
            report.getInfoKeepalives = client.keepalives
            report.getInfo = try GetInfoFormatter.decode(response: response)
        } catch let error as CTAPHIDClientError {
            report.failures.append("CTAPHID CBOR authenticatorGetInfo: \(error)")
        } catch {
            report.failures.append("authenticatorGetInfo: \(error)")
        }
        return report
    }

    /// The largest message, echoed and compared. Sent back to back first (as clients do); if part
    /// of it got lost on the way in, once more with a pause between reports, to tell a device
    /// that loses bursts from one that cannot echo at all.
    private mutating func checkEcho(_ long: [UInt8], client: CTAPHIDClient, clock: () -> UInt64) {
        let name = "CTAPHID PING of \(long.count) bytes"
        var attempt = Self.echo(long, client: client, clock: clock)
        if case .failure(let burstError) = attempt, Self.losesReports(burstError) {
            client.drain()
            client.interReportDelayMicroseconds = Self.pacedDelayMicroseconds
            attempt = Self.echo(long, client: client, clock: clock)
            client.interReportDelayMicroseconds = 0
            switch attempt {
            case .success(let result) where result.firstMismatch == nil:
                warnings.append(
                    "the \(long.count)-byte echo failed when its \(result.reports) reports were sent back to back "
                    + "(\(burstError)), and worked with a \(Self.pacedDelayMicroseconds / 1000) ms pause between reports: "
                    + "the device loses reports in a burst. Browsers and libfido2 send back to back, so large requests "
                    + "may fail. (A Latchkey key on uhid: the kernel queues at most 32 output reports for the key — "
                    + "dmesg says \"Output queue is full\" — so the key did not read them fast enough.)")
                attempt = .success(Echo(bytes: result.bytes, microseconds: result.microseconds, firstMismatch: nil, paced: true))
            case .failure(let pacedError):
                failures.append("\(name): \(burstError); sent again with a \(Self.pacedDelayMicroseconds / 1000) ms "
                    + "pause between reports: \(pacedError)" + Self.replyLossHint(pacedError, transport: transport))
                client.drain()
                return
            default:
                break
            }
        }
        switch attempt {
        case .success(let result):
            echo = result
            if let mismatch = result.firstMismatch {
                failures.append("\(name): the echo differs from byte \(mismatch) on")
            }
        case .failure(let error):
            failures.append("\(name): \(error)" + Self.replyLossHint(error, transport: transport))
            client.drain()
        }
    }

    /// When the reply, not the request, lost reports: hidraw keeps at most 64 input reports per
    /// reader and drops what comes while they are full.
    static func replyLossHint(_ error: CTAPHIDClientError, transport: String) -> String {
        guard transport == "hidraw" else { return "" }
        switch error {
        case .malformedReply, .noReply(_, _, true, _):
            return " (the reply lost reports on the way back: hidraw buffers at most 64 input reports per reader, "
                + "so this reader fell behind the device; on a loaded or emulated machine this can happen to any client)"
        default:
            return ""
        }
    }

    /// One PING of `payload`, timed, compared byte for byte.
    static func echo(_ payload: [UInt8], client: CTAPHIDClient,
                     clock: () -> UInt64) -> Result<Echo, CTAPHIDClientError> {
        let started = clock()
        do {
            let echoed = try client.ping(payload)
            let micros = Int((clock() &- started) / 1_000)
            let mismatch = echoed == payload
                ? nil : (payload.indices.first { $0 >= echoed.count || echoed[$0] != payload[$0] } ?? payload.count)
            return .success(Echo(bytes: payload.count, microseconds: micros, firstMismatch: mismatch))
        } catch {
            return .failure(error)
        }
    }

    /// Errors that mean part of a multi-report request never arrived: the device saw a gap
    /// (ERR_INVALID_SEQ), waited for the rest in vain (ERR_MSG_TIMEOUT), or never saw the start.
    static func losesReports(_ error: CTAPHIDClientError) -> Bool {
        switch error {
        case .deviceError(_, let code):
            return code == CTAPHIDError.invalidSequence.rawValue || code == CTAPHIDError.messageTimeout.rawValue
        case .noReply:
            return true
        default:
            return false
        }
    }

    /// Nearest-rank percentile of a sorted, non-empty list.
    static func nearestRank(_ sorted: [Int], percent: Int) -> Int {
        let rank = (sorted.count * percent + 99) / 100
        return sorted[max(0, min(sorted.count - 1, rank - 1))]
    }

    // MARK: - Rendering

    public var text: String {
        var lines = ["Probing \(target)"]
        func row(_ label: String, _ value: String) {
            lines.append(label.padding(toLength: 18, withPad: " ", startingAt: 0) + value)
        }
        if let response = initResponse {
            let version = response.deviceVersion.map(String.init).joined(separator: ".")
            let capabilities = response.capabilityNames.isEmpty ? "none" : response.capabilityNames.joined(separator: ", ")
            row("CTAPHID INIT", "channel \(hexChannel(response.channel)), protocol \(response.protocolVersion), "
                + "device version \(version)")
            row("", "capabilities \(capabilities) (0x\(hexByte(response.capabilities)))"
                + "; CTAP1/U2F MSG \(response.supportsMSG ? "supported" : "not supported")")
        }
        if let ping {
            row("PING", "\(ping.count) round trips of \(ping.payloadBytes) bytes: min \(ping.minimumMicroseconds) µs, "
                + "median \(ping.medianMicroseconds) µs, p99 \(ping.p99Microseconds) µs")
        }
        if let echo {
            row("PING \(echo.bytes) B", echo.firstMismatch == nil
                ? "echoed byte for byte in \(echo.microseconds) µs (\(echo.reports) reports each way"
                    + (echo.paced ? "; only with a pause between reports)" : ")")
                : "echo DIFFERS from byte \(echo.firstMismatch!)")
        }
        if let winked {
            row("WINK", winked ? "ok" : "skipped: \(winkNote ?? "")")
        }
        if let getInfo {
            lines.append("authenticatorGetInfo")
            lines.append(GetInfoFormatter.text(getInfo))
        } else if let getInfoNote {
            row("getInfo", "skipped: \(getInfoNote)")
        }
        for warning in warnings {
            lines.append("WARNING  \(warning)")
        }
        for failure in failures {
            lines.append("FAILED  \(failure)")
        }
        return lines.joined(separator: "\n")
    }

    public var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("target", .string(target)),
            ("transport", .string(transport)),
            ("ok", .bool(succeeded)),
            ("error", .optional(failure)),
            ("failures", .array(failures.map(JSONValue.string))),
            ("warnings", .array(warnings.map(JSONValue.string))),
        ]
        if let response = initResponse {
            members.append(("init", .object([
                ("channel", .string(hexChannel(response.channel))),   // as every command writes a channel
                ("protocolVersion", .int(Int(response.protocolVersion))),
                ("deviceVersion", .string(response.deviceVersion.map(String.init).joined(separator: "."))),
                ("capabilities", .int(Int(response.capabilities))),
                ("capabilityNames", .array(response.capabilityNames.map(JSONValue.string))),
                ("wink", .bool(response.supportsWink)),
                ("cbor", .bool(response.supportsCBOR)),
                ("msg", .bool(response.supportsMSG)),
            ])))
        } else {
            members.append(("init", .null))
        }
        members.append(("ping", ping.map { ping in
            .object([
                ("count", .int(ping.count)), ("payloadBytes", .int(ping.payloadBytes)),
                ("minMicroseconds", .int(ping.minimumMicroseconds)),
                ("medianMicroseconds", .int(ping.medianMicroseconds)),
                ("p99Microseconds", .int(ping.p99Microseconds)),
            ])
        } ?? .null))
        members.append(("echo", echo.map { echo in
            .object([
                ("bytes", .int(echo.bytes)), ("matched", .bool(echo.firstMismatch == nil)),
                ("firstMismatch", .optional(echo.firstMismatch)), ("microseconds", .int(echo.microseconds)),
                ("paced", .bool(echo.paced)),
            ])
        } ?? .null))
        members.append(("wink", winked.map { winked in
            .object([("done", .bool(winked)), ("note", .optional(winkNote))])
        } ?? .null))
        members.append(("getInfo", getInfo.map(GetInfoFormatter.json) ?? .null))
        if let getInfoNote { members.append(("getInfoNote", .string(getInfoNote))) }
        return .object(members)
    }
}

extension CTAPHIDPacket {
    /// How many reports a message of `length` bytes takes (CTAP 2.1 §11.2.4).
    static func reportsNeeded(for length: Int) -> Int {
        length <= initializationDataSize ? 1 : 1 + (length - initializationDataSize + continuationDataSize - 1) / continuationDataSize
    }
}
