import Encoding
import Foundation
import Rig
import SystemIO

/// What `latchkey rig webdriver` runs.
public struct WebDriverConfiguration: Equatable, Sendable {
    public enum Driver: Equatable, Sendable {
        /// Start this driver (chromedriver) on a free port, stop it at exit; `log`: its --log-path.
        case start(executable: String, log: String?)
        /// A driver already listening on 127.0.0.1:port.
        case running(port: UInt16)
    }

    public var port: UInt16
    public var driver: Driver
    /// The keys' stores (`--root`); nil: a temporary private directory, deleted at exit.
    public var root: String?
    public var uhidPath = "/dev/uhid"
    /// `--socket-keys DIR`: keys on the socket transport there instead of uhid.
    public var socketKeys: String?
    public var logLevel: Logger.Level = .info

    public init(port: UInt16, driver: Driver, root: String? = nil) {
        self.port = port
        self.driver = driver
        self.root = root
    }
}

/// Runs the intermediary, its rig and (unless one runs already) the browser's driver until
/// SIGINT or SIGTERM; then every session's keys go, the driver's sessions are deleted (their
/// browsers quit) and the driver stops.
public enum WebDriverHost {
    /// How long a started driver has to answer /status (a first start under emulation is slow).
    static let driverStartMilliseconds: UInt64 = 60_000

    public static func run(_ configuration: WebDriverConfiguration) -> Int32 {
        let logger = Logger(level: configuration.logLevel)
        let root: String
        do {
            root = try RigHost.prepareRoot(configuration.root)
        } catch {
            logger.error(error.description)
            return 1
        }
        defer { if configuration.root == nil { try? FileManager.default.removeItem(atPath: root) } }
        var child: ChildProcess?
        let driverPort: UInt16
        switch configuration.driver {
        case .running(let port):
            driverPort = port
            if let refusal = foreignDriver(port: port) {
                logger.error(refusal)
                return 1
            }
        case .start(let executable, let log):
            do {
                (child, driverPort) = try startDriver(executable, log: log, logger: logger)
            } catch {
                logger.error(error.message)
                return 1
            }
        }
        defer {
            if let child {
                child.send(SIGTERM)
                for _ in 0..<50 where child.exit == nil { usleep(100_000) }
                child.send(SIGKILL)
            }
        }
        let rig = Rig(root: root, uhidPath: configuration.uhidPath, logger: logger)
        defer { rig.stop() }
        let transport: VirtualAuthenticators.KeyTransport = configuration.socketKeys.map { .socket(directory: $0) } ?? .usb
        let authenticators = VirtualAuthenticators(transport: transport) { rig.respond(to: $0) }
        let intermediary: WebDriverIntermediary
        do {
            intermediary = try WebDriverIntermediary(port: configuration.port, driverPort: driverPort,
                                                     authenticators: authenticators, logger: logger)
        } catch {
            logger.error(error == .addressInUse
                ? "127.0.0.1:\(configuration.port) is in use; give another --port (0: any free one)"
                : "cannot listen on 127.0.0.1:\(configuration.port): \(error)")
            return 1
        }
        let done = DispatchSemaphore(value: 0)
        let signals = SignalWatcher(stop: { name in
            logger.info("\(name), shutting down")
            done.signal()
        }, powerCycle: {})
        intermediary.start()
        // The address on stdout, one line, for whoever started it (a test harness reads it).
        FileHandle.standardOutput.write(Data("http://127.0.0.1:\(intermediary.port)\n".utf8))
        logger.info("rig webdriver: WebDriver on http://127.0.0.1:\(intermediary.port), in front of the driver on 127.0.0.1:\(driverPort); "
                    + "keys \(configuration.socketKeys.map { "on sockets in \($0)" } ?? "on uhid"), stores in \(root)")
        done.wait()
        signals.cancel()
        let sessions = authenticators.sessions
        intermediary.stop()
        if child != nil {
            for session in sessions { deleteSession(session, driverPort: driverPort) }
        }
        logger.info("rig webdriver stopped")
        return 0
    }

