import Authenticator
import CredentialStore
import CTAPHID
import KeySealing
import Foundation
import LinuxHID
import Trace
import SystemIO
import Presence

/// Runs one key from a `KeyConfiguration`: presence provider (and control socket), store,
/// authenticator, transport, trace file and the poll loop, until SIGINT/SIGTERM; SIGHUP is a
/// power cycle. Everything it opens it closes again, on every path out.
public enum KeyHost {
    /// Runs the key; returns the process exit status (failures are logged).
    /// `sealNewStore`: how a store this start creates is sealed (nil: 32 raw bytes, as rigs keep it).
    public static func run(_ configuration: KeyConfiguration, sealNewStore: MasterKeySeal.Method? = nil) -> Int32 {
        let logger = Logger(level: configuration.logLevel)
        var controlSocket: ControlSocket?
        defer { controlSocket?.stop() }
        guard let presence = makePresence(configuration, logger: logger, controlSocket: &controlSocket) else { return 1 }

        var assembly = KeyAssembly(specification: configuration.key, storeDirectory: configuration.storeDirectory,
                                   transport: configuration.transport, deviceName: configuration.name, presence: presence,
                                   logger: logger)
        assembly.storeOptions.sealNewStore = sealNewStore
        assembly.userVerification = makeUserVerification(configuration, logger: logger)
        // The key answers StoreProof's vendor command for its store, so that commands and the
        // passkey provider that find it by name know it holds the store they opened.
        assembly.provesStore = true
        if let tracePath = configuration.tracePath {
            // The trace file exists before the transport does: once the key's device or socket
            // appears, its trace is already recording (and a rig that waits for the socket finds it).
            assembly.makeTrace = { () throws(KeyAssemblyError) -> TraceFile? in
                let clock = ISO8601DateFormatter()
                clock.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let header = TraceHeader(started: clock.string(from: Date()), time: KeyRunner.traceTime(),
                                         key: configuration.name, transport: configuration.transport.name)
                do throws(TraceFile.Failure) {
                    let file = try TraceFile.create(path: tracePath, header: header)
                    logger.info("tracing CTAPHID traffic to \(tracePath) (secrets blanked); decode it with `latchkey trace \(tracePath)`")
                    return file
                } catch {
                    throw .trace(error.description)
                }
            }
        }
        let key: AssembledKey
        do {
            key = try assembly.assemble()
        } catch {
            logger.error(error.description)
            return 1
        }
        defer { key.close() }
        let runner = key.runner
        if key.usesTPM { logger.info("credential keys are made and kept by the TPM (ES256 only)") }
        switch configuration.transport {
        case .uhid:
            let identity = UHIDDevice.Identity.latchkey(name: configuration.name)
            logger.info("key '\(configuration.name)' is up on uhid as \"\(identity.name)\" (store \(configuration.storeDirectory))")
        case let .socket(path):
            logger.info("key '\(configuration.name)' is up on socket \(path) (store \(configuration.storeDirectory))")
        }
        // Where commands given this store (`pin`, `doctor`) find the key that holds it.
        let serving: ServingKey.Transport = switch configuration.transport {
        case .uhid: .uhid(name: configuration.name)
        case let .socket(path): .socket(path: path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path)
        }
        if let error = ServingKey(transport: serving).write(directory: configuration.storeDirectory) {
            logger.debug("cannot record where the key serves in \(configuration.storeDirectory): \(error.message)")
        }
        defer { ServingKey.remove(directory: configuration.storeDirectory) }
        if key.isNewStore {
            // A mistyped --store starts an empty key: say so, once, where the user looks.
            logger.info("created a new store at \(configuration.storeDirectory)")
        }
        let signals = SignalWatcher(stop: { signal in
            logger.info("\(signal), shutting down")
            runner.requestStop()
        }, powerCycle: {
            runner.requestPowerCycle()
        })
        runner.run()
        signals.cancel()
        if runner.transportFailure != nil { return 1 }   // logged; a service manager starts the key again
        logger.info("key '\(configuration.name)' stopped")
        return 0
    }

