/// What the caller must do after feeding an event to `CTAPHIDStateMachine`.
/// Actions are returned in the order they must be performed.
public enum CTAPHIDAction: Sendable, Equatable {
    /// Write this report (always exactly 64 bytes, no report-ID byte) to the connection.
    case send(report: [UInt8], to: ConnectionID)
    /// Run the request on the authenticator worker; call `complete(transactionID:...)`
    /// with its response when done. The worker runs requests one at a time, in
    /// order: a request dispatched right after an abort may queue behind the
    /// aborted one while it winds down.
    case dispatch(CTAPHIDRequest)
    /// Set the worker's cancellation flag for this transaction. The worker still
    /// calls `complete` afterwards (e.g. with CTAP2_ERR_KEEPALIVE_CANCEL 0x2D);
    /// the state machine forwards it if the request is still current and drops
    /// it if the request was aborted (INIT resync, connection closed).
    case cancelRequest(transactionID: UInt64)
    /// CTAPHID_WINK: blink, or log "wink".
    case wink
}
