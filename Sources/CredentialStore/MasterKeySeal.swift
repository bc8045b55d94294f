import Authenticator
import CBOR
import FIDOCrypto
import Glibc
import Synchronization
import SystemIO

/// A store's master key sealed with a passphrase (issue 14; ARCHITECTURE.md, Store): `master.key`
/// then holds not the key but
///
///     "latchkey sealed master key\n" ‖ CBOR {"method": "passphrase", "kdf": "scrypt",
///         "logN", "r", "p", "salt": 16 bytes, "nonce": 12 bytes, "sealed": AES-256-GCM(key) ‖ tag}
///
/// with the AES key derived from the passphrase by scrypt (`Scrypt.Parameters.default`: 128 MiB
/// per guess) and the header and method as associated data. A copy of the store's directory is
/// then worth nothing without the passphrase; an unsealed store (32 raw bytes, as rigs keep
/// it) works exactly as before. Sealing, unsealing and changing the passphrase rewrite the file
/// through a temporary file and rename(2), so `master.key` is at every moment the old valid
/// file or the new one; the master key itself never changes, so a running key is unaffected.
public enum MasterKeySeal {
    static let header = Array("latchkey sealed master key\n".utf8)
    static let largestFile = 1024

    /// How the master key is kept.
    public enum State: Equatable, Sendable {
        /// No master.key yet (the store is not created).
        case missing
        /// 32 raw bytes beside the database.
        case unsealed
        case sealedWithPassphrase(Scrypt.Parameters)
    }

    /// Where the passphrase of a sealed store comes from when one is opened (the CLI installs
    /// one: `--passphrase-file`, LATCHKEY_PASSPHRASE_FILE, a systemd credential, the terminal).
    /// It is asked only for a sealed store; nil: none can be had (the error says how to give it).
    public typealias PassphraseSource = @Sendable (_ directory: String) -> SecretBytes?
    static let source = Mutex<PassphraseSource?>(nil)

    public static func installPassphraseSource(_ source: PassphraseSource?) {
        self.source.withLock { $0 = source }
    }

    /// The state of the store in `directory`.
    public static func state(directory: String) throws(StoreError) -> State {
        let files = StoreDirectory(path: directory)
        guard var contents = try files.readMasterKeyFile() else { return .missing }
        defer { contents.wipe() }
        if contents.count == StoreDirectory.masterKeyCount { return .unsealed }
        return .sealedWithPassphrase(try Sealed(decoding: contents, path: files.masterKeyPath).parameters)
    }

    /// Seals the store's master key with `passphrase` (an unsealed store, or a sealed one whose
    /// current passphrase is `current`: a change of passphrase).
    public static func seal(directory: String, passphrase: SecretBytes, current: SecretBytes? = nil,
                            parameters: Scrypt.Parameters = .default) throws(StoreError) {
        let files = StoreDirectory(path: directory)
        try files.checkPermissions()
        try files.withMasterKeyLock { () throws(StoreError) in
            files.removeStaleMasterKeyTemporaries()
            try sealLocked(files, passphrase: passphrase, current: current, parameters: parameters)
        }
    }

    private static func sealLocked(_ files: StoreDirectory, passphrase: SecretBytes, current: SecretBytes?,
                                   parameters: Scrypt.Parameters) throws(StoreError) {
        let key = try masterKey(files, passphrase: current)
        var salt = SecureRandom.bytes(count: 16), nonce = SecureRandom.bytes(count: 12)
        defer { salt.wipe() }
        let wrappingKey: SecretBytes
        do {
            wrappingKey = try Scrypt.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        } catch {
            throw .io("scrypt (\(parameters.memoryBytes >> 20) MiB) failed: \(error); is the memory limited (systemd MemoryMax=)?")
        }
        let sealed: (ciphertext: [UInt8], tag: [UInt8])
        var plain = key.copyBytes()
        defer { plain.wipe() }
        do {
            sealed = try AES256GCM.seal(plain, key: wrappingKey, nonce: nonce, authenticating: Sealed.associatedData)
        } catch {
            throw .io("sealing the master key failed: \(error)")
        }
        let record = Sealed(parameters: parameters, salt: salt, nonce: nonce, sealed: sealed.ciphertext + sealed.tag)
        try files.replaceMasterKeyFile(with: record.encoded())
        nonce.wipe()
    }

    /// Back to 32 raw bytes (rigs; or before moving to another method).
    public static func unseal(directory: String, passphrase: SecretBytes) throws(StoreError) {
        let files = StoreDirectory(path: directory)
        try files.checkPermissions()
        try files.withMasterKeyLock { () throws(StoreError) in
            files.removeStaleMasterKeyTemporaries()
            let key = try masterKey(files, passphrase: passphrase)
            var bytes = key.copyBytes()
            defer { bytes.wipe() }
            try files.replaceMasterKeyFile(with: bytes)
        }
    }

