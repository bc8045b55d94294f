import FIDOClient
import FIDOCrypto
import Foundation

/// Where a CLI command writes and what it may ask: standard output for results, standard error
/// for failures, the environment, and the terminal (nil when there is none). Tests pass
/// capturing closures and a scripted terminal.
public struct CommandIO: Sendable {
    public var out: @Sendable (String) -> Void
    public var err: @Sendable (String) -> Void
    /// The environment, without the PIN variables (in `pins`).
    public var environment: [String: String]
    /// `LATCHKEY_PIN` and `LATCHKEY_NEW_PIN`, when set (see `PINEnvironment`).
    var pins: [String: SecretBytes]
    public var terminal: (any UserTerminal)?
    /// Connects to a device for `--device`/`--socket` (tests connect to an in-process key).
    public var openDevice: @Sendable (DeviceSelection) throws(DeviceError) -> any CTAP2Link

    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void,
                environment: [String: String], terminal: (any UserTerminal)?,
                openDevice: @escaping @Sendable (DeviceSelection) throws(DeviceError) -> any CTAP2Link = { selection throws(DeviceError) in
                    try CTAPHIDLink.open(selection)
                }) {
        self.out = out
        self.err = err
        var environment = environment
        pins = PINEnvironment.split(&environment)
        self.environment = environment
        self.terminal = terminal
        self.openDevice = openDevice
    }

    /// The process's standard output and error, environment (the PINs `PINEnvironment.take`
    /// took out of it at start, in `LatchkeyCLI.runProcess`) and controlling terminal.
    public static var standard: CommandIO {
        var io = CommandIO(out: { Console.out($0) },
                           err: { Console.err($0) },
                           environment: ProcessInfo.processInfo.environment,
                           terminal: ControllingTerminal.open())
        io.pins.merge(PINEnvironment.values) { _, taken in taken }
        return io
    }

    /// `Error: message` on standard error; returns the runtime-failure status, 1.
    public func fail(_ message: String) -> Int32 {
        err("Error: \(message)")
        if Console.jsonErrors.withLock({ $0 }) { out(Console.errorDocument(message, usage: false)) }
        return 1
    }

    /// Asks `question` on the terminal. Without one: a usage error telling the user to pass
    /// `--yes` — a script must ask for a deletion explicitly.
    public func confirm(_ question: String) throws(UsageError) -> Bool {
        guard let terminal else {
            throw UsageError("no terminal to ask for confirmation on; pass --yes to go ahead without asking")
        }
        return terminal.confirm(question + " [y/N] ")
    }
}
