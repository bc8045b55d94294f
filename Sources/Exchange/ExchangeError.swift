/// What is wrong with a file to import or an export asked for: each names the member, the
/// method or the fix, and none carries a secret.
public enum ExchangeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not the format it claims, or a member missing or of the wrong type (names the path).
    case malformed(String)
    case unsupportedVersion(String)
    /// A format this reader does not know.
    case unknownFormat(String)
    /// An encrypted file that does not open (wrong passphrase, wrong key, altered or cut short).
    case decryption(String)
    /// Encryption needs something the caller did not give (a key file that is not one, …).
    case encryption(String)

    public var description: String {
        switch self {
        case let .malformed(text), let .unsupportedVersion(text), let .unknownFormat(text),
             let .decryption(text), let .encryption(text): text
        }
    }
}
