/// Why a master key could not be sealed, unsealed or read. Each case carries a message that
/// names the file and says what to do; the store maps them one to one onto its own errors.
public enum SealError: Error, Equatable, Sendable {
    /// The file or a sealed record is malformed, or was altered.
    case corrupt(String)
    /// A file, the TPM, the keyring or the key derivation failed.
    case io(String)
    /// A file is not a private regular file.
    case permissions(String)
    /// The master key is sealed and was not (or could not be) opened.
    case sealed(String)
}

extension SealError {
    /// The message it carries.
    public var message: String {
        switch self {
        case let .corrupt(text), let .io(text), let .permissions(text), let .sealed(text): text
        }
    }
}
