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

        // A key that does not start leaves no store behind: what this start creates (the
        // directory, or the files in an empty one) is removed again on every failure below.
        let newStore = NewStore(directory: configuration.storeDirectory)
        let store: SQLiteCredentialStore
        do {
            var options = StoreOptions()
            options.sealNewStore = sealNewStore
            store = try SQLiteCredentialStore.open(directory: configuration.storeDirectory, lock: .exclusive, options: options)
        } catch {
            logger.error(error.message(directory: configuration.storeDirectory))
            newStore.discard()
            return 1
        }
        var started = false
        defer {
            store.close()
            if !started { newStore.discard() }
        }

        var keyDevice: TPMKeyDevice?
        if configuration.keys == .tpm {
            do {
                keyDevice = try TPMKeyDevice(tcti: nil, logger: logger)
                logger.info("credential keys are made and kept by the TPM (ES256 only)")
            } catch {
                logger.error("--keys tpm: \(error.message)")
                return 1
            }
        }

        let authenticator: Authenticator
        do {
            var authenticatorConfiguration = AuthenticatorConfiguration()
            authenticatorConfiguration.attestation = configuration.attestation
            authenticatorConfiguration.algorithms = configuration.algorithms
            authenticatorConfiguration.enterpriseAttestationRPIDs = configuration.enterpriseRPIDs
            authenticatorConfiguration.countersZero = configuration.countersZero
            authenticator = try Authenticator(configuration: authenticatorConfiguration, store: store, presence: presence,
                                              userVerification: makeUserVerification(configuration, logger: logger),
                                              clock: SystemClock(),
                                              accountChooser: AccountChooser(policy: configuration.accountChoice),
                                              keyDevice: keyDevice)
        } catch {
            logger.error(error.message(directory: configuration.storeDirectory))
            return 1
        }

        // The trace file exists before the transport does: once the key's device or socket
        // appears, its trace is already recording (and a rig that waits for the socket finds it).
        var traceFile: TraceFile?
        if let tracePath = configuration.tracePath {
            let clock = ISO8601DateFormatter()
            clock.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let header = TraceHeader(started: clock.string(from: Date()), time: KeyRunner.traceTime(),
                                     key: configuration.name, transport: configuration.transport.name)
            do {
                traceFile = try TraceFile.create(path: tracePath, header: header)
            } catch {
                logger.error(error.description)
                return 1
            }
            logger.info("tracing CTAPHID traffic to \(tracePath) (secrets blanked); decode it with `latchkey trace \(tracePath)`")
        }

        let transport: ReportTransport
        do {
            switch configuration.transport {
            case let .uhid(path):
                let identity = UHIDDevice.Identity.latchkey(name: configuration.name)
                transport = try UHIDDevice(path: path, identity: identity)
                logger.info("key '\(configuration.name)' is up on uhid as \"\(identity.name)\" (store \(configuration.storeDirectory))")
            case let .socket(path):
                transport = try SocketTransport(path: path)
                logger.info("key '\(configuration.name)' is up on socket \(path) (store \(configuration.storeDirectory))")
            }
        } catch {
            logger.error(error.description)
            traceFile?.close()
            return 1
        }

        let runner: KeyRunner
        do {
            // The key answers StoreProof's vendor command for its store, so that commands and the
            // passkey provider that find it by name know it holds the store they opened.
            let hid = CTAPHIDConfiguration(channelIDSeed: UInt32.random(in: 1...0x7FFF_FFFF),
                                           vendorCommands: StoreProvingHandler.vendorCommands)
            runner = try KeyRunner(transport: transport, handler: StoreProvingHandler(authenticator, proofKey: store.proofKey),
                                   logger: logger, hidConfiguration: hid, trace: traceFile)
        } catch {
            logger.error(error.description)
            transport.shutdown()
            traceFile?.close()
            return 1
        }
        started = true
        // Where commands given this store (`pin`, `doctor`) find the key that holds it.
        let serving: ServingKey.Transport = switch configuration.transport {
        case .uhid: .uhid(name: configuration.name)
        case let .socket(path): .socket(path: path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path)
        }
        if let error = ServingKey(transport: serving).write(directory: configuration.storeDirectory) {
            logger.debug("cannot record where the key serves in \(configuration.storeDirectory): \(error.message)")
        }
        defer { ServingKey.remove(directory: configuration.storeDirectory) }
        if newStore.isNew {
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
        switch configuration.userVerification {
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
        switch configuration.presence {
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
                control.presence = .control
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

/// The store a key's start may create: what was there before it, so that a start that fails
/// removes what it made and nothing else.
struct NewStore {
    let directory: String
    /// The directory's entries before the start (nil: there was no directory).
    let entriesBefore: Set<String>?
    /// Whether this start makes the store (there was no database).
    let isNew: Bool

    init(directory: String) {
        self.directory = directory
        entriesBefore = (try? FileSystem.entries(directory)).map(Set.init)
        isNew = !FileManager.default.fileExists(atPath: directory + "/credentials.sqlite")
    }

    /// Removes what the start made: the whole directory if it made it, else the new files.
    func discard() {
        guard isNew else { return }
        guard let entriesBefore else {
            try? FileManager.default.removeItem(atPath: directory)
            return
        }
        for entry in (try? FileSystem.entries(directory)) ?? [] where !entriesBefore.contains(entry) {
            try? FileManager.default.removeItem(atPath: directory + "/" + entry)
        }
    }
}
