import Synchronization

/// What a key with a display does when an RP has several passkeys on it and the platform sends
/// no allowList: the user picks one on the key, and the key answers with that one alone and
/// `userSelected` (CTAP 2.1 §6.2.2, response member 0x06), so the platform shows no chooser.
///
/// Latchkey has no display. A key whose presence answers for its user (`--presence auto`, a rig
/// key) picks for them instead, so headless browsers — whose account choosers no WebDriver can
/// click — sign in whatever number of accounts an RP has: the account a test named for the next
/// sign-in at that RP (`select`, the rig's `selectCredential`), else the one used last at that
/// RP since the key started, else the newest. Any other presence leaves the choice to the
/// platform (numberOfCredentials and getNextAssertion), as a YubiKey 5, which has no display, does.
///
/// Shared between the key's worker and whoever names the next account (the rig's control
/// connections): every method takes the lock.
public final class AccountChooser: Sendable {
    /// How an account is named: by its credential ID or by its user handle.
    public enum Choice: Sendable, Equatable {
        case credentialID([UInt8])
        case userHandle([UInt8])

        public var isCredentialID: Bool {
            if case .credentialID = self { true } else { false }
        }

        public func matches(credentialID: [UInt8], userHandle: [UInt8]) -> Bool {
            switch self {
            case .credentialID(let id): id == credentialID
            case .userHandle(let handle): handle == userHandle
            }
        }
    }

    /// Whether the key picks the account (`recent`) or the platform does (`client`).
    public enum Policy: String, Sendable, CaseIterable {
        case recent
        case client
    }

    public let policy: Policy
    private let state = Mutex(State())

    private struct State {
        /// rpIDHash → the account named for the next discoverable sign-in there.
        var named: [ByteKey: Choice] = [:]
        /// rpIDHash → the credential ID that signed last there.
        var recent: [ByteKey: [UInt8]] = [:]
    }

    public init(policy: Policy = .recent) {
        self.policy = policy
    }

    /// Names the account the next discoverable sign-in at `rpIDHash` answers with (once).
    public func select(_ choice: Choice, rpIDHash: [UInt8]) {
        state.withLock { $0.named[ByteKey(rpIDHash)] = choice }
    }

    /// The account named for `rpIDHash`, if any, left in place.
    func peekNamed(rpIDHash: [UInt8]) -> Choice? {
        state.withLock { $0.named[ByteKey(rpIDHash)] }
    }

    /// The account named for `rpIDHash`, if any, taken: it answers one sign-in.
    func takeNamed(rpIDHash: [UInt8]) -> Choice? {
        state.withLock { $0.named.removeValue(forKey: ByteKey(rpIDHash)) }
    }

    /// The credential that signed last at `rpIDHash`.
    func recent(rpIDHash: [UInt8]) -> [UInt8]? {
        state.withLock { $0.recent[ByteKey(rpIDHash)] }
    }

    /// Records that `credentialID` signed (or was made) at `rpIDHash`.
    func used(credentialID: [UInt8], rpIDHash: [UInt8]) {
        state.withLock { state in
            let key = ByteKey(rpIDHash)
            // Most sign-ins repeat the last one: no write then (one lookup, no copy of the ID).
            if let index = state.recent.index(forKey: key) {
                if !ByteKey.sameBytes(state.recent.values[index], credentialID) { state.recent.values[index] = credentialID }
            } else {
                state.recent[key] = credentialID
            }
        }
    }

    /// Of `accounts` (credential ID and user handle, newest first), the one the key picks: the
    /// named one when it is among them, else the most recently used, else the newest.
    func pick(_ accounts: [(credentialID: [UInt8], userHandle: [UInt8])], rpIDHash: [UInt8]) -> Int {
        if let named = takeNamed(rpIDHash: rpIDHash),
           let index = accounts.firstIndex(where: { named.matches(credentialID: $0.credentialID, userHandle: $0.userHandle) }) {
            return index
        }
        if let last = recent(rpIDHash: rpIDHash), let index = accounts.firstIndex(where: { $0.credentialID == last }) {
            return index
        }
        return 0
    }
}
