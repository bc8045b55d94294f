import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// Client side of credentialManagement, config and largeBlobs, as a platform speaks them. The
/// authenticated messages are put together here from the spec text, not with the wire model's
/// own `authenticatedMessage` helpers, so the tests check those too.
extension AuthenticatorHarness {
    static let pin = "1234"

    /// A harness with PIN "1234" set through protocol two.
    static func pinned(presence: ScriptedPresence = ScriptedPresence(), store: InMemoryCredentialStore = InMemoryCredentialStore(),
                       port: CredentialStorePort? = nil) throws -> AuthenticatorHarness {
        let harness = try AuthenticatorHarness(presence: presence, store: store, port: port)
        XCTAssertEqual(try harness.setPIN(pin), .success)
        return harness
    }

    // MARK: credentialManagement (CTAP 2.1 §6.8)

    /// One credentialManagement request. With `token`, pinUvAuthParam = authenticate(token,
    /// subCommand ‖ CBOR(subCommandParams)) — the subcommand byte alone for 1 and 2.
    func credentialManagement(_ subCommand: UInt64, params: CBORValue? = nil, token: [UInt8]? = nil,
                              _ pinProtocol: PlatformPinProtocol = .two, command: CTAPCommand = .credentialManagement,
                              channel: UInt32? = nil) -> (status: CTAP2StatusCode, body: CBORValue?) {
        var map: [CBORValue: CBORValue] = [1: .unsignedInt(subCommand)]
        if let params { map[2] = params }
        if let token {
            var message = [UInt8(subCommand)]
            if subCommand != 1 && subCommand != 2, let params { message += params.encoded() }
            map[3] = .unsignedInt(pinProtocol.version)
            map[4] = .byteString(pinProtocol.authenticate(key: token, message))
        }
        return send(command, .map(map), channel: channel)
    }

    func credentialManagement(_ subcommand: CredentialManagementSubcommand, params: CBORValue? = nil, token: [UInt8]? = nil,
                              _ pinProtocol: PlatformPinProtocol = .two, command: CTAPCommand = .credentialManagement,
                              channel: UInt32? = nil) -> (status: CTAP2StatusCode, body: CBORValue?) {
        credentialManagement(subcommand.rawValue, params: params, token: token, pinProtocol, command: command, channel: channel)
    }

    /// A token with the cm permission (and `rpID` as its permissions RP ID, if given).
    func cmToken(rpID: String? = nil, _ pinProtocol: PlatformPinProtocol = .two,
                 file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        try grantedToken(Self.pin, pinProtocol, permissions: [.credentialManagement], rpID: rpID, file: file, line: line)
    }

    static func rpIDHash(_ rpID: String) -> [UInt8] { PlatformCrypto.sha256(Array(rpID.utf8)) }

    static func credentialParams(_ id: [UInt8]) -> CBORValue { .map([2: .map(["id": .byteString(id), "type": "public-key"])]) }

    // MARK: authenticatorConfig (CTAP 2.1 §6.11)

    /// One config request; with `token`, pinUvAuthParam = authenticate(token, 32×0xff ‖ 0x0d ‖
    /// subCommand ‖ CBOR(subCommandParams)).
    func config(_ subCommand: UInt64, params: CBORValue? = nil, token: [UInt8]? = nil,
                _ pinProtocol: PlatformPinProtocol = .two) -> (status: CTAP2StatusCode, body: CBORValue?) {
        var map: [CBORValue: CBORValue] = [1: .unsignedInt(subCommand)]
        if let params { map[2] = params }
        if let token {
            let message = [UInt8](repeating: 0xFF, count: 32) + [0x0D, UInt8(subCommand)] + (params?.encoded() ?? [])
            map[3] = .unsignedInt(pinProtocol.version)
            map[4] = .byteString(pinProtocol.authenticate(key: token, message))
        }
        return send(.config, .map(map))
    }

    func acfgToken(_ pinProtocol: PlatformPinProtocol = .two, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        try grantedToken(Self.pin, pinProtocol, permissions: [.authenticatorConfiguration], file: file, line: line)
    }

    // MARK: authenticatorLargeBlobs (CTAP 2.1 §6.10)

    func readLargeBlobs(offset: UInt64, get: UInt64) -> (status: CTAP2StatusCode, body: CBORValue?) {
        send(.largeBlobs, .map([1: .unsignedInt(get), 3: .unsignedInt(offset)]))
    }

    /// One set fragment; with `token`, pinUvAuthParam = authenticate(token, 32×0xff ‖ h'0c00' ‖
    /// uint32LE(offset) ‖ SHA-256(fragment)).
    func writeLargeBlobs(_ fragment: [UInt8], offset: UInt64, length: UInt64? = nil, token: [UInt8]? = nil,
                         _ pinProtocol: PlatformPinProtocol = .two) -> CTAP2StatusCode {
        var map: [CBORValue: CBORValue] = [2: .byteString(fragment), 3: .unsignedInt(offset)]
        if let length { map[4] = .unsignedInt(length) }
        if let token {
            let offsetLE = withUnsafeBytes(of: UInt32(offset).littleEndian) { Array($0) }
            let message = [UInt8](repeating: 0xFF, count: 32) + [0x0C, 0x00] + offsetLE + PlatformCrypto.sha256(fragment)
            map[5] = .byteString(pinProtocol.authenticate(key: token, message))
            map[6] = .unsignedInt(pinProtocol.version)
        }
        return send(.largeBlobs, .map(map)).status
    }

    /// A serialized large-blob array: CBOR(entries) ‖ LEFT(SHA-256(CBOR(entries)), 16).
    static func serializedLargeBlobArray(_ entries: [CBORValue]) -> [UInt8] {
        let body = CBORValue.array(entries).encoded()
        return body + Array(PlatformCrypto.sha256(body).prefix(16))
    }

    /// Write `array` in fragments of `fragmentLength`; every status.
    func writeLargeBlobArray(_ array: [UInt8], fragmentLength: Int, token: [UInt8]? = nil) -> [CTAP2StatusCode] {
        stride(from: 0, to: array.count, by: fragmentLength).map { offset in
            let fragment = Array(array[offset..<min(offset + fragmentLength, array.count)])
            return writeLargeBlobs(fragment, offset: UInt64(offset), length: offset == 0 ? UInt64(array.count) : nil, token: token)
        }
    }

    /// Read the whole array back in `get`-byte fragments.
    func readLargeBlobArray(get: UInt64 = 1000, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        var result: [UInt8] = []
        while true {
            let (status, body) = readLargeBlobs(offset: UInt64(result.count), get: get)
            XCTAssertEqual(status, .success, file: file, line: line)
            let fragment = body?[1]?.bytesValue ?? []
            result += fragment
            if fragment.count < Int(get) { return result }
        }
    }
}
