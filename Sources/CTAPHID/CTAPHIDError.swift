/// CTAPHID_ERROR codes (CTAP 2.1 §11.2.9.1.6). An error response is the
/// ERROR command (0xBF on the wire) with this code as its one-byte payload.
public enum CTAPHIDError: UInt8, Error, Sendable {
    case invalidCommand = 0x01
    case invalidParameter = 0x02
    case invalidLength = 0x03
    case invalidSequence = 0x04
    case messageTimeout = 0x05
    case channelBusy = 0x06
    case lockRequired = 0x0A
    case invalidChannel = 0x0B
    case other = 0x7F
}

extension CTAPHIDError {
    /// The spec's name: "ERR_INVALID_SEQ", "ERR_CHANNEL_BUSY", …
    public var name: String {
        switch self {
        case .invalidCommand: "ERR_INVALID_CMD"
        case .invalidParameter: "ERR_INVALID_PAR"
        case .invalidLength: "ERR_INVALID_LEN"
        case .invalidSequence: "ERR_INVALID_SEQ"
        case .messageTimeout: "ERR_MSG_TIMEOUT"
        case .channelBusy: "ERR_CHANNEL_BUSY"
        case .lockRequired: "ERR_LOCK_REQUIRED"
        case .invalidChannel: "ERR_INVALID_CHANNEL"
        case .other: "ERR_OTHER"
        }
    }
}
