import CredentialStore
import Foundation
import KeyService

/// `latchkey approve` / `latchkey deny` / `latchkey presence status`: answer (or look at) the
/// presence requests of a key run with `--presence control`, through its control socket.
///
/// `approve` and `deny` wait until a request is pending (up to `--timeout`, default 30 s),
/// answer it, print what they answered and exit 0; exit 1 if no request came. Which request
/// an answer applies to is `ControlPresence`'s rule.
public enum ApproveCommand {
    static func answerOptions(verb: String) -> [CommandSpec.Option] {
        [
            .init("name", value: "NAME", help: "The key's name, as given to `latchkey serve --name` (default: default)."),
            .init("control", value: "PATH", help: "The key's control socket (default: $XDG_RUNTIME_DIR/latchkey/<name>.control, "
                  + "or /tmp/latchkey-<uid>/<name>.control)."),
            .init("timeout", value: "SECONDS", help: "How long to wait for a request to \(verb) (default: 30; 0: only one already pending)."),
        ]
    }

    public static let approveSpec = CommandSpec(
        name: "approve",
        abstract: "Approve the pending (or next) presence request of a key run with --presence control.",
        options: answerOptions(verb: "approve"))

    public static let denySpec = CommandSpec(
        name: "deny",
        abstract: "Deny the pending (or next) presence request of a key run with --presence control.",
        options: answerOptions(verb: "deny"))

    public static let presenceSpec = CommandSpec(
        name: "presence",
        abstract: "`presence status`: show the presence request a --presence control key is waiting on.",
        positionals: ["status"], minimumPositionals: 1,
        options: Array(answerOptions(verb: "").prefix(2)))

    public struct Options: Equatable, Sendable {
        public var controlPath: String
        public var timeoutMilliseconds: UInt64 = 30_000
    }

    public static func options(from parsed: ParsedArguments,
                               environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Options {
        let name = parsed.value("name") ?? "default"
        guard StoreLocation.isValidName(name) else {
            throw UsageError("invalid --name '\(name)': use letters, digits, '-', '_' or '.'")
        }
        var options = Options(controlPath: parsed.value("control") ?? ControlSocket.defaultPath(name: name, environment: environment))
        if let text = parsed.value("timeout") {
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 3_600 else {
                throw UsageError("invalid --timeout '\(text)': give seconds, 0 to 3600")
            }
            options.timeoutMilliseconds = UInt64((seconds * 1_000).rounded())
        }
        return options
    }

    /// `approve` or `deny`; returns the exit status.
    public static func run(_ decision: ControlPresence.Decision, _ options: Options) -> Int32 {
        let request = ControlRequest(action: decision.rawValue, timeoutMilliseconds: options.timeoutMilliseconds)
        // The key answers "none" at the timeout (at most 2 s later for a held U2F answer).
        let replyTimeout = Int32(clamping: options.timeoutMilliseconds + ControlPresence.defaultHoldMilliseconds + 5_000)
        let response: ControlResponse
        do {
            response = try ControlClient.exchange(request, path: options.controlPath, replyTimeoutMilliseconds: replyTimeout)
        } catch {
            printError(error.description)
            return 1
        }
        switch response.result {
        case "approved", "denied":
            var text = "\(response.result): \(response.operation ?? "a request")"
            if let rpID = response.rpID { text += " at \(rpID)" }
            if let user = response.user, !user.isEmpty { text += " for \(user)" }
            print(text)
            return 0
        case "none":
            FileHandle.standardError.write(Data("latchkey \(decision.rawValue): \(response.message ?? "no presence request came")\n".utf8))
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
                                                  replyTimeoutMilliseconds: 5_000)
        } catch {
            printError(error.description)
            return 1
        }
        guard response.result == "status" else {
            printError(response.message ?? "the key answered '\(response.result)'")
            return 1
        }
        if let pending = response.pending {
            var text = "pending: \(pending.operation)"
            if let rpID = pending.rpID { text += " at \(rpID)" }
            if let user = pending.user, !user.isEmpty { text += " for \(user)" }
            if let waited = pending.waitingMilliseconds { text += String(format: " (waiting %.1f s)", Double(waited) / 1_000) }
            print(text)
        } else {
            print("no presence request pending")
        }
        if let waiting = response.waitingAnswers, waiting > 0 { print("answers waiting for a request: \(waiting)") }
        return 0
    }

    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
    }
}
