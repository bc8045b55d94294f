/// A complete request handed to the authenticator worker by a `.dispatch` action.
public struct CTAPHIDRequest: Sendable, Equatable {
    /// Unique per state machine; pass it back to `complete` / `updateKeepalive`.
    public let transactionID: UInt64
    /// The channel the request arrived on (and its response goes back on).
    public let channel: UInt32
    /// 0x03 MSG (U2F APDU), 0x10 CBOR (CTAP2), or a configured vendor command.
    public let command: UInt8
    public let payload: [UInt8]
    /// The connection that sent the request, which receives the response.
    public let connection: ConnectionID

    public init(transactionID: UInt64, channel: UInt32, command: UInt8, payload: [UInt8], connection: ConnectionID) {
        self.transactionID = transactionID
        self.channel = channel
        self.command = command
        self.payload = payload
        self.connection = connection
    }
}
