/// CTAPHID_KEEPALIVE status byte (CTAP 2.1 §11.2.9.1.5).
public enum KeepaliveStatus: UInt8, Sendable {
    /// The authenticator is still processing the current request.
    case processing = 1
    /// The authenticator is waiting for user presence.
    case userPresenceNeeded = 2
}
