import Authenticator
import CredentialStore
import Foundation
import Trace
import LinuxHID

/// `latchkey serve`: run a key until SIGINT/SIGTERM; SIGHUP is a power cycle.
public enum ServeCommand {
    public static let spec = CommandSpec(
        name: "serve",
        abstract: "Run a FIDO2 security key (uhid by default, or a socket for rigs without /dev/uhid).",
        options: [
            .init("transport", value: "uhid|socket:PATH", help: "Where the key appears (default: uhid)."),
            .init("store", value: "DIR", help: "Store directory (default: $XDG_DATA_HOME/latchkey/<name>)."),
            .init("name", value: "NAME", help: "Key name: store subdirectory and device name (default: default)."),
            .init("presence", value: "auto|deny|prompt|notify|control",
                  help: "How a touch is given: prompt (ask on the terminal; the default), notify (a desktop "
                      + "notification with Approve/Deny), control (`latchkey approve` / `latchkey deny`), "
                      + "auto (approve all: test rigs only), deny (refuse all)."),
            .init("control", value: "PATH", help: "The control socket of --presence control (default: "
                  + "$XDG_RUNTIME_DIR/latchkey/<name>.control, or /tmp/latchkey-<uid>/<name>.control)."),
            .init("trace", value: "FILE", help: "Record every CTAPHID report in and out to FILE (mode 0600, secrets blanked); "
                  + "decode it with `latchkey trace FILE`."),
            .init("log-level", value: "LEVEL", help: "error, warning, info, debug or trace (default: info)."),
        ])

    /// The `--presence` choices.
    public static let presenceModes = ["auto", "deny", "prompt", "notify", "control"]

    public enum Transport: Equatable, Sendable {
        case uhid(path: String)
        case socket(path: String)
    }

    public struct Options: Equatable, Sendable {
        public var transport: Transport = .uhid(path: "/dev/uhid")
        public var storeDirectory: String
        public var name = "default"
        public var presence = "prompt"
        public var logLevel: Logger.Level = .info
        /// `--trace FILE`.
        public var tracePath: String?
        /// The control socket (`--presence control` only): `--control PATH` or the default.
        public var controlPath: String?
        /// Whether `controlPath` is the default one, whose directory `serve` creates private.
        public var controlPathIsDefault = false
    }