    /// The built-in user verification `--uv` names, if any.
    static func makeUserVerification(_ configuration: KeyConfiguration, logger: Logger) -> (any UserVerification)? {
        switch configuration.key.userVerification {
        case nil: return nil
        case .auto:
            logger.warning("uv auto: every user verification succeeds without asking (for test rigs only)")
            return AutoVerification(logger: logger)
        case .deny:
            logger.warning("uv deny: every user verification fails (uvRetries count down to UV_BLOCKED)")
            return DenyVerification(logger: logger)
        case .polkit:
            guard let executable = ChildProcessRunner.locate("pkcheck") else {
                logger.error("uv polkit: pkcheck is not installed (Debian: polkitd); the key has no built-in user verification")
                return nil
            }
            logger.info("uv polkit: each verification asks for your password in the desktop's polkit agent "
                + "(action \(PolkitVerification.actionID))")
            return PolkitVerification.make(executable: executable, logger: logger)
        case .fprintd:
            guard let executable = ChildProcessRunner.locate("fprintd-verify") else {
                logger.error("uv fprintd: fprintd-verify is not installed (Debian: fprintd); the key has no built-in user verification")
                return nil
            }
            logger.info("uv fprintd: each verification asks for a finger on the reader (fprintd)")
            return FprintdVerification.make(executable: executable, logger: logger)
        }
    }

    /// The presence provider `--presence` names, with its control socket for `control`; nil
    /// (the reason logged) when it cannot work here.
    private static func makePresence(_ configuration: KeyConfiguration, logger: Logger,
                                     controlSocket: inout ControlSocket?) -> UserPresence? {
        switch configuration.key.presence {
        case .auto:
            logger.warning("presence auto: every request is approved without asking (for test rigs only)")
            return AutoPresence(logger: logger)
        case .deny:
            logger.warning("presence deny: every request that needs a touch is refused")
            return DenyPresence(logger: logger)
        case .notify:
            let executable: String
            do {
                executable = try NotifyPresence.checkEnvironment()
            } catch {
                logger.error(error.description)
                return nil
            }
            switch NotificationServer.capabilities() {
            case .success(let capabilities) where !capabilities.contains("actions"):
                // A server that shows no buttons and reports no clicks: a notification could only time out.
                let reason = "the notification server shows no buttons (GetCapabilities has no \"actions\": "
                    + capabilities.joined(separator: ", ") + ")"
                if TerminalPresence.terminalAvailable() {
                    logger.warning("presence notify: \(reason); asking on the terminal instead (--presence prompt)")
                    return TerminalPresence(logger: logger)
                }
                logger.warning("presence notify: \(reason) and there is no terminal; answer with `latchkey approve` or "
                               + "`latchkey deny` instead (--presence control)")
                var control = configuration
                control.key.presence = .control
                control.controlPath = configuration.controlPath ?? ControlSocket.defaultPath(name: configuration.name)
                control.controlPathIsDefault = configuration.controlPath == nil
                return makePresence(control, logger: logger, controlSocket: &controlSocket)
            case .success:
                break
            case .failure(let failure):
                logger.warning("presence notify: \(failure.description)")
            }
            logger.info("presence notify: requests are shown as desktop notifications with Approve (the default action) and Deny")
            return NotifyPresence(executable: executable, logger: logger)
        case .control:
            let control = ControlPresence(logger: logger)
            let path = configuration.controlPath ?? ControlSocket.defaultPath(name: configuration.name)
            do {
                if configuration.controlPathIsDefault {
                    try ControlSocket.preparePrivateDirectory((path as NSString).deletingLastPathComponent)
                }
                let socket = try ControlSocket(path: path, presence: control, logger: logger)
                socket.start()
                controlSocket = socket
            } catch {
                logger.error(error.description)
                return nil
            }
            logger.info("presence control: answer requests with `latchkey approve` or `latchkey deny` (control socket \(path))")
            return control
        case .prompt:
            guard TerminalPresence.terminalAvailable() else {
                logger.error("--presence prompt needs a terminal (/dev/tty); none is available. Use --presence auto for rigs.")
                return nil
            }
            return TerminalPresence(logger: logger)
        }
    }
}
