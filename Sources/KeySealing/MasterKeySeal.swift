import CBOR
import FIDOCrypto
import Glibc
import Synchronization
import SystemIO

/// A store's master key sealed (issue 14; docs/architecture.md, Credentials and the store): `master.key` then holds not
/// the key but
///
///     "latchkey sealed master key\n" ‖ CBOR {"method", …the method's fields…,
///         "nonce": 12 bytes, "sealed": AES-256-GCM(master key) ‖ tag}
///
/// under a 32-byte wrapping key that only the method gives back, with the header and the method
/// as associated data:
/// - `passphrase`: "kdf": "scrypt", "logN", "r", "p", "salt": the wrapping key derived from the
///   passphrase by scrypt (`Scrypt.Parameters.default`: 128 MiB per guess);
/// - `tpm`: "tpmPublic", "tpmPrivate", "pcrs": a random wrapping key sealed to this machine's
///   TPM 2.0 (TPMSeal), optionally bound to PCR values;
/// - `keyring`: "item": a random wrapping key kept in the login keyring (KeyringSeal) under that name.
///
/// A copy of the store's directory is then worth nothing without the passphrase, the TPM or the
/// user's unlocked keyring; an unsealed store (32 raw bytes, as rigs keep it) works exactly as
/// before. Sealing, unsealing and switching methods rewrite the file through a temporary file and
/// rename(2), so `master.key` is at every moment the old valid file or the new one (a keyring item
/// is written before the file that names it, and the old one cleared after); the master key itself
/// never changes, so a running key is unaffected.
public enum MasterKeySeal {
    static var header: [UInt8] { MasterKeyFile.sealedHeader }

    /// How the master key is kept.
    public enum State: Equatable, Sendable {
        /// No master.key yet (the store is not created).
        case missing
        /// 32 raw bytes beside the database.
        case unsealed
        case sealedWithPassphrase(Scrypt.Parameters)
        /// Sealed to this machine's TPM 2.0, bound to these PCRs (SHA-256 bank; empty: none).
        /// `pinned`: the record names the TPM's storage key (records before 2026-12-03 do not,
        /// and such a record no longer opens: `store seal --tpm` upgrades it).
        case sealedWithTPM(pcrs: [UInt8], pinned: Bool)
        /// Its wrapping key in the login keyring, under this item name.
        case sealedWithKeyring(item: String)

        /// The method's name, as `store status` and the file say it.
        public var method: String? {
            switch self {
            case .missing, .unsealed: nil
            case .sealedWithPassphrase: "passphrase"
            case .sealedWithTPM: "tpm"
            case .sealedWithKeyring: "keyring"
            }
        }

        /// How the seal is weaker than its method can make it, and how to fix it; nil when it
        /// is as strong as Latchkey makes it (`store status` and `doctor` report it).
        public var weakness: String? {
            switch self {
            case .sealedWithTPM(_, pinned: false):
                "the TPM record does not name the TPM's storage key (an older Latchkey wrote it, or someone removed the name), "
                    + "so a device between the CPU and the TPM could read the master key, and Latchkey no longer opens it: "
                    + "re-seal it with `latchkey store seal --tpm`"
            case let .sealedWithPassphrase(parameters)
                where parameters.memoryBytes < Scrypt.Parameters.default.memoryBytes || parameters.work < Scrypt.Parameters.default.work:
                "scrypt N=2^\(parameters.logN), r=\(parameters.r), p=\(parameters.p) costs a guesser less than the default "
                    + "(N=2^17, r=8, p=1: 128 MiB per guess): re-seal it with `latchkey store seal --passphrase`"
            default:
                nil
            }
        }
    }

    /// How to seal.
    public enum Method: Sendable {
        case passphrase(SecretBytes, Scrypt.Parameters)
        /// To this machine's TPM (TSS2_TCTI, else /dev/tpmrm0), bound to the PCRs' present values.
        case tpm(pcrs: [UInt8])
        case keyring
    }

    /// Where the passphrase of a sealed store comes from when one is opened (the CLI installs
    /// one: `--passphrase-file`, LATCHKEY_PASSPHRASE_FILE, a systemd credential, the terminal).
    /// It is asked only for a sealed store; nil: none can be had (the error says how to give it);
    /// an error: one was named but cannot be used (a file others can read), said as the reason.
    public typealias PassphraseSource = @Sendable (_ directory: String) throws(SealError) -> SecretBytes?
    static let source = Mutex<PassphraseSource?>(nil)

