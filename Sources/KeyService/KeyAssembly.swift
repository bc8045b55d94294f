import Authenticator
import CredentialStore
import CTAPHID
import LinuxHID
import SystemIO
import Trace

/// The one way a key is put together from its specification: store → authenticator → handler
/// chain → transport → runner, each part made once and, when a later one fails, every earlier one
/// undone in reverse (the store closed, a store this start created removed, the transport shut
/// down). `latchkey serve` (KeyHost) and each rig key assemble here; what differs between them
/// is given as parts: their presence and UV providers, the wrappers in front of the authenticator,
/// a trace file.
public struct KeyAssembly {
    public var specification: KeySpecification
    public var storeDirectory: String
    public var storeOptions = StoreOptions()
    public var transport: KeyConfiguration.Transport
    /// The uhid device's name: `Latchkey <deviceName>`, uniq `latchkey:<deviceName>`.
    public var deviceName: String
    public var presence: UserPresence
    public var userVerification: (any UserVerification)?
    /// The key's account chooser (the rig keeps it to name accounts); nil: one of the
    /// specification's policy.
    public var accountChooser: AccountChooser?
    /// Whether the key answers StoreProof's vendor command for its store (a served key).
    public var provesStore = false
    public var logger: Logger
    /// Made after the authenticator and before the transport (so a trace records from the
    /// device's first report); closed again if the transport or the runner cannot be made.
    public var makeTrace: (() throws(KeyAssemblyError) -> TraceFile?)?
    /// Wraps the transport the runner polls (a rig's fault injection) — before the handler chain
    /// is made, which may need it.
    public var wrapTransport: (ReportTransport) -> ReportTransport = { $0 }
    /// The handlers in front of the authenticator (a rig's overrides, observers, faults), given
    /// the authenticator and the wrapped transport.
    public var handlerChain: (Authenticator, ReportTransport) -> RequestHandler = { authenticator, _ in authenticator }

    public init(specification: KeySpecification, storeDirectory: String, transport: KeyConfiguration.Transport,
                deviceName: String, presence: UserPresence, logger: Logger) {
        self.specification = specification
        self.storeDirectory = storeDirectory
        self.transport = transport
        self.deviceName = deviceName
        self.presence = presence
        self.logger = logger
    }

    /// The key, ready to run; or why not, with nothing left behind.
    public func assemble() throws(KeyAssemblyError) -> AssembledKey {
        // A key that does not start leaves no store behind: what this start creates (the
        // directory, or the files in an empty one) is removed again on every failure below.
        let newStore = NewStore(directory: storeDirectory)
        let store: SQLiteCredentialStore
        do {
            store = try SQLiteCredentialStore.open(directory: storeDirectory, lock: .exclusive, options: storeOptions)
        } catch {
            newStore.discard()
            throw .store(error.message(directory: storeDirectory))
        }
        var undo: [() -> Void] = [{ store.close(); newStore.discard() }]
        func rollBack() { for step in undo.reversed() { step() } }

        var keyDevice: TPMKeyDevice?
        if specification.credentialKeys == .tpm {
            do {
                keyDevice = try TPMKeyDevice(tcti: nil, logger: logger)
            } catch {
                rollBack()
                throw .credentialKeys(error.message)
            }
        }
        let authenticator: Authenticator
        do {
            authenticator = try specification.makeAuthenticator(store: store, presence: presence,
                                                                userVerification: userVerification,
                                                                accountChooser: accountChooser, keyDevice: keyDevice)
        } catch {
            rollBack()
            throw .authenticator(error.message(directory: storeDirectory))
        }

        var trace: TraceFile?
        do {
            trace = try makeTrace?()
        } catch {
            rollBack()
            throw error
        }
        if let trace { undo.append { trace.close() } }

        let device: ReportTransport
        do {
            switch transport {
            case let .uhid(path):
                device = try UHIDDevice(path: path, identity: UHIDDevice.Identity.latchkey(name: deviceName))
            case let .socket(path):
                device = try SocketTransport(path: path)
            }
        } catch {
            rollBack()
            throw .transport(error)
        }
        let transport = wrapTransport(device)
        undo.append { transport.shutdown() }

        var handler = handlerChain(authenticator, transport)
        if provesStore { handler = StoreProvingHandler(handler, proofKey: store.proofKey) }
        let hid = specification.hidConfiguration(vendorCommands: provesStore ? StoreProvingHandler.vendorCommands : [])
        do {
            let runner = try KeyRunner(transport: transport, handler: handler, logger: logger, hidConfiguration: hid,
                                       trace: trace)
            return AssembledKey(store: store, authenticator: authenticator, runner: runner, isNewStore: newStore.isNew,
                                usesTPM: keyDevice != nil)
        } catch {
            rollBack()
            throw .runner(error)
        }
    }
}

/// A key assembled by `KeyAssembly`: run `runner`, then `close()`.
public struct AssembledKey {
    public let store: SQLiteCredentialStore
    public let authenticator: Authenticator
    public let runner: KeyRunner
    /// Whether this start made the store (there was no database before).
    public let isNewStore: Bool
    /// Whether credential keys are the TPM's.
    public let usesTPM: Bool

    /// Closes the store once the runner has stopped (the runner closed its transport and trace).
    public func close() { store.close() }
}

/// Which part of a key could not be made, and why (worded for a person; each host adds its own
/// advice).
public enum KeyAssemblyError: Error, CustomStringConvertible {
    case store(String)
    case credentialKeys(String)
    case authenticator(String)
    case trace(String)
    case transport(TransportError)
    case runner(TransportError)

    public var description: String {
        switch self {
        case let .store(message), let .authenticator(message), let .trace(message): message
        case let .credentialKeys(message): "--keys tpm: \(message)"
        case let .transport(error), let .runner(error): error.description
        }
    }
}
