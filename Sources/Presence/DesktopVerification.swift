import Authenticator
import Foundation
import SystemIO

/// Built-in user verification by the desktop (issue 14): each attempt runs one program that asks
/// the user through the desktop's own machinery and says by its exit whether they are who is
/// logged in — `pkcheck` (polkit: the login password, or a fingerprint, in the desktop's own
/// authentication agent) or `fprintd-verify` (a finger on the reader, through fprintd). The key
/// counts failed matches against uvRetries like a YubiKey Bio's sensor; a dismissed dialog, no
/// agent or no reader declines without spending a retry. The request's timeout closes the
/// program (SIGINT: polkit cancels the dialog when its caller goes, fprintd stops verifying).
public final class ProgramVerification: UserVerification, @unchecked Sendable {
    /// What one finished run means.
    public typealias Interpretation = @Sendable (ProgramExit) -> (VerificationResult, note: String?)

    public let name: String
    public let modality: UInt32
    let executable: String
    let arguments: @Sendable (VerificationRequest) -> [String]
    let interpret: Interpretation
    let runner: ProgramRunner
    let logger: Logger
    static let pollMicroseconds: UInt32 = 20_000

    public init(name: String, executable: String, modality: UInt32, runner: ProgramRunner = ChildProcessRunner(),
                logger: Logger, arguments: @escaping @Sendable (VerificationRequest) -> [String],
                interpret: @escaping Interpretation) {
        self.name = name; self.executable = executable; self.modality = modality; self.runner = runner
        self.logger = logger; self.arguments = arguments; self.interpret = interpret
    }

    public func verifyUser(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult {
        if cancellation.isCancelled { return .cancelled }
        logger.info("user verification by \(name): \(DisplayText.request(request.purpose.rawValue, rpID: request.rpID, userName: request.userName))")
        let process: RunningProgram
        do {
            process = try runner.start(executable: executable, arguments: arguments(request))
        } catch {
            logger.error("user verification by \(name): \(error.description)")
            return .declined
        }
        let deadline = MonotonicClock.milliseconds() + request.timeoutMilliseconds
        while true {
            if let exit = process.exit {
                let (result, note) = interpret(exit)
                if let note { logger.warning("user verification by \(name): \(note)") }
                logger.debug("user verification by \(name): \(result)")
                return result
            }
            if cancellation.isCancelled {
                process.close()
                return .cancelled
            }
            if MonotonicClock.milliseconds() >= deadline {
                process.close()
                return .timedOut
            }
            usleep(Self.pollMicroseconds)
        }
    }
}

/// `--uv polkit`: the action `org.latchkey.verify-user` (udev/org.latchkey.verify-user.policy,
/// placed by scripts/install) checked for this very process with user interaction allowed, so
/// the desktop's polkit agent asks for the user's own password (auth_self, never kept: every
/// verification asks, as a sensor does). The key passes no details (site, account): polkit lets
/// only root or the action's owner pass them, so the dialog's text is the action's, and the key's
/// log and presence prompt name the site.
public enum PolkitVerification {
    public static let actionID = "org.latchkey.verify-user"

    public static func make(executable: String, logger: Logger, runner: ProgramRunner = ChildProcessRunner(),
                            processID: Int32 = getpid()) -> ProgramVerification {
        let subject = subject(processID: processID)
        return ProgramVerification(name: "polkit", executable: executable,
                                   // The user's own password in the desktop's dialog: a passcode the
                                   // authenticator (this machine) takes itself.
                                   modality: UserVerificationMethod.passcodeInternal, runner: runner, logger: logger,
                                   arguments: { _ in ["--action-id", actionID, "--process", subject, "--allow-user-interaction"] },
                                   interpret: interpret)
    }

    /// pkcheck's exit (pkcheck(1)): 0 authorized; 1 not authorized (the authentication failed);
    /// 2 no authentication agent; 3 dismissed; else an error (the action not installed, no polkitd).
    @Sendable public static func interpret(_ exit: ProgramExit) -> (VerificationResult, note: String?) {
        let said = exit.errorOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        switch exit.status {
        case 0: return (.verified, nil)
        case 1: return (.notVerified, nil)
        case 2: return (.declined, "no polkit authentication agent answers for this session (\(said)): run the key inside the "
                            + "desktop session, or start one (pkttyagent on a terminal)")
        case 3: return (.declined, nil)
        default:
            let fix = said.contains("does not exist") || said.contains(actionID)
                ? "; is udev/org.latchkey.verify-user.policy installed in /usr/share/polkit-1/actions (scripts/install)?" : ""
            return (.declined, "pkcheck failed (exit \(exit.status)): \(said)\(fix)")
        }
    }

    /// `pid,start-time,uid`: the process named beyond doubt (a bare PID could be reused).
    static func subject(processID: Int32) -> String {
        guard let stat = try? String(contentsOfFile: "/proc/\(processID)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return "\(processID)" }
        // Fields after the command's ")": state is field 3, starttime field 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19 else { return "\(processID)" }
        return "\(processID),\(fields[19]),\(getuid())"
    }
}

/// `--uv fprintd`: `fprintd-verify` (Debian fprintd) for the user running the key, any enrolled
/// finger. A no-match spends a retry; no reader, no enrolled finger, or a reader error declines.
public enum FprintdVerification {
    public static func make(executable: String, logger: Logger, runner: ProgramRunner = ChildProcessRunner(),
                            userName: String? = ProcessInfo.processInfo.environment["USER"]) -> ProgramVerification {
        ProgramVerification(name: "fprintd", executable: executable, modality: UserVerificationMethod.fingerprintInternal,
                            runner: runner, logger: logger,
                            arguments: { _ in ["-f", "any"] + (userName.map { [$0] } ?? []) }, interpret: interpret)
    }

    /// fprintd-verify prints `Verify result: verify-match (done)` and the like; it exits 0 only on a match.
    @Sendable public static func interpret(_ exit: ProgramExit) -> (VerificationResult, note: String?) {
        let results = exit.output.split(whereSeparator: \.isNewline).compactMap { line -> Substring? in
            guard let range = line.range(of: "Verify result: ") else { return nil }
            return line[range.upperBound...].split(separator: " ").first
        }
        if exit.status == 0, results.last == "verify-match" { return (.verified, nil) }
        switch results.last {
        case "verify-no-match": return (.notVerified, nil)
        case "verify-match": return (.notVerified, "fprintd-verify said verify-match but exited \(exit.status)")
        case let other?:
            return (.declined, "the reader gave \(other)")
        case nil:
            let said = (exit.output + exit.errorOutput).trimmingCharacters(in: .whitespacesAndNewlines)
            return (.declined, "fprintd-verify gave no result (exit \(exit.status)): \(said.prefix(300)); is a reader present and a "
                        + "finger enrolled (fprintd-enroll)?")
        }
    }
}
