import CTAP
import FIDOCrypto

/// The key's PIN checked by its owner's tools (an export) against the store, with the same
/// retry rules as clientPIN (§6.5.5.7): a try costs a retry before the comparison, a match
/// restores the retries, none left is blocked. Not the wire's power-cycle rule: a tool's every
/// run is a new "power cycle".
public enum StorePINCheck {
    public enum Outcome: Equatable, Sendable {
        /// The key has no PIN: nothing to check.
        case noPIN
        case verified
        case wrong(retriesLeft: Int)
        /// No retries left: only a reset unblocks it.
        case blocked
    }

    /// `pinHash`: LEFT(SHA-256(PIN), 16).
    public static func verify(pinHash: [UInt8], store: CredentialStorePort) throws(StoreError) -> Outcome {
        guard var state = try store.loadPINState(), let stored = state.pinHash else { return .noPIN }
        guard state.retries > 0 else { return .blocked }
        state.retries -= 1
        try store.savePINState(state)
        guard constantTimeEquals(stored, pinHash) else {
            return state.retries == 0 ? .blocked : .wrong(retriesLeft: state.retries)
        }
        state.retries = PINPolicy.maxRetries
        try store.savePINState(state)
        return .verified
    }

    /// Whether the key has a PIN set.
    public static func isPINSet(store: CredentialStorePort) throws(StoreError) -> Bool {
        try store.loadPINState()?.pinHash != nil
    }
}