    struct Failure: Error {
        var message: String
    }

    /// Starts `executable` (a path, or a name looked up in PATH) with `--port=N` on a free port,
    /// and waits until it answers GET /status.
    static func startDriver(_ executable: String, log: String?, logger: Logger) throws(Failure) -> (ChildProcess, UInt16) {
        guard let path = ChildProcessRunner.locate(executable) else {
            throw Failure(message: "no driver \(executable) found (install Debian's chromium-driver, or give --driver PATH)")
        }
        let port: UInt16
        do {
            let (probe, free) = try FileDescriptor.loopbackListener(port: 0)
            probe.close()
            port = free
        } catch {
            throw Failure(message: "cannot find a free port for the driver: \(error)")
        }
        var arguments = ["--port=\(port)"]
        if let log {
            // The driver's verbose log holds pages, cookies and script arguments: private from the start.
            do {
                let file = try FileDescriptor.open(log, flags: O_WRONLY | O_CREAT | O_NOFOLLOW, permissions: 0o600)
                defer { file.close() }
                try FileSystem.setMode(log, 0o600)
            } catch {
                throw Failure(message: "cannot create the driver's log \(log): \(error)")
            }
            // With the browser's own output (Chromium's FIDO lines, at the verbosity its flags ask for).
            arguments += ["--log-path=\(log)", "--verbose", "--enable-chrome-logs"]
        }
        let child: ChildProcess
        do {
            child = try ChildProcess(executable: path, arguments: arguments)
        } catch {
            throw Failure(message: "cannot start \(path): \(error)")
        }
        let deadline = MonotonicClock.milliseconds() + driverStartMilliseconds
        while MonotonicClock.milliseconds() < deadline {
            if let exit = child.exit {
                let output = TerminalText.lines(String(decoding: exit.errorOutput + exit.output, as: UTF8.self))
                throw Failure(message: "\(path) exited with status \(exit.status) before it answered: \(output)")
            }
            if status(driverPort: port) {
                // The port was free when probed; another user could have taken it since. Whatever
                // listens there gets every command, so it must be this user's.
                if let refusal = foreignDriver(port: port) {
                    child.send(SIGKILL)
                    throw Failure(message: refusal)
                }
                return (child, port)
            }
            usleep(100_000)
        }
        child.send(SIGKILL)
        throw Failure(message: "\(path) did not answer on 127.0.0.1:\(port) within \(driverStartMilliseconds / 1_000) s")
    }

    /// Why the driver listening on 127.0.0.1:`port` may not be used (it is another user's), or nil.
    static func foreignDriver(port: UInt16) -> String? {
        guard let owner = LoopbackPeer.listenerOwner(port: port) else {
            return "nothing listens on 127.0.0.1:\(port) (is the driver running?)"
        }
        guard PeerCredentials.isTrusted(uid: owner) else {
            return "the driver on 127.0.0.1:\(port) belongs to \(PeerCredentials.describe(uid: owner)): it would get every command"
        }
        return nil
    }

    /// Whether the driver answers GET /status with 200.
    static func status(driverPort: UInt16) -> Bool {
        exchange(HTTPRequest(method: "GET", target: "/status"), driverPort: driverPort, timeoutMilliseconds: 2_000).status == 200
    }

    static func deleteSession(_ id: String, driverPort: UInt16) {
        let target = "/session/" + (id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? id)
        _ = exchange(HTTPRequest(method: "DELETE", target: target), driverPort: driverPort, timeoutMilliseconds: 30_000)
    }

    /// One request on a connection of its own.
    static func exchange(_ request: HTTPRequest, driverPort: UInt16, timeoutMilliseconds: Int32) -> HTTPResponse {
        var connection: HTTPStream?
        defer { connection?.descriptor.close() }
        return WebDriverIntermediary.exchange(request, driverPort: driverPort, connection: &connection,
                                              timeoutMilliseconds: timeoutMilliseconds, shouldStop: { false })
    }
}
