import CredentialStore
import FIDOClient
import Foundation
import Encoding

/// `latchkey doctor`: checks the machine's setup for running keys — uhid,
/// the udev rule and group, hidraw access, a running key, the store, the user
/// service — and says for each what to fix. Exit 0 unless a check FAILs.
public enum DoctorCommand {
    public static let spec = CommandSpec(
        name: "doctor",
        abstract: "Check uhid, udev rules, device access, running keys and the store; say what to fix.",
        options: [
            .init("name", value: "NAME", help: "Check the store of key NAME (default: default)."),
            .init("store", value: "DIR", help: "Check the store in DIR instead."),
            .init("socket", value: "PATH", help: "Also look for a key listening on this socket."),
            .init("ci", help: "Judge a CI or container setup, whose keys run on the socket transport: uhid, udev rules, "
                  + "the user service and the browser bridge are not needed (automatic when CI is set, or when there is "
                  + "no uhid and a key answers on a socket)."),
            .init("json", help: "Print the checks as JSON."),
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        let name = parsed.value("name") ?? "default"
        guard StoreLocation.isValidName(name) else {
            throw UsageError("invalid --name '\(name)': use letters, digits, '-', '_' or '.'")
        }
        let directory = StoreLocation.directory(explicit: parsed.value("store"), name: name)
        var facts = DoctorFacts.gather(storeDirectory: directory, extraSockets: parsed.value("socket").map { [$0] } ?? [])
        let environment = ProcessInfo.processInfo.environment
        facts.socketSetup = parsed.flag("ci") || !(environment["CI"] ?? "").isEmpty && !facts.uhidNodeExists
            || (!facts.uhidNodeExists && !facts.liveSockets.isEmpty)
        let checks = DoctorCheck.evaluate(facts)
        Console.out(parsed.flag("json") ? json(checks, facts: facts).rendered : text(checks, facts: facts))
        return exitStatus(checks)
    }

    /// 0 when nothing FAILs, else 1.
    public static func exitStatus(_ checks: [DoctorCheck]) -> Int32 {
        checks.contains { $0.status == .fail } ? 1 : 0
    }

    public static func text(_ checks: [DoctorCheck], facts: DoctorFacts) -> String {
        let root = facts.isRoot && facts.userName != "root" ? " (as root)" : ""
        var lines = ["latchkey doctor: user \(facts.userName)\(root), kernel \(facts.kernelRelease)", ""]
        let width = (checks.map(\.title.count).max() ?? 0) + 2
        for check in checks {
            lines.append(check.status.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)
                + check.title.padding(toLength: width, withPad: " ", startingAt: 0) + check.detail)
            if let fix = check.fix, check.status != .ok {
                lines.append(String(repeating: " ", count: 6 + width) + "fix: " + fix)
            }
        }
        lines.append("")
        lines.append(summary(checks))
        return lines.joined(separator: "\n")
    }

    public static func json(_ checks: [DoctorCheck], facts: DoctorFacts) -> JSONValue {
        .object([
            ("user", .string(facts.userName)),
            ("kernel", .string(facts.kernelRelease)),
            ("ok", .bool(exitStatus(checks) == 0)),
            ("checks", .array(checks.map { check in
                .object([
                    ("id", .string(check.id)),
                    ("title", .string(check.title)),
                    ("status", .string(check.status.rawValue)),
                    ("detail", .string(check.detail)),
                    ("fix", check.status == .ok ? .null : .optional(check.fix)),
                ])
            })),
            ("summary", .string(summary(checks))),
        ])
    }

    static func summary(_ checks: [DoctorCheck]) -> String {
        let count = { (status: DoctorCheck.Status) in checks.filter { $0.status == status }.count }
        let warnings = count(.warn), failures = count(.fail)
        return "\(count(.ok)) OK, \(warnings) warning\(warnings == 1 ? "" : "s"), \(failures) failure\(failures == 1 ? "" : "s")"
    }
}
