import CBOR
import CTAP
import FIDOClient
import FIDOCrypto

/// One CTAP2 command family as a fuzz target: the commands it sends, and how a platform would
/// authenticate a request of it (so that the fuzzer reaches the code behind pinUvAuthParam).
public struct CommandFamily {
    public var commands: [CTAPCommand]
    public var permissions: PinUvAuthPermissions
    /// The request with pinUvAuthParam and pinUvAuthProtocol set for `token`, or nil if it
    /// cannot carry them (not a map).
    public var authenticate: (_ command: CTAPCommand, _ request: CBORValue, _ token: PinUvAuthToken) -> CBORValue?

    public init(commands: [CTAPCommand], permissions: PinUvAuthPermissions,
                authenticate: @escaping (CTAPCommand, CBORValue, PinUvAuthToken) -> CBORValue?) {
        self.commands = commands; self.permissions = permissions; self.authenticate = authenticate
    }

    /// The input: a setup byte (FuzzKey), then records `op ‖ length(2) ‖ body`:
    /// op 0xF0–0xF5 control (clock, presence, power cycle, channel, built-in UV's answer); op < 0x80 the body sent as is
    /// after command `commands[op % count]`; other ops the body decoded, authenticated with a
    /// token from the correct PIN, re-encoded and sent.
    public func run(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        var input = FuzzInput(data, size)
        let key = FuzzKey(setup: input.byte())
        var token: PinUvAuthToken?
        var records = 0
        while !input.isAtEnd, records < 64 {
            records += 1
            let op = input.byte()
            let body = input.record() ?? []
            if key.control(op, body) {
                if op == 0xF3 { token = nil }
                continue
            }
            let command = commands[Int(op & 0x7F) % commands.count]
            let sent: [UInt8]
            if op & 0x80 == 0 {
                sent = body
            } else {
                guard let request = try? CBORDecoder.decode(body) else { continue }
                if token == nil { token = key.token(permissions, rpID: FuzzKey.rpID) }
                guard let token, let authenticated = authenticate(command, request, token) else { continue }
                sent = authenticated.encoded()
            }
            if command == .getAssertion { commonShapeAgrees(sent) }
            let response = key.send([command.rawValue] + sent)
            if Self.mayEndToken(command, parameters: sent, status: response.first) { token = nil }
        }
    }
}

extension CommandFamily {
    /// Whether the answer to `command` may have ended the platform's token: a reset that
    /// succeeded; a clientPIN subcommand other than getPINRetries (0x01), getKeyAgreement
    /// (0x02) and getUVRetries (0x07) that succeeded (a new token, a new PIN) or that touched
    /// the PIN's retries (which regenerates the key agreement). Other answers change nothing, so
    /// the token is kept: a fresh one costs two ECDH agreements and a key generation (about
    /// 0.8 ms under ASan), most of an input's time when it was made after every record. A wrong
    /// guess costs coverage only (the next request fails its pinUvAuthParam check).
    static func mayEndToken(_ command: CTAPCommand, parameters: [UInt8], status: UInt8?) -> Bool {
        switch command {
        case .reset: return status == CTAP2StatusCode.success.rawValue
        case .clientPIN:
            guard [CTAP2StatusCode.success, .pinInvalid, .pinBlocked, .pinAuthBlocked]
                .contains(where: { $0.rawValue == status }) else { return false }
            let subcommand = (try? CBORDecoder.decode(parameters))?[2]?.intValue
            return ![1, 2, 7].contains(subcommand)
        default: return false
        }
    }
}

/// pinUvAuthParam = authenticate(token, 32×0xFF ‖ command ‖ …) for largeBlobs and config (§6.10, §6.11).
public func platformMessage(_ command: UInt8, _ rest: [UInt8]) -> [UInt8] {
    [UInt8](repeating: 0xFF, count: 32) + [command] + rest
}

public func uint(_ value: UInt64) -> CBORValue { .unsignedInt(value) }

/// `GetAssertionRequest(commonShape:)`, the Authenticator's shortcut past the CBOR tree, reads
/// exactly what the full path (`CBORDecoder`, then `init(cbor:)`) reads from the same bytes, or
/// steps aside.
func commonShapeAgrees(_ parameters: [UInt8]) {
    guard let common = GetAssertionRequest(commonShape: parameters[...]) else { return }
    let full = (try? CBORDecoder.decode(parameters)).flatMap { try? GetAssertionRequest(cbor: $0) }
    invariant(full == common, "the common shape read \(common), the full path \(String(describing: full))")
}