    public static func installPassphraseSource(_ source: PassphraseSource?) {
        self.source.withLock { $0 = source }
    }

    /// The state of the store in `directory`.
    public static func state(_ file: MasterKeyFile) throws(SealError) -> State {
        guard var contents = try file.read() else { return .missing }
        defer { contents.wipe() }
        if contents.count == MasterKeyFile.keyCount { return .unsealed }
        return try Sealed(decoding: contents, path: file.path).state
    }

    /// Seals the store's master key with `passphrase` (an unsealed store, or a sealed one whose
    /// current passphrase is `current`: a change of passphrase).
    public static func seal(_ file: MasterKeyFile, passphrase: SecretBytes, current: SecretBytes? = nil,
                            parameters: Scrypt.Parameters = .default) throws(SealError) {
        try seal(file, with: .passphrase(passphrase, parameters), current: current)
    }

    /// Seals the store's master key with `method`: an unsealed store, or one sealed by any method
    /// (a passphrase-sealed one opened with `current`, else the installed source's).
    /// The caller has checked the store's files (the store's `seal(directory:)` does).
    public static func seal(_ file: MasterKeyFile, with method: Method, current: SecretBytes? = nil) throws(SealError) {
        try file.withLock { () throws(SealError) in
            file.removeStaleTemporaries()
            try sealLocked(file, method: method, current: current)
        }
    }

    private static func sealLocked(_ file: MasterKeyFile, method: Method, current: SecretBytes?) throws(SealError) {
        let previous = try state(file)
        // Re-sealing to the TPM is how an old record without the storage key's name is upgraded.
        let upgrading = if case .tpm = method { true } else { false }
        let key = try masterKey(file, passphrase: current, allowUnpinnedTPM: upgrading)
        let (wrapping, wrappingKey) = try wrap(method, file: file)
        do {
            let record = try Sealed.seal(key, under: wrappingKey, wrapping: wrapping)
            try file.replace(with: record.encoded())
        } catch {
            if case let .keyring(item) = wrapping { KeyringSeal.clear(item: item) }   // names nothing now
            throw error
        }
        if case let .sealedWithKeyring(old) = previous { KeyringSeal.clear(item: old) }
    }

    /// A new wrapping key by `method`, and how the record names it (a keyring item is written here).
    private static func wrap(_ method: Method, file: MasterKeyFile) throws(SealError) -> (Sealed.Wrapping, SecretBytes) {
        switch method {
        case let .passphrase(passphrase, parameters):
            let salt = SecureRandom.bytes(count: 16)
            return (.passphrase(parameters, salt: salt), try derive(passphrase, salt: salt, parameters: parameters))
        case let .tpm(pcrs):
            let wrappingKey = SecretBytes(randomCount: MasterKeyFile.keyCount)
            return (.tpm(try TPMSeal.seal(wrappingKey, pcrs: pcrs, tcti: nil)), wrappingKey)
        case .keyring:
            let wrappingKey = SecretBytes(randomCount: MasterKeyFile.keyCount)
            let item = KeyringSeal.newItemName()
            try KeyringSeal.store(wrappingKey, item: item, label: "Latchkey master key (\(file.directory))")
            return (.keyring(item: item), wrappingKey)
        }
    }

    /// Creates master.key sealed from its first byte: `key` (a new random one when nil; a
    /// backup's when restoring) sealed by `method`, and only the sealed record written — the raw
    /// key never reaches the disk. Refuses to replace an existing master.key. Returns the key (so
    /// the store need not be opened by its method again: no second passphrase prompt).
    @discardableResult
    public static func create(_ file: MasterKeyFile, key: SecretBytes? = nil, with method: Method) throws(SealError) -> SecretBytes {
        try file.withLock { () throws(SealError) -> SecretBytes in
            file.removeStaleTemporaries()
            guard try state(file) == .missing else { throw .io("cannot create \(file.path): it exists") }
            let key = key ?? SecretBytes(randomCount: MasterKeyFile.keyCount)
            let (wrapping, wrappingKey) = try wrap(method, file: file)
            do throws(SealError) {
                let record = try Sealed.seal(key, under: wrappingKey, wrapping: wrapping)
                guard try file.createWith(record.encoded()) else { throw SealError.io("cannot create \(file.path): it exists") }
            } catch {
                if case let .keyring(item) = wrapping { KeyringSeal.clear(item: item) }
                throw error
            }
            return key
        }
    }

