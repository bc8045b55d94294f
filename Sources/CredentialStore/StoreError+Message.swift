import Authenticator

extension StoreError {
    /// A sentence for the user about the store at `directory`: what went wrong and what to do.
    public func message(directory: String) -> String {
        switch self {
        case .locked:
            return "the store \(directory) is in use by another running key (one `latchkey serve` per store; use --name or --store for a second key)"
        case let .permissions(message):
            return "the store \(directory) is not private: \(message)"
        case let .corrupt(message):
            return "the store \(directory) is unreadable (\(message)); restore it from a backup or move it aside to start a fresh key"
        case let .io(message):
            return "cannot open the store \(directory): \(message)"
        case .full:
            return "the store \(directory) is full"
        case let .sealed(message):
            return "the store \(directory) is sealed and did not open: \(message)"
        }
    }
}
