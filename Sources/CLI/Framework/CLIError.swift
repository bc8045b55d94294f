import FIDOClient

/// How a CLI command ends early: a usage error (`Error: …`, the usage line, exit 64) or a
/// runtime failure (`Error: …`, exit 1).
enum CLIError: Error {
    case usage(UsageError)
    case failure(String)

    static func usage(_ message: String) -> CLIError { .usage(UsageError(message)) }

    /// Runs a command body: failures are printed (exit 1), usage errors go to `latchkey`'s
    /// table, which prints them with the usage line (exit 64).
    static func run(_ io: CommandIO, _ body: () throws(CLIError) -> Int32) throws(UsageError) -> Int32 {
        do {
            return try body()
        } catch {
            switch error {
            case .usage(let usage): throw usage
            case .failure(let message): return io.fail(message)
            }
        }
    }
}

extension DeviceError {
    var cliError: CLIError { .failure(message) }
}
