/// CTAPHID command codes (CTAP 2.1 §11.2.9), without the 0x80 bit that marks
/// an initialization packet on the wire.
public enum CTAPHIDCommand: UInt8, Sendable {
    case ping = 0x01
    case msg = 0x03
    case lock = 0x04
    case initialize = 0x06
    case wink = 0x08
    case cbor = 0x10
    case cancel = 0x11
    case keepalive = 0x3B
    case error = 0x3F

    /// §11.2.9.3: commands 0x40...0x7F are reserved for vendors.
    public static let vendorRange: ClosedRange<UInt8> = 0x40...0x7F

    public static func isVendor(_ command: UInt8) -> Bool {
        vendorRange.contains(command)
    }
}

extension CTAPHIDCommand {
    /// The spec's name without the CTAPHID_ prefix: "PING", "INIT", "CBOR", …
    public var name: String {
        switch self {
        case .ping: "PING"
        case .msg: "MSG"
        case .lock: "LOCK"
        case .initialize: "INIT"
        case .wink: "WINK"
        case .cbor: "CBOR"
        case .cancel: "CANCEL"
        case .keepalive: "KEEPALIVE"
        case .error: "ERROR"
        }
    }
}
