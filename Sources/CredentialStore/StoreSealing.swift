import Authenticator
import FIDOCrypto
import KeySealing

/// Sealing a store's master key, as the CLI asks for it: by the store's directory, whose files
/// are checked first (private, regular), with the store's errors.
extension MasterKeySeal {
    /// The state of the store in `directory`.
    public static func state(directory: String) throws(StoreError) -> State {
        try sealing { () throws(SealError) in try state(MasterKeyFile(directory: directory)) }
    }

    /// Seals the store's master key with `passphrase` (an unsealed store, or a sealed one whose
    /// current passphrase is `current`: a change of passphrase).
    public static func seal(directory: String, passphrase: SecretBytes, current: SecretBytes? = nil,
                            parameters: Scrypt.Parameters = .default) throws(StoreError) {
        try seal(directory: directory, with: .passphrase(passphrase, parameters), current: current)
    }

    /// Seals the store's master key with `method`: an unsealed store, or one sealed by any method
    /// (a passphrase-sealed one opened with `current`, else the installed source's).
    public static func seal(directory: String, with method: Method, current: SecretBytes? = nil) throws(StoreError) {
        let files = StoreDirectory(path: directory)
        try files.checkPermissions()
        try sealing { () throws(SealError) in try seal(files.masterKeyFile, with: method, current: current) }
    }

    /// Back to 32 raw bytes (rigs). `passphrase` opens a passphrase-sealed store (else the
    /// installed source's); a TPM or keyring opens itself.
    public static func unseal(directory: String, passphrase: SecretBytes? = nil) throws(StoreError) {
        let files = StoreDirectory(path: directory)
        try files.checkPermissions()
        try sealing { () throws(SealError) in try unseal(files.masterKeyFile, passphrase: passphrase) }
    }
}

/// Runs a sealing step, its error as the store's (the same case, the same message).
func sealing<R>(_ body: () throws(SealError) -> R) throws(StoreError) -> R {
    do {
        return try body()
    } catch {
        switch error {
        case let .corrupt(message): throw .corrupt(message)
        case let .io(message): throw .io(message)
        case let .permissions(message): throw .permissions(message)
        case let .sealed(message): throw .sealed(message)
        }
    }
}
