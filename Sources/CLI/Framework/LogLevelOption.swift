import SystemIO

/// `--log-level LEVEL`, one option for every command that runs until stopped (serve, rig,
/// proxy, uhid-broker).
extension CommandSpec.Option {
    static let logLevel = CommandSpec.Option("log-level", value: "LEVEL", help: "error, warning, info, debug or trace (default: info).")
}

extension ParsedArguments {
    /// The `--log-level` given, or nil; a name that is not a level is a usage error.
    func logLevel() throws(UsageError) -> Logger.Level? {
        guard let name = value("log-level") else { return nil }
        guard let level = Logger.Level(name: name) else {
            throw UsageError("invalid --log-level '\(name)': use error, warning, info, debug or trace")
        }
        return level
    }
}
