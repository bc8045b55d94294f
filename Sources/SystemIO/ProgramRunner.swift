import Dispatch
import Glibc

/// How a program the key ran ended (notify-send, pkcheck, fprintd-verify).
public struct ProgramExit: Equatable, Sendable {
    public var status: Int32
    /// Standard output (notify-send: the chosen action's name, or nothing).
    public var output: String
    public var errorOutput: String

    public init(status: Int32, output: String, errorOutput: String = "") {
        self.status = status; self.output = output; self.errorOutput = errorOutput
    }
}

/// A program the key runs, while it runs.
public protocol RunningProgram: AnyObject, Sendable {
    /// nil while it runs.
    var exit: ProgramExit? { get }
    /// Asks it to end (SIGINT: notify-send closes its notification) and makes sure it does.
    func close()
}

/// Why a program could not be started.
public struct ProgramStartFailure: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Starts the programs the key runs: the desktop's presence and verification tools. Tests pass
/// a fake; `ChildProcessRunner` is the real one.
public protocol ProgramRunner: Sendable {
    func start(executable: String, arguments: [String]) throws(ProgramStartFailure) -> RunningProgram
}

/// The real runner: `ChildProcess` (an empty signal mask, so notify-send's SIGINT handler runs
/// and closes its notification), output captured.
public struct ChildProcessRunner: ProgramRunner {
    public init() {}

    public func start(executable: String, arguments: [String]) throws(ProgramStartFailure) -> RunningProgram {
        do {
            return try ChildProgram(executable: executable, arguments: arguments)
        } catch {
            throw ProgramStartFailure("cannot run \(executable): \(error)")
        }
    }

    /// `executable --version`'s output, or nil if it cannot be run or does not end within 5 s.
    public static func version(of executable: String) -> String? {
        guard let child = try? ChildProcess(executable: executable, arguments: ["--version"]) else { return nil }
        let deadline = MonotonicClock.milliseconds() + 5_000
        while child.exit == nil, MonotonicClock.milliseconds() < deadline { usleep(5_000) }
        guard let exit = child.exit else {
            child.send(SIGKILL)
            return nil
        }
        return String(decoding: exit.output, as: UTF8.self)
    }

    /// The path of `command` as a shell finds it on PATH (`environment`'s, else this process's),
    /// but only in absolute directories: an empty or relative entry would run what the current
    /// directory holds. A command with a slash is taken as a path. nil when it is not there or
    /// not executable.
    public static func locate(_ command: String, environment: [String: String]? = nil) -> String? {
        if command.contains("/") { return access(command, X_OK) == 0 ? command : nil }
        let path = environment.map { $0["PATH"] } ?? getenv("PATH").map { String(cString: $0) }
        let directories = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").filter { $0.hasPrefix("/") }
        return directories.map { String($0) + "/" + command }.first { access($0, X_OK) == 0 }
    }
}

/// One program started by `ChildProcessRunner`.
final class ChildProgram: RunningProgram, @unchecked Sendable {
    private let child: ChildProcess

    init(executable: String, arguments: [String]) throws(Errno) {
        child = try ChildProcess(executable: executable, arguments: arguments)
    }

    var exit: ProgramExit? {
        child.exit.map { exit in
            ProgramExit(status: exit.status, output: String(decoding: exit.output, as: UTF8.self),
                        errorOutput: String(decoding: exit.errorOutput.prefix(2_000), as: UTF8.self))
        }
    }

    func close() {
        guard child.exit == nil else { return }
        child.send(SIGINT)   // notify-send closes its notification and exits; pkcheck and fprintd-verify end
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [child] in
            child.send(SIGKILL)
        }
    }
}
