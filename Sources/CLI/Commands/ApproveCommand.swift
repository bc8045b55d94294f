import Authenticator
import FIDOClient
import CredentialStore
import Foundation
import KeyService
import Presence
import Encoding

/// `latchkey approve` / `latchkey deny` / `latchkey presence status`: answer (or look at) the
/// presence requests of a key run with `--presence control`, through its control socket.
///
/// An answer names what it answers (`ControlPresence.Target`): `--rp ID` the pending or next
/// request of that RP (waiting up to `--timeout`, default 30 s), `--request N` the pending
/// request `presence status` shows as N, neither the request pending now. They print what they
/// answered and exit 0; exit 1 if nothing took the answer.
public enum ApproveCommand {
    static func answerOptions(verb: String) -> [CommandSpec.Option] {
        [
            .init("name", value: "NAME", help: "The key's name, as given to `latchkey serve --name` (default: default)."),
            .init("control", value: "PATH", help: "The key's control socket (default: $XDG_RUNTIME_DIR/latchkey/<name>.control, "
                  + "or ~/.cache/latchkey/run-<host>/<name>.control)."),
            .init("rp", value: "RP_ID", help: "\(verb.capitalized) only a request of this RP (a U2F one: application parameter "
                  + "SHA-256(RP_ID)), pending or still to come."),
            .init("request", value: "N", help: "\(verb.capitalized) only the pending request N (`latchkey presence status` shows it)."),
            .init("timeout", value: "SECONDS", help: "With --rp: how long to wait for that RP's request (default: 30)."),
            CredentialsCommand.jsonOption,
        ]
    }

    public static let approveSpec = CommandSpec(
        name: "approve",
        abstract: "Approve a presence request of a key run with --presence control: the pending one, request N, or RP_ID's.",
        options: answerOptions(verb: "approve"))

    public static let denySpec = CommandSpec(
        name: "deny",
        abstract: "Deny a presence request of a key run with --presence control: the pending one, request N, or RP_ID's.",
        options: answerOptions(verb: "deny"))

    public static let presenceSpec = CommandSpec(
        name: "presence",
        abstract: "`presence status`: show the presence request a --presence control key is waiting on.",
        positionals: ["status"], minimumPositionals: 1,
        options: Array(answerOptions(verb: "answer").prefix(2)) + [CredentialsCommand.jsonOption])

    public struct Options: Equatable, Sendable {
        public var controlPath: String
        /// No --control: the directory must be private (`ControlClient.connect`).
        public var controlPathIsDefault = false
        public var timeoutMilliseconds: UInt64 = 30_000
        public var rpID: String?
        public var requestID: UInt64?
        public var json = false
    }

    public static func options(from parsed: ParsedArguments,
                               environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Options {
        let name = parsed.value("name") ?? "default"
        guard StoreLocation.isValidName(name) else {
            throw UsageError("invalid --name '\(name)': use letters, digits, '-', '_' or '.'")
        }
        var options = Options(controlPath: parsed.value("control") ?? ControlSocket.defaultPath(name: name, environment: environment))
        options.controlPathIsDefault = parsed.value("control") == nil
        if let text = parsed.value("timeout") {
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 3_600 else {
                throw UsageError("invalid --timeout '\(text)': give seconds, 0 to 3600")
            }
            options.timeoutMilliseconds = UInt64((seconds * 1_000).rounded())
        }
        options.rpID = parsed.value("rp")
        if let rpID = options.rpID, rpID.isEmpty || rpID.utf8.count > 253 {
            throw UsageError("invalid --rp '\(rpID)': give an RP ID such as example.com")
        }
        if let text = parsed.value("request") {
            guard let id = UInt64(text), id > 0 else { throw UsageError("invalid --request '\(text)': give the number `presence status` shows") }
            options.requestID = id
        }
        if options.rpID != nil && options.requestID != nil { throw UsageError("give --rp or --request, not both") }
        options.json = parsed.flag("json")
        return options
    }

    /// `approve` or `deny`; returns the exit status.
    public static func run(_ decision: ControlPresence.Decision, _ options: Options) -> Int32 {
        let request = ControlRequest(action: decision.rawValue, timeoutMilliseconds: options.timeoutMilliseconds,
                                     rpID: options.rpID, requestID: options.requestID)
        // The key answers "none" at the timeout (at most 2 s later for a held U2F answer).
        let replyTimeout = Int32(clamping: options.timeoutMilliseconds + ControlPresence.defaultHoldMilliseconds + 5_000)
        let response: ControlResponse
        do {
            response = try ControlClient.exchange(request, path: options.controlPath, pathIsDefault: options.controlPathIsDefault,
                                                  replyTimeoutMilliseconds: replyTimeout)
        } catch {
            printError(error.description)
            return 1
        }
        switch response.result {
        case "approved", "denied":
            if options.json {
                Console.out(JSONValue.object([("result", .string(response.result)), ("operation", .optional(response.operation)),
                                        ("rpId", .optional(response.rpID)), ("user", .optional(response.user)),
                                        ("request", response.requestID.map { .int(Int($0)) } ?? .null)]).rendered)
                return 0
            }
            var text = "\(response.result): " + DisplayText.request(response.operation ?? "a request", rpID: response.rpID,
                                                                   userName: response.user)
            if let id = response.requestID { text += " (request \(id))" }
            Console.out(text)
            return 0
        case "none":
            Console.err("latchkey \(decision.rawValue): \(response.message ?? "no presence request came")")
            return 1
        default:
            printError(response.message ?? "the key answered '\(response.result)'")
            return 1
        }
    }

    /// `presence status`; returns the exit status.
    public static func runStatus(_ parsed: ParsedArguments,
                                 environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Int32 {
        guard parsed.positionals.first == "status" else {
            throw UsageError("unknown presence command '\(parsed.positionals.first ?? "")': use `latchkey presence status`")
        }
        let options = try options(from: parsed, environment: environment)
        let response: ControlResponse
        do {
            response = try ControlClient.exchange(ControlRequest(action: "status"), path: options.controlPath,
                                                  pathIsDefault: options.controlPathIsDefault,
                                                  replyTimeoutMilliseconds: 5_000)
        } catch {
            printError(error.description)
            return 1
        }
        guard response.result == "status" else {
            printError(response.message ?? "the key answered '\(response.result)'")
            return 1
        }
        if options.json {
            let pending = response.pending.map { pending in
                JSONValue.object([("request", pending.id.map { .int(Int($0)) } ?? .null), ("operation", .string(pending.operation)),
                                  ("rpId", .optional(pending.rpID)), ("user", .optional(pending.user)),
                                  ("waitingMs", pending.waitingMilliseconds.map { .int(Int($0)) } ?? .null)])
            }
            Console.out(JSONValue.object([("pending", pending ?? .null), ("waitingAnswers", .int(response.waitingAnswers ?? 0))]).rendered)
            return 0
        }
        if let pending = response.pending {
            var text = "pending: " + (pending.id.map { "request \($0): " } ?? "")
                + DisplayText.request(pending.operation, rpID: pending.rpID, userName: pending.user)
            if let waited = pending.waitingMilliseconds { text += String(format: " (waiting %.1f s)", Double(waited) / 1_000) }
            Console.out(text)
        } else {
            Console.out("no presence request pending")
        }
        if let waiting = response.waitingAnswers, waiting > 0 { Console.out("answers waiting for a request: \(waiting)") }
        return 0
    }

    private static func printError(_ message: String) {
        Console.error(message)
    }
}