    /// The master key in `files`: raw, or opened with `passphrase`.
    static func masterKey(_ files: StoreDirectory, passphrase: SecretBytes?) throws(StoreError) -> SecretBytes {
        guard var contents = try files.readMasterKeyFile() else {
            throw .io("\(files.masterKeyPath) does not exist: the store is created by its first `latchkey serve`")
        }
        defer { contents.wipe() }
        return try open(contents, path: files.masterKeyPath, passphrase: passphrase, directory: files.path)
    }

    /// The master key in `contents` (master.key's bytes): raw, or sealed and opened with the
    /// passphrase given, or else the installed source's.
    static func open(_ contents: [UInt8], path: String, passphrase: SecretBytes?,
                     directory: String) throws(StoreError) -> SecretBytes {
        if contents.count == StoreDirectory.masterKeyCount { return SecretBytes(contents) }
        let sealed = try Sealed(decoding: contents, path: path)
        let given = passphrase ?? source.withLock { $0 }?(directory)
        guard let given else {
            throw .sealed("the master key (\(path)) is sealed with a passphrase, and none was given: pass "
                + "--passphrase-file FILE (a file only you can read), set LATCHKEY_PASSPHRASE_FILE, give systemd the "
                + "credential latchkey-passphrase (LoadCredential=), or run from a terminal to be asked")
        }
        let wrappingKey: SecretBytes
        do {
            wrappingKey = try Scrypt.deriveKey(passphrase: given, salt: sealed.salt, parameters: sealed.parameters)
        } catch {
            throw .io("scrypt (\(sealed.parameters.memoryBytes >> 20) MiB) failed: \(error); is the memory limited (systemd MemoryMax=)?")
        }
        guard var key = try? AES256GCM.open(Array(sealed.sealed.prefix(StoreDirectory.masterKeyCount)),
                                            tag: Array(sealed.sealed.suffix(16)), key: wrappingKey, nonce: sealed.nonce,
                                            authenticating: Sealed.associatedData) else {
            throw .sealed("the passphrase does not open the master key (\(path)): wrong passphrase? Nothing was changed")
        }
        defer { key.wipe() }
        return SecretBytes(key)
    }

    /// The file's record.
    struct Sealed {
        static let associatedData = MasterKeySeal.header + Array("passphrase".utf8)
        var parameters: Scrypt.Parameters
        var salt: [UInt8]
        var nonce: [UInt8]
        var sealed: [UInt8]

        init(parameters: Scrypt.Parameters, salt: [UInt8], nonce: [UInt8], sealed: [UInt8]) {
            self.parameters = parameters; self.salt = salt; self.nonce = nonce; self.sealed = sealed
        }

        init(decoding contents: [UInt8], path: String) throws(StoreError) {
            guard contents.starts(with: MasterKeySeal.header),
                  let map = try? CBORDecoder.decode(Array(contents.dropFirst(MasterKeySeal.header.count))) else {
                throw .corrupt("\(path) is neither a 32-byte key nor a sealed one")
            }
            guard map["method"]?.stringValue == "passphrase", map["kdf"]?.stringValue == "scrypt" else {
                throw .corrupt("\(path) is sealed by a method this Latchkey does not know")
            }
            guard let logN = map["logN"]?.uint64Value.flatMap({ UInt8(exactly: $0) }),
                  let r = map["r"]?.uint64Value.flatMap({ UInt32(exactly: $0) }),
                  let p = map["p"]?.uint64Value.flatMap({ UInt32(exactly: $0) }),
                  let salt = map["salt"]?.bytesValue, salt.count >= 16,
                  let nonce = map["nonce"]?.bytesValue, nonce.count == 12,
                  let sealed = map["sealed"]?.bytesValue, sealed.count == StoreDirectory.masterKeyCount + 16 else {
                throw .corrupt("\(path) is a sealed master key with missing or malformed fields")
            }
            let parameters = Scrypt.Parameters(logN: logN, r: r, p: p)
            guard parameters.isReasonable else { throw .corrupt("\(path) asks for scrypt parameters out of range") }
            self.init(parameters: parameters, salt: salt, nonce: nonce, sealed: sealed)
        }

        func encoded() -> [UInt8] {
            MasterKeySeal.header + CBORValue.map([
                "method": "passphrase", "kdf": "scrypt", "logN": .unsignedInt(UInt64(parameters.logN)),
                "r": .unsignedInt(UInt64(parameters.r)), "p": .unsignedInt(UInt64(parameters.p)),
                "salt": .byteString(salt), "nonce": .byteString(nonce), "sealed": .byteString(sealed),
            ]).encoded()
        }
    }
}
