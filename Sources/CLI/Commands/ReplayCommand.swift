import CTAPHID
import FIDOClient
import Foundation
import KeyService
import LinuxHID
import Trace
import DeviceTools
import SystemIO
import Encoding

/// `latchkey replay TRACE [DEVICE | --socket PATH]`: sends the client side of a recorded session
/// to a key again and reports where its answers differ from the recorded key's (TraceReplay
/// says what counts as a difference). Exit 0: the same decisions throughout; 1: differences,
/// or the key could not be reached.
public enum ReplayCommand {
    public static let spec = CommandSpec(
        name: "replay",
        abstract: "Replay a trace's requests against a key and report where its answers differ.",
        positionals: ["trace", "device"],
        options: [
            .init("socket", value: "PATH", help: "Replay against a key on the socket transport instead of a hidraw device."),
            .init("connection", value: "N", help: "Which client of the trace to replay (default: the first one in it)."),
            .init("timeout", value: "MS", help: "How long to wait for each answer, in milliseconds (default: 5000)."),
            .init("json", help: "Print each exchange and its differences as JSON."),
            .init("allow-writes", help: "Also send what changes what the key holds: discoverable credentials made, large blobs "
                  + "written, credentials renamed or deleted, the PIN set or changed, config (skipped by default, with the "
                  + "requests that depend on them: a replay never writes to a key unless told to)."),
            .init("include-harmful", help: "Send everything: what --allow-writes sends, and also reset and clientPIN requests "
                  + "whose PIN was blanked (each a wrong PIN)."),
            .init("as-device", help: "Be the recorded key instead: answer clients with the recording's answers, in order "
                  + "(reproduce a client's behaviour without the key). Runs until Ctrl-C."),
            .init("transport", value: "uhid|socket:PATH", help: "With --as-device: where the device appears (default: uhid)."),
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        guard let tracePath = parsed.positionals.first else { throw UsageError("give the trace file to replay") }
        let connection = try parsed.value("connection").map { (text) throws(UsageError) -> Int in
            guard let number = Int(text), number >= 0 else { throw UsageError("invalid --connection '\(text)': a number, e.g. 0") }
            return number
        }
        let timeout = try parsed.integer("timeout", default: 5_000, range: 1...600_000)
        let contents: TraceFile.Contents
        do {
            contents = try TraceFile.read(path: tracePath)
        } catch {
            printError(error.description)
            return 1
        }
        let exchanges = TraceReplay.exchanges(contents, connection: connection)
        guard !exchanges.isEmpty else {
            printError("\(tracePath) holds no complete request to replay")
            return 1
        }
        if parsed.flag("as-device") { return try asDevice(exchanges, tracePath: tracePath, parsed: parsed) }
        if parsed.value("transport") != nil { throw UsageError("--transport goes with --as-device") }
        guard let selection = try DeviceArguments.select(parsed, argument: 1) else { return 1 }
        let link: ClientReportTransport
        do {
            link = try selection.open()
        } catch {
            printError(error.description)
            return 1
        }
        let allowance: TraceReplay.Allowance = parsed.flag("include-harmful") ? .everything : parsed.flag("allow-writes") ? .writes : .readOnly
        let results = replay(exchanges, link: link, timeoutMilliseconds: Int32(timeout), allowance: allowance)
        let differing = results.filter { !$0.differences.isEmpty }.count
        let skipped = results.filter { $0.skipped != nil }.count
        if parsed.flag("json") {
            Console.out(JSONValue.object([
                ("trace", .string(tracePath)), ("key", .string(selection.label)), ("exchanges", .int(results.count)),
                ("differing", .int(differing)), ("skipped", .int(skipped)),
                ("results", .array(results.map { result in
                    .object([("request", .string(result.request)), ("channel", .string(hexChannel(result.channel))),
                             ("differences", .array(result.differences.map(JSONValue.string))),
                             ("skipped", .optional(result.skipped)),
                             ("redactedInRecording", .array(result.redactedFields.map(JSONValue.string)))])
                })),
            ]).rendered)
        } else {
            Console.out("replaying \(results.count) request\(results.count == 1 ? "" : "s") of \(tracePath) against \(selection.label)")
            for result in results {
                let mark = result.skipped != nil ? "skipped" : result.differences.isEmpty ? "same" : "DIFFERS"
                Console.out("\(mark.padding(toLength: 8, withPad: " ", startingAt: 0)) \(hexChannel(result.channel))  \(result.request)")
                if let skipped = result.skipped { Console.out("           \(skipped)") }
                for difference in result.differences { Console.out("           \(difference)") }
                if !result.differences.isEmpty, !result.redactedFields.isEmpty {
                    Console.out("           (the recording blanked \(result.redactedFields.joined(separator: ", ")): sent as zeros, "
                        + "so a different answer may come from that alone)")
                }
            }
            Console.out("\(results.count - differing - skipped) same, \(differing) different" + (skipped > 0 ? ", \(skipped) skipped" : ""))
        }
        return differing == 0 ? 0 : 1
    }

    struct Result {
        var request: String
        var channel: UInt32
        var differences: [String]
        var redactedFields: [String]
        /// Why it was not sent (TraceReplay.harm), if it was not.
        var skipped: String?
    }

    /// Sends each exchange on a channel of its own (one INIT for every channel the recording
    /// used) and compares the answers. A credential ID the recorded key made is replaced by the
    /// replayed key's in later requests.
    static func replay(_ exchanges: [TraceReplay.Exchange], link: ClientReportTransport,
                       timeoutMilliseconds: Int32, allowance: TraceReplay.Allowance = .readOnly) -> [Result] {
        var clients: [UInt32: CTAPHIDClient] = [:]
        var credentialIDs: [[UInt8]: [UInt8]] = [:]
        var results: [Result] = []
        let skipReasons = TraceReplay.skipReasons(exchanges, allowance: allowance)
        for (exchange, skipReason) in zip(exchanges, skipReasons) {
            var result = Result(request: TraceReplay.describe(exchange), channel: exchange.channel, differences: [],
                                redactedFields: exchange.redactedFields)
            defer { results.append(result) }
            guard let recorded = exchange.response else {
                result.differences = ["not replayed: the recording has no answer to it"]
                continue
            }
            if let skipReason {
                // Which option would send it (a dependent says so itself).
                let option = TraceReplay.harm(exchange) == nil ? ""
                    : TraceReplay.allowed(exchange, .writes) ? " (--allow-writes sends it)" : " (--include-harmful sends it)"
                result.skipped = skipReason + option
                continue
            }
            // INIT on the broadcast channel: the replay allocates its own channel; the recorded
            // answer names the channel later requests use.
            if exchange.command == CTAPHIDCommand.initialize.rawValue {
                let client = CTAPHIDClient(link: link, replyTimeoutMilliseconds: timeoutMilliseconds)
                do {
                    let answer = try client.initialize()
                    var payload = Array(exchange.payload.prefix(8)) + channelBytes(answer.channel)
                    payload += [answer.protocolVersion] + answer.deviceVersion + [answer.capabilities]
                    result.differences = TraceReplay.differences(recorded: recorded,
                                                                 replayed: .init(command: exchange.command, payload: payload))
                    if recorded.payload.count >= 12 {
                        let allocated = recorded.payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                        clients[allocated] = client
                    }
                } catch {
                    result.differences = ["INIT failed: \(error.description)"]
                }
                continue
            }
            guard let command = CTAPHIDCommand(rawValue: exchange.command) else {
                result.differences = ["not replayed: a vendor command"]
                continue
            }
            let client: CTAPHIDClient
            if let existing = clients[exchange.channel] {
                client = existing
            } else {
                // The recording began after this channel's INIT: the replay makes one.
                let fresh = CTAPHIDClient(link: link, replyTimeoutMilliseconds: timeoutMilliseconds)
                do { try fresh.initialize() } catch {
                    result.differences = ["INIT failed: \(error.description)"]
                    continue
                }
                clients[exchange.channel] = fresh
                client = fresh
            }
            let payload = command == .cbor ? TraceReplay.substituting(credentialIDs, in: exchange.payload) : exchange.payload
            let replayed: TraceReplay.Message
            do {
                replayed = .init(command: command.rawValue, payload: try client.transact(command, payload: payload))
            } catch let CTAPHIDClientError.deviceError(_, code) {
                replayed = .init(command: CTAPHIDCommand.error.rawValue, payload: [code])
            } catch {
                result.differences = ["no answer: \(error.description)"]
                continue
            }
            result.differences = TraceReplay.differences(recorded: recorded, replayed: replayed)
            if command == .cbor, exchange.payload.first == 0x01,
               let old = TraceReplay.credentialID(inMakeCredentialAnswer: recorded.payload),
               let new = TraceReplay.credentialID(inMakeCredentialAnswer: replayed.payload) {
                credentialIDs[old] = new
            }
        }
        return results
    }

    /// `--as-device`: a uhid device (or socket) that answers with the recording (RecordedKey).
    static func asDevice(_ exchanges: [TraceReplay.Exchange], tracePath: String,
                         parsed: ParsedArguments) throws(UsageError) -> Int32 {
        if parsed.positionals.count > 1 || parsed.value("socket") != nil {
            throw UsageError("--as-device is the key: give no DEVICE or --socket (--transport says where it appears)")
        }
        let logger = Logger(level: .info)
        let name = (tracePath as NSString).lastPathComponent
        let transport: ReportTransport
        do {
            switch parsed.value("transport") ?? "uhid" {
            case "uhid":
                var identity = UHIDDevice.Identity.latchkey(name: "replay")
                identity.name = "Latchkey replay of \(name)"
                identity.uniq = "latchkey-replay:" + name
                transport = try UHIDDevice(identity: identity)
                logger.info("replaying \(tracePath) as the uhid device \"\(identity.name)\" (uniq \(identity.uniq))")
            case let value where value.hasPrefix("socket:") && value.count > 7:
                let path = String(value.dropFirst(7))
                transport = try SocketTransport(path: path)
                logger.info("replaying \(tracePath) on socket \(path)")
            case let value:
                throw UsageError("invalid --transport '\(value)': use uhid or socket:PATH")
            }
        } catch let error as UsageError {
            throw error
        } catch {
            logger.error("\(error)")
            return 1
        }
        return RecordedKey.serve(RecordedAnswers(exchanges), on: transport, logger: logger)
    }

    static func channelBytes(_ channel: UInt32) -> [UInt8] {
        [UInt8(channel >> 24), UInt8(channel >> 16 & 0xFF), UInt8(channel >> 8 & 0xFF), UInt8(channel & 0xFF)]
    }

    static func printError(_ message: String) {
        Console.error(message)
    }
}
