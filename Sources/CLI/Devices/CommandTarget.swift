import Authenticator
import CredentialStore
import CTAPHID
import FIDOClient
import FIDOCrypto
import Foundation
import LinuxHID
import SystemIO

/// What a credential, signal or PIN command works on: a key's store on this machine (`--name`,
/// `--store`, as `latchkey serve` picks it), or a device over CTAP2 (`--device`, `--socket`).
enum CommandTarget: Equatable {
    case store(directory: String, name: String)
    case device(DeviceSelection)

    static let storeOptions: [CommandSpec.Option] = [
        .init("name", value: "NAME", help: "Key name: the store of `latchkey serve --name NAME` (default: default)."),
        .init("store", value: "DIR", help: "Store directory (default: $XDG_DATA_HOME/latchkey/<name>)."),
    ]
    static let deviceOptions: [CommandSpec.Option] = [
        .init("device", value: "DEVICE", help: "Work on a FIDO2 key over CTAP2: /dev/hidrawN, hidrawN or a Latchkey key name."),
        .init("socket", value: "PATH", help: "Work on a key on the socket transport over CTAP2."),
        .init("pin-file", value: "FILE", help: "Read the key's PIN from FILE (else $LATCHKEY_PIN, else the terminal)."),
    ]

    /// The target the options name; a store unless `--device` or `--socket` is given.
    /// `storeTakesPIN`: the command checks a store's own PIN (backup, export), so `--pin-file`
    /// is not a sign that a device was meant.
    static func resolve(_ parsed: ParsedArguments, environment: [String: String], storeTakesPIN: Bool = false,
                        enumerate: () -> [HIDDeviceInfo] = { HIDDeviceEnumerator().fidoDevices() }) throws(CLIError) -> CommandTarget {
        let device = parsed.value("device")
        let socket = parsed.value("socket")
        let storeNamed = parsed.value("name") != nil || parsed.value("store") != nil
        if device != nil || socket != nil {
            guard !storeNamed else {
                throw .usage("give a store (--name/--store) or a device (--device/--socket), not both")
            }
            guard device == nil || socket == nil else { throw .usage("give either --device or --socket, not both") }
            if let socket { return .device(.socket(path: socket)) }
            let needsEnumeration = !(device ?? "").hasPrefix("/")
            switch DeviceSelection.resolve(argument: device, socket: nil, fidoDevices: needsEnumeration ? enumerate() : []) {
            case .success(let selection): return .device(selection)
            case .failure(let problem):
                throw problem.isUsageError ? .usage(problem.message) : .failure(problem.message)
            }
        }
        if parsed.value("pin-file") != nil && !storeTakesPIN {
            throw .usage("--pin-file is for a device (--device/--socket); a store needs no PIN")
        }
        // --name only says where a store is ($XDG_DATA_HOME/latchkey/NAME); with --store too, one
        // of the two would be ignored without a word.
        if let name = parsed.value("name"), let store = parsed.value("store") {
            throw .usage("give --name or --store, not both: --name \(name) means the store "
                         + "\(StoreLocation.directory(explicit: nil, name: name, environment: environment)), not \(store)")
        }
        let name = parsed.value("name") ?? "default"
        guard StoreLocation.isValidName(name) else {
            throw .usage("invalid --name '\(name)': use letters, digits, '-', '_' or '.'")
        }
        return .store(directory: StoreLocation.directory(explicit: parsed.value("store"), name: name, environment: environment),
                      name: name)
    }
}

/// Opening a key's store from the CLI.
enum LocalStore {
    /// Opens an existing store without its lock (`StoreLock.none`), so that it works while
    /// `latchkey serve` runs on it: SQLite orders the writes, and the key sees them on its next
    /// request. A directory without a store is a failure, not a new empty store.
    static func openExisting(directory: String, options: StoreOptions = .init()) throws(CLIError) -> SQLiteCredentialStore {
        try checkStoreDirectory(directory)
        guard FileManager.default.fileExists(atPath: directory + "/credentials.sqlite") else {
            throw .failure("no key store at \(directory): no key has run there yet "
                + "(start one with `latchkey serve --name NAME`, or name another with --name or --store)")
        }
        do {
            return try SQLiteCredentialStore.open(directory: directory, lock: .none, options: options)
        } catch {
            throw .failure(error.message(directory: directory))
        }
    }