    /// Back to 32 raw bytes (rigs). `passphrase` opens a passphrase-sealed store (else the
    /// installed source's); a TPM or keyring opens itself.
    /// The caller has checked the store's files (the store's `unseal(directory:)` does).
    public static func unseal(_ file: MasterKeyFile, passphrase: SecretBytes? = nil) throws(SealError) {
        try file.withLock { () throws(SealError) in
            file.removeStaleTemporaries()
            let previous = try state(file)
            let key = try masterKey(file, passphrase: passphrase)
            var bytes = key.copyBytes()
            defer { bytes.wipe() }
            try file.replace(with: bytes)
            if case let .sealedWithKeyring(old) = previous { KeyringSeal.clear(item: old) }
        }
    }

    /// The master key in `file`: raw, or opened with `passphrase`.
    static func masterKey(_ file: MasterKeyFile, passphrase: SecretBytes?, allowUnpinnedTPM: Bool = false) throws(SealError) -> SecretBytes {
        guard var contents = try file.read() else {
            throw .io("\(file.path) does not exist: the store is created by its first `latchkey serve`")
        }
        defer { contents.wipe() }
        return try open(contents, path: file.path, passphrase: passphrase, directory: file.directory, allowUnpinnedTPM: allowUnpinnedTPM)
    }

    /// The master key in `file`, which must exist: raw, or sealed and opened by its method (a
    /// passphrase: the installed source's). Nil when there is no master.key.
    public static func load(_ file: MasterKeyFile) throws(SealError) -> SecretBytes? {
        guard var contents = try file.read() else { return nil }
        defer { contents.wipe() }
        return try open(contents, path: file.path, passphrase: nil, directory: file.directory)
    }

    /// The master key in `contents` (master.key's bytes): raw, or sealed and opened by its
    /// method (a passphrase: the one given, or else the installed source's).
    static func open(_ contents: [UInt8], path: String, passphrase: SecretBytes?,
                     directory: String, allowUnpinnedTPM: Bool = false) throws(SealError) -> SecretBytes {
        if contents.count == MasterKeyFile.keyCount { return SecretBytes(contents) }
        let sealed = try Sealed(decoding: contents, path: path)
        let wrappingKey: SecretBytes
        switch sealed.wrapping {
        case let .passphrase(parameters, salt):
            var given = passphrase
            if given == nil, let source = source.withLock({ $0 }) { given = try source(directory) }
            guard let given else {
                // Every command opens stores, but only serve and store take --passphrase-file
                // for the store's own passphrase (export and backup use it for the file's).
                throw .sealed("the master key (\(path)) is sealed with a passphrase, and none was given: set "
                    + "LATCHKEY_PASSPHRASE_FILE=FILE (a file only you can read; `serve` and `store` also take --passphrase-file FILE), "
                    + "give systemd the credential latchkey-passphrase (LoadCredential=), or run from a terminal to be asked")
            }
            wrappingKey = try derive(given, salt: salt, parameters: parameters)
        case let .tpm(blob):
            // A record must name the storage key its session is salted to; one without the name
            // would open against any TPM-like answerer. Only re-sealing to the TPM reads such a
            // record, to upgrade it.
            do {
                wrappingKey = try TPMSeal.unseal(blob, tcti: nil, allowUnpinned: allowUnpinnedTPM)
            } catch .sealed(let message) where blob.storageKeyName == nil {
                throw .sealed("\(path): " + message)
            }
        case let .keyring(item):
            wrappingKey = try KeyringSeal.lookup(item: item, path: path)
        }
        guard let key = sealed.open(under: wrappingKey) else {
            switch sealed.wrapping {
            case .passphrase:
                throw .sealed("the passphrase does not open the master key (\(path)): wrong passphrase? Nothing was changed")
            case .tpm, .keyring:
                throw .corrupt("\(path) does not open with the key its \(sealed.wrapping.method) gave back: the file was altered")
            }
        }
        return key
    }

    static func derive(_ passphrase: SecretBytes, salt: [UInt8], parameters: Scrypt.Parameters) throws(SealError) -> SecretBytes {
        do {
            return try Scrypt.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        } catch {
            throw .io("scrypt (\(parameters.memoryBytes >> 20) MiB) failed: \(error); is the memory limited (systemd MemoryMax=)?")
        }
    }

}
