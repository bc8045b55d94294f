import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// Client-side PIN flows over authenticatorClientPIN, as a platform runs them.
extension AuthenticatorHarness {
    static let pinPaddedLength = 64

    func clientPIN(_ request: ClientPINRequest) -> (status: CTAP2StatusCode, body: CBORValue?) {
        send(.clientPIN, request.cborValue)
    }

    /// getKeyAgreement, then encapsulate.
    func session(_ pinProtocol: PlatformPinProtocol, file: StaticString = #filePath, line: UInt = #line) throws -> PlatformPinProtocol.Session {
        let (status, body) = clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .getKeyAgreement))
        XCTAssertEqual(status, .success, "getKeyAgreement", file: file, line: line)
        return try pinProtocol.encapsulate(try XCTUnwrap(body?[1], file: file, line: line))
    }

    /// The PIN's UTF-8 padded with 0x00 to 64 bytes.
    static func padded(_ pin: String, to length: Int = pinPaddedLength) -> [UInt8] {
        let bytes = Array(pin.utf8)
        return bytes + [UInt8](repeating: 0, count: max(0, length - bytes.count))
    }

    static func pinHash(_ pin: String) -> [UInt8] { Array(PlatformCrypto.sha256(Array(pin.utf8)).prefix(16)) }

    /// setPIN with an already padded PIN block.
    func setPIN(padded: [UInt8], _ pinProtocol: PlatformPinProtocol) throws -> CTAP2StatusCode {
        let session = try session(pinProtocol)
        let newPinEnc = session.encrypt(padded)
        return clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .setPIN,
                                          keyAgreement: session.platformKey,
                                          pinUvAuthParam: session.authenticate(newPinEnc), newPinEnc: newPinEnc)).status
    }

    func setPIN(_ pin: String, _ pinProtocol: PlatformPinProtocol = .two) throws -> CTAP2StatusCode {
        try setPIN(padded: Self.padded(pin), pinProtocol)
    }

    func changePIN(from current: String, to new: String, _ pinProtocol: PlatformPinProtocol = .two) throws -> CTAP2StatusCode {
        let session = try session(pinProtocol)
        let newPinEnc = session.encrypt(Self.padded(new))
        let pinHashEnc = session.encrypt(Self.pinHash(current))
        return clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .changePIN,
                                          keyAgreement: session.platformKey,
                                          pinUvAuthParam: session.authenticate(newPinEnc + pinHashEnc),
                                          newPinEnc: newPinEnc, pinHashEnc: pinHashEnc)).status
    }

    /// getPinUvAuthTokenUsingPinWithPermissions (0x09), or getPinToken (0x05) when
    /// `permissions` is nil. Returns the status and the decrypted token.
    func pinToken(_ pin: String, _ pinProtocol: PlatformPinProtocol = .two, permissions: PinUvAuthPermissions? = nil,
                  rpID: String? = nil) throws -> (status: CTAP2StatusCode, token: [UInt8]?) {
        let session = try session(pinProtocol)
        let request = ClientPINRequest(pinUvAuthProtocol: pinProtocol.version,
                                       subCommand: permissions == nil ? .getPinToken : .getPinUvAuthTokenUsingPinWithPermissions,
                                       keyAgreement: session.platformKey, pinHashEnc: session.encrypt(Self.pinHash(pin)),
                                       permissions: permissions?.rawValue, rpID: rpID)
        let (status, body) = clientPIN(request)
        guard status == .success else { return (status, nil) }
        guard let encrypted = body?[2]?.bytesValue else { return (status, nil) }
        return (status, session.decrypt(encrypted))
    }

    /// A token that must be granted.
    func grantedToken(_ pin: String, _ pinProtocol: PlatformPinProtocol = .two, permissions: PinUvAuthPermissions? = nil,
                      rpID: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let (status, token) = try pinToken(pin, pinProtocol, permissions: permissions, rpID: rpID)
        XCTAssertEqual(status, .success, file: file, line: line)
        return try XCTUnwrap(token, file: file, line: line)
    }

    func pinRetries() -> (retries: Int?, powerCycleState: Bool?) {
        let (_, body) = clientPIN(ClientPINRequest(subCommand: .getPINRetries))
        return (body?[3]?.intValue, body?[4]?.boolValue)
    }

    /// Attach pinUvAuthParam = authenticate(token, clientDataHash) to a request.
    static func authorized(_ request: MakeCredentialRequest, token: [UInt8], _ pinProtocol: PlatformPinProtocol) -> MakeCredentialRequest {
        var request = request
        request.pinUvAuthParam = pinProtocol.authenticate(key: token, request.clientDataHash)
        request.pinUvAuthProtocol = pinProtocol.version
        return request
    }

    static func authorized(_ request: GetAssertionRequest, token: [UInt8], _ pinProtocol: PlatformPinProtocol) -> GetAssertionRequest {
        var request = request
        request.pinUvAuthParam = pinProtocol.authenticate(key: token, request.clientDataHash)
        request.pinUvAuthProtocol = pinProtocol.version
        return request
    }

    func info() -> CBORValue? { send(.getInfo).body }
}