    /// What is wrong with `directory` as a store's directory, in the user's terms: missing, not a
    /// directory, or not this user's to open (permission) — before anything tries to open it.
    static func checkStoreDirectory(_ directory: String) throws(CLIError) {
        let info: stat
        do {
            info = try FileSystem.status(directory)
        } catch {
            switch error {
            case .noSuchFileOrDirectory:
                throw .failure("no key store at \(directory): the directory does not exist "
                    + "(start a key there with `latchkey serve --store \(directory)`, or name another with --name or --store)")
            case .permissionDenied:
                throw .failure("cannot reach the store \(directory): permission denied on a directory above it")
            default:
                throw .failure("cannot open the store \(directory): \(error.message)")
            }
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw .failure("\(directory) is not a directory: --store names a key's store directory "
                + "(e.g. ~/.local/share/latchkey/default)")
        }
        guard access(directory, R_OK | X_OK) == 0 else {
            let owner = info.st_uid == getuid() ? "yours, mode \(String(info.st_mode & 0o777, radix: 8))" : "uid \(info.st_uid)'s"
            throw .failure("cannot open the store \(directory): permission denied (the directory is \(owner)); "
                + "run the command as the user whose key it is")
        }
    }

    /// The device of the key running on the store in `directory` (its `serving` record), if one
    /// is running and can be found: its socket, or its uhid device by the key's name — and, with
    /// `proofKey` (the store's `StoreProof` key), only once it proved it holds that store.
    static func servingDevice(directory: String, proofKey: (() throws(CLIError) -> SecretBytes)? = nil,
                              enumerate: () -> [HIDDeviceInfo] = { HIDDeviceEnumerator().fidoDevices() }) throws(CLIError) -> DeviceSelection? {
        guard let serving = ServingKey.read(directory: directory) else { return nil }
        let selection: DeviceSelection
        switch serving.transport {
        case .socket(let path):
            selection = .socket(path: path)
        case .uhid(let name):
            switch DeviceSelection.resolve(argument: name, socket: nil, fidoDevices: enumerate()) {
            case .success(let found): selection = found
            case .failure(let problem):
                throw .failure("the key '\(name)' runs on \(directory) (pid \(serving.pid)), but its device cannot be used: \(problem.message)")
            }
        }
        if let proofKey { try prove(selection, holds: directory, key: try proofKey()) }
        return selection
    }

    /// Asks the device a fresh StoreProof challenge; a failure unless it answers as a key holding
    /// the store does. Nothing else is sent to a device that does not.
    static func prove(_ selection: DeviceSelection, holds directory: String, key: SecretBytes) throws(CLIError) {
        let refused = "\(selection.label) says it is the key running on \(directory), but"
        let answer: [UInt8]
        let request = StoreProof.request()
        do {
            let client = CTAPHIDClient(link: try selection.open(), replyTimeoutMilliseconds: 2_000)
            _ = try client.initialize()
            answer = try client.transact(vendor: StoreProof.command, payload: request.payload)
        } catch let CTAPHIDClientError.deviceError(_, code) where code == CTAPHIDError.invalidCommand.rawValue {
            throw .failure("\(refused) it does not answer Latchkey's store proof (a key started before this Latchkey: "
                + "restart it; or not Latchkey): nothing was sent to it")
        } catch {
            throw .failure("\(refused) it could not be asked to prove it (\(error)): nothing was sent to it")
        }
        guard answer == [0x00] + StoreProof.expected(challenge: request.challenge, key: key) else {
            throw .failure("\(refused) it does not hold that store (another key claims its name or socket): nothing was sent to it")
        }
    }

    /// Opens a store for an offline change: with its exclusive lock, so that no key runs on it
    /// meanwhile. A running key is a failure that names the device options.
    static func openExclusively(directory: String, name: String, options: StoreOptions = .init()) throws(CLIError) -> SQLiteCredentialStore {
        do {
            return try SQLiteCredentialStore.open(directory: directory, lock: .exclusive, options: options)
        } catch .locked {
            throw .failure("a key is running on the store \(directory): leave out --offline to go through it, or stop it first")
        } catch {
            throw .failure(error.message(directory: directory))
        }
    }

    /// Runs a store operation; a store failure becomes a CLI failure naming the store.
    static func perform<R>(_ directory: String, _ body: () throws(StoreError) -> R) throws(CLIError) -> R {
        do {
            return try body()
        } catch {
            throw failure(error, directory: directory)
        }
    }

    /// A store failure as a CLI failure.
    static func failure(_ error: StoreError, directory: String) -> CLIError {
        .failure(error.message(directory: directory))
    }
}
