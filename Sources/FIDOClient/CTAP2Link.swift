import CTAP
import LinuxHID

/// Something that carries CTAP2 requests to a key: command byte ‖ CBOR in, status ‖ CBOR out.
/// Over CTAPHID (a hidraw node or a key's socket) for `--device`/`--socket`; straight into an
/// in-process `Authenticator` for `pin … --offline` and for tests.
public protocol CTAP2Link: AnyObject {
    /// What to call the key in messages: "/dev/hidraw3", "socket /run/…/key.sock".
    var label: String { get }
    func exchange(_ request: [UInt8]) throws(DeviceError) -> [UInt8]
}

/// CTAP2 over CTAPHID_CBOR on one channel (INIT once, at creation).
public final class CTAPHIDLink: CTAP2Link {
    public let label: String
    public let client: CTAPHIDClient

    public init(client: CTAPHIDClient, label: String) throws(DeviceError) {
        self.client = client
        self.label = label
        let response: CTAPHIDClient.InitResponse
        do {
            response = try client.initialize()
        } catch {
            throw .transport("\(label): \(error)")
        }
        guard response.supportsCBOR else {
            throw .unsupported("\(label) is a U2F-only device (no CTAPHID_CBOR): it has no CTAP2 PIN or credential management")
        }
    }

    /// Opens `selection` (hidraw or socket) and INITs a channel. A request the device keeps
    /// answering with KEEPALIVEs for longer than `keepaliveLimitMilliseconds` is cancelled.
    public static func open(_ selection: DeviceSelection, replyTimeoutMilliseconds: Int32 = 2_000,
                            keepaliveLimitMilliseconds: UInt64 = 30_000) throws(DeviceError) -> CTAPHIDLink {
        let transport: ClientReportTransport
        do {
            transport = try selection.open()
        } catch {
            throw .transport(error.description)
        }
        return try CTAPHIDLink(client: CTAPHIDClient(link: transport, replyTimeoutMilliseconds: replyTimeoutMilliseconds,
                                                     keepaliveLimitMilliseconds: keepaliveLimitMilliseconds),
                               label: selection.label)
    }

    public func exchange(_ request: [UInt8]) throws(DeviceError) -> [UInt8] {
        do {
            return try client.cbor(request)
        } catch {
            throw .transport("\(label): \(error)")
        }
    }
}

/// CTAP2 into a key in this process: `handle` is its CTAP2 entry point (for an
/// `Authenticator`, `handleCTAP2` on one channel). The platform side needs nothing else of it.
public final class InProcessLink: CTAP2Link {
    public let label: String
    private let handle: ([UInt8]) -> [UInt8]

    public init(label: String, handle: @escaping ([UInt8]) -> [UInt8]) {
        self.label = label
        self.handle = handle
    }

    public func exchange(_ request: [UInt8]) throws(DeviceError) -> [UInt8] {
        handle(request)
    }
}

/// Why talking CTAP2 to a key failed; `message` is a sentence for the user.
public enum DeviceError: Error, Equatable, Sendable {
    /// The link failed (no such device, no reply, …).
    case transport(String)
    /// The key answered `command` with a status other than success.
    case status(CTAP2StatusCode?, raw: UInt8, command: String)
    /// The key's answer does not parse.
    case malformed(String)
    /// The key lacks what the operation needs.
    case unsupported(String)
    /// Anything else worth a sentence (wrong PIN with retries left, …).
    case failed(String)

    public var message: String {
        switch self {
        case .transport(let text), .malformed(let text), .unsupported(let text), .failed(let text):
            return text
        case let .status(code, raw, command):
            let name = code?.specName ?? "an unknown status"
            return "the key answered \(command) with \(name) (0x\(hexByte(raw)))"
        }
    }

    /// The status code, when the key answered with one.
    public var statusCode: CTAP2StatusCode? {
        if case .status(let code, _, _) = self { return code }
        return nil
    }
}