    public static func options(from parsed: ParsedArguments,
                               environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Options {
        let name = parsed.value("name") ?? "default"
        guard StoreLocation.isValidName(name) else {
            throw UsageError("invalid --name '\(name)': use letters, digits, '-', '_' or '.'")
        }
        var options = Options(storeDirectory: StoreLocation.directory(explicit: parsed.value("store"), name: name,
                                                                      environment: environment))
        options.name = name
        if let transport = parsed.value("transport") {
            if transport == "uhid" {
                options.transport = .uhid(path: environment["LATCHKEY_UHID_PATH"] ?? "/dev/uhid")
            } else if transport.hasPrefix("socket:"), transport.count > 7 {
                options.transport = .socket(path: String(transport.dropFirst(7)))
            } else {
                throw UsageError("invalid --transport '\(transport)': use uhid or socket:PATH")
            }
        }
        if let presence = parsed.value("presence") {
            guard presenceModes.contains(presence) else {
                throw UsageError("invalid --presence '\(presence)': use auto, deny, prompt, notify or control")
            }
            options.presence = presence
        }
        if let control = parsed.value("control") {
            guard options.presence == "control" else {
                throw UsageError("--control is for --presence control")
            }
            guard !control.isEmpty else { throw UsageError("invalid --control '': give a socket path") }
            options.controlPath = control
        } else if options.presence == "control" {
            options.controlPath = ControlSocket.defaultPath(name: name, environment: environment)
            options.controlPathIsDefault = true
        }
        if let trace = parsed.value("trace") {
            guard !trace.isEmpty else { throw UsageError("invalid --trace '': give a file path") }
            options.tracePath = trace
        }
        if let level = parsed.value("log-level") {
            guard let parsedLevel = Logger.Level(name: level) else {
                throw UsageError("invalid --log-level '\(level)': use error, warning, info, debug or trace")
            }
            options.logLevel = parsedLevel
        }
        return options
    }

    /// Run the key; returns the process exit status.
    public static func run(_ options: Options) -> Int32 {
        let logger = Logger(level: options.logLevel)
        let presence: UserPresence
        var controlSocket: ControlSocket?
        defer { controlSocket?.stop() }
        switch options.presence {
        case "auto":
            logger.warning("presence auto: every request is approved without asking (for test rigs only)")
            presence = AutoPresence(logger: logger)
        case "deny":
            logger.warning("presence deny: every request that needs a touch is refused")
            presence = DenyPresence(logger: logger)
        case "notify":
            let executable: String
            do {
                executable = try NotifyPresence.checkEnvironment()
            } catch {
                logger.error(error.description)
                return 1
            }
            logger.info("presence notify: requests are shown as desktop notifications with Approve and Deny")
            presence = NotifyPresence(executable: executable, logger: logger)
        case "control":
            let control = ControlPresence(logger: logger)
            let path = options.controlPath ?? ControlSocket.defaultPath(name: options.name)
            do {
                if options.controlPathIsDefault {
                    try ControlSocket.preparePrivateDirectory((path as NSString).deletingLastPathComponent)
                }
                let socket = try ControlSocket(path: path, presence: control, logger: logger)
                socket.start()
                controlSocket = socket
            } catch {
                logger.error(error.description)
                return 1
            }
            logger.info("presence control: answer requests with `latchkey approve` or `latchkey deny` (control socket \(path))")
            presence = control
        default:
            guard TerminalPresence.terminalAvailable() else {
                logger.error("--presence prompt needs a terminal (/dev/tty); none is available. Use --presence auto for rigs.")
                return 1
            }
            presence = TerminalPresence(logger: logger)
        }

        let store: SQLiteCredentialStore
        do {
            store = try SQLiteCredentialStore.open(directory: options.storeDirectory, lock: .exclusive)
        } catch {
            logger.error(describe(error, directory: options.storeDirectory))
            return 1
        }
        defer { store.close() }

        let authenticator: Authenticator
        do {
            authenticator = try Authenticator(store: store, presence: presence, clock: SystemClock())
        } catch {
            logger.error(describe(error, directory: options.storeDirectory))
            return 1
        }

        let transport: ReportTransport
        do {
            switch options.transport {
            case let .uhid(path):
                transport = try UHIDDevice(path: path, identity: deviceIdentity(name: options.name))
                logger.info("key '\(options.name)' is up on uhid as \"\(deviceIdentity(name: options.name).name)\" (store \(options.storeDirectory))")
            case let .socket(path):
                transport = try SocketTransport(path: path)
                logger.info("key '\(options.name)' is up on socket \(path) (store \(options.storeDirectory))")
            }
        } catch {
            logger.error(error.description)
            return 1
        }

        var traceFile: TraceFile?
        if let tracePath = options.tracePath {
            let transportName: String
            switch options.transport {
            case .uhid: transportName = "uhid"
            case let .socket(path): transportName = "socket:\(path)"
            }
            let clock = ISO8601DateFormatter()
            clock.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let header = TraceHeader(started: clock.string(from: Date()), time: KeyRunner.traceTime(),
                                     key: options.name, transport: transportName)
            do {
                traceFile = try TraceFile.create(path: tracePath, header: header)
            } catch {
                logger.error(error.description)
                transport.shutdown()
                return 1
            }
            logger.info("tracing CTAPHID traffic to \(tracePath) (secrets blanked); decode it with `latchkey trace \(tracePath)`")
        }

        let runner: KeyRunner
        do {
            runner = try KeyRunner(transport: transport, authenticator: authenticator, logger: logger, trace: traceFile)
        } catch {
            logger.error(error.description)
            transport.shutdown()
            return 1
        }
        let signals = SignalWatcher(stop: { signal in
            logger.info("\(signal), shutting down")
            runner.requestStop()
        }, powerCycle: {
            runner.requestPowerCycle()
        })
        runner.run()
        signals.cancel()
        logger.info("key '\(options.name)' stopped")
        return 0
    }

    /// The uhid identity: a stable vendor/product ID and an ASCII uniq naming the key.
    public static func deviceIdentity(name: String) -> UHIDDevice.Identity {
        UHIDDevice.Identity(name: "Latchkey \(name)", vendorID: 0x1209, productID: 0x4C4B, version: 0x0100,
                            country: 0, uniq: "latchkey:\(name)", phys: "latchkey/\(name)")
    }

    static func describe(_ error: StoreError, directory: String) -> String {
        switch error {
        case .locked:
            return "the store \(directory) is in use by another running key (one `latchkey serve` per store; use --name or --store for a second key)"
        case let .permissions(message):
            return "the store \(directory) is not private: \(message)"
        case let .corrupt(message):
            return "the store \(directory) is unreadable (\(message)); restore it from a backup or move it aside to start a fresh key"
        case let .io(message):
            return "cannot open the store \(directory): \(message)"
        case .full:
            return "the store \(directory) is full"
        }
    }
}
