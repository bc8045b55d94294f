import CBOR
import CTAP
import FIDOCrypto

/// The platform side of CTAP2 for the CLI: getInfo, clientPIN (setPIN, changePIN, tokens) and
/// authenticatorCredentialManagement against any CTAP 2.0/2.1 key behind a `CTAP2Link`.
public final class RemoteAuthenticator {
    public let link: CTAP2Link
    /// Use this PIN/UV auth protocol instead of negotiating (tests of protocol one against keys
    /// that prefer two).
    public var pinUvAuthProtocolOverride: PlatformPinUvAuthProtocol?
    private var cachedInfo: DeviceInfo?

    public init(link: CTAP2Link) {
        self.link = link
    }

    /// As `init(link:)`, with the getInfo the caller already read (no second round trip).
    public init(link: CTAP2Link, info: DeviceInfo) {
        self.link = link
        self.cachedInfo = info
    }

    public var label: String { link.label }

    // MARK: - Requests

    /// One request; the response body (nil when the key sent the status byte alone), or the
    /// status as `DeviceError.status`.
    func request(_ command: CTAPCommand, _ parameters: CBORValue?, name: String) throws(DeviceError) -> CBORValue? {
        let response = try link.exchange([command.rawValue] + (parameters?.encoded() ?? []))
        guard let status = response.first else { throw .malformed("\(label) answered \(name) with nothing") }
        guard status == CTAP2StatusCode.success.rawValue else {
            throw .status(CTAP2StatusCode(rawValue: status), raw: status, command: name)
        }
        guard response.count > 1 else { return nil }
        do {
            return try CBORDecoder.decode(Array(response.dropFirst()))
        } catch {
            throw .malformed("\(label) answered \(name) with malformed CBOR (\(error))")
        }
    }

    /// authenticatorGetInfo (0x04), asked once.
    public func info() throws(DeviceError) -> DeviceInfo {
        if let cachedInfo { return cachedInfo }
        guard let body = try request(.getInfo, nil, name: "authenticatorGetInfo") else {
            throw .malformed("\(label) answered authenticatorGetInfo without a body")
        }
        let parsed = try DeviceInfo(cbor: body)
        cachedInfo = parsed
        return parsed
    }

    /// The PIN/UV auth protocol to use with this key, both sides agreeing.
    public func pinUvAuthProtocol() throws(DeviceError) -> PlatformPinUvAuthProtocol {
        if let pinUvAuthProtocolOverride { return pinUvAuthProtocolOverride }
        let info = try info()
        guard let chosen = PlatformPinUvAuthProtocol.negotiate(info.pinUvAuthProtocols) else {
            throw .unsupported("\(label) speaks only PIN/UV auth protocols \(info.pinUvAuthProtocols ?? []), none of which Latchkey knows")
        }
        return chosen
    }

    // MARK: - clientPIN (0x06)

    func clientPIN(_ request: ClientPINRequest, name: String) throws(DeviceError) -> ClientPINResponse? {
        guard let body = try self.request(.clientPIN, request.cborValue, name: "clientPIN \(name)") else { return nil }
        do {
            return try ClientPINResponse(cbor: body)
        } catch {
            throw .malformed("\(label) answered clientPIN \(name) with an unexpected map (\(error.specName))")
        }
    }

    /// getPINRetries (0x01): retries left, and whether the key waits for a power cycle.
    public func pinRetries() throws(DeviceError) -> (retries: Int, powerCycleNeeded: Bool) {
        let pinUvAuthProtocol = try pinUvAuthProtocol()
        let response = try clientPIN(ClientPINRequest(pinUvAuthProtocol: pinUvAuthProtocol.rawValue, subCommand: .getPINRetries),
                                     name: "getPINRetries")
        guard let retries = response?.pinRetries else {
            throw .malformed("\(label) answered getPINRetries without pinRetries")
        }
        return (retries, response?.powerCycleState ?? false)
    }

    /// getKeyAgreement (0x02) and encapsulate(): a fresh shared secret with the key.
    public func session() throws(DeviceError) -> PlatformPinUvAuthSession {
        let pinUvAuthProtocol = try pinUvAuthProtocol()
        let response = try clientPIN(ClientPINRequest(pinUvAuthProtocol: pinUvAuthProtocol.rawValue, subCommand: .getKeyAgreement),
                                     name: "getKeyAgreement")
        guard let key = response?.keyAgreement else {
            throw .malformed("\(label) answered getKeyAgreement without a keyAgreement")
        }
        do {
            return try pinUvAuthProtocol.encapsulate(key.cborValue)
        } catch {
            throw .malformed("\(label): \(error.message)")
        }
    }

    /// The minimum PIN length the key enforces (getInfo 0x0D; 4 when absent, CTAP 2.1 §6.5.1).
    public func minimumPINLength() throws(DeviceError) -> Int {
        try info().minPINLength ?? PIN.defaultMinimumLength
    }

    /// setPIN (0x03), CTAP 2.1 §6.5.5.5: newPinEnc = encrypt(shared, PIN padded to 64 bytes),
    /// pinUvAuthParam = authenticate(shared, newPinEnc).
    public func setPIN(_ pin: PIN) throws(DeviceError) {
        let info = try info()
        guard info.options["clientPin"] != nil else {
            throw .unsupported("\(label) has no clientPIN (getInfo has no clientPin option)")
        }
        if info.options["clientPin"] == true {
            throw .failed("\(label) already has a PIN; change it with `latchkey pin change`")
        }
        try checkPolicy(pin)
        let session = try session()
        do {
            let newPinEnc = try session.newPinEnc(pin)
            _ = try clientPIN(ClientPINRequest(pinUvAuthProtocol: session.pinUvAuthProtocol.rawValue, subCommand: .setPIN,
                                               keyAgreement: session.platformKey,
                                               pinUvAuthParam: session.authenticate(newPinEnc), newPinEnc: newPinEnc),
                              name: "setPIN")
        } catch let error as DeviceError {
            throw explain(error, operation: .setPIN)
        } catch {
            throw .failed((error as? PlatformPinUvAuthError)?.message ?? "\(error)")
        }
        cachedInfo = nil
    }

    /// changePIN (0x04), §6.5.5.6: pinHashEnc = encrypt(shared, LEFT(SHA-256(current), 16)),
    /// pinUvAuthParam = authenticate(shared, newPinEnc ‖ pinHashEnc).
    public func changePIN(current: PIN, new: PIN) throws(DeviceError) {
        let info = try info()
        guard info.options["clientPin"] == true else {
            throw .failed("\(label) has no PIN yet; set one with `latchkey pin set`")
        }
        try checkPolicy(new)
        let session = try session()
        do {
            let newPinEnc = try session.newPinEnc(new)
            let pinHashEnc = try session.pinHashEnc(current)
            _ = try clientPIN(ClientPINRequest(pinUvAuthProtocol: session.pinUvAuthProtocol.rawValue, subCommand: .changePIN,
                                               keyAgreement: session.platformKey,
                                               pinUvAuthParam: session.authenticate(newPinEnc + pinHashEnc),
                                               newPinEnc: newPinEnc, pinHashEnc: pinHashEnc),
                              name: "changePIN")
        } catch let error as DeviceError {
            throw explain(error, operation: .changePIN)
        } catch {
            throw .failed((error as? PlatformPinUvAuthError)?.message ?? "\(error)")
        }
        cachedInfo = nil
    }

    /// A pinUvAuthToken for `permissions`: getPinUvAuthTokenUsingPinWithPermissions (0x09) when
    /// the key has the pinUvAuthToken option, else the CTAP 2.0 getPinToken (0x05), whose token
    /// carries the legacy default permissions (and credential management on 2.0-era keys).
    public func pinUvAuthToken(pin: PIN, permissions: PinUvAuthPermissions, rpID: String? = nil) throws(DeviceError) -> PinUvAuthToken {
        do throws(DeviceError) {
            return try pinUvAuthTokenKeepingStatus(pin: pin, permissions: permissions, rpID: rpID)
        } catch {
            throw explain(error, operation: .token)
        }
    }

    /// As `pinUvAuthToken(pin:permissions:rpID:)`, but a status the key answered stays
    /// `DeviceError.status` (PIN_INVALID, PIN_BLOCKED, PIN_AUTH_BLOCKED…), for a caller that words
    /// it itself (the passkey provider's window shows the retries left).
    public func pinUvAuthTokenKeepingStatus(pin: PIN, permissions: PinUvAuthPermissions,
                                            rpID: String? = nil) throws(DeviceError) -> PinUvAuthToken {
        let info = try info()
        guard info.options["clientPin"] == true else {
            throw .failed("\(label) has no PIN; credential management needs one: set it with `latchkey pin set`")
        }
        let session = try session()
        do {
            let pinHashEnc = try session.pinHashEnc(pin)
            let request: ClientPINRequest
            if info.options["pinUvAuthToken"] == true {
                request = ClientPINRequest(pinUvAuthProtocol: session.pinUvAuthProtocol.rawValue,
                                           subCommand: .getPinUvAuthTokenUsingPinWithPermissions,
                                           keyAgreement: session.platformKey, pinHashEnc: pinHashEnc,
                                           permissions: permissions.rawValue, rpID: rpID)
            } else {
                request = ClientPINRequest(pinUvAuthProtocol: session.pinUvAuthProtocol.rawValue, subCommand: .getPinToken,
                                           keyAgreement: session.platformKey, pinHashEnc: pinHashEnc)
            }
            let name = request.subcommand == .getPinToken ? "getPinToken" : "getPinUvAuthTokenUsingPinWithPermissions"
            guard let encrypted = try clientPIN(request, name: name)?.pinUvAuthToken else {
                throw DeviceError.malformed("\(label) answered \(name) without a pinUvAuthToken")
            }
            return try session.token(fromEncrypted: encrypted)
        } catch let error as DeviceError {
            throw error
        } catch {
            throw .failed((error as? PlatformPinUvAuthError)?.message ?? "\(error)")
        }
    }

    /// A pinUvAuthToken by the key's built-in user verification (clientPIN
    /// getPinUvAuthTokenUsingUvWithPermissions, 0x06), for a key whose getInfo has `uv` and
    /// `pinUvAuthToken`: what libfido2's fido_dev_get_uv_token does.
    public func uvAuthToken(permissions: PinUvAuthPermissions, rpID: String? = nil) throws(DeviceError) -> PinUvAuthToken {
        let info = try info()
        guard info.options["uv"] == true, info.options["pinUvAuthToken"] == true else {
            throw .unsupported("\(label) has no built-in user verification")
        }
        let session = try session()
        let request = ClientPINRequest(pinUvAuthProtocol: session.pinUvAuthProtocol.rawValue,
                                       subCommand: .getPinUvAuthTokenUsingUvWithPermissions,
                                       keyAgreement: session.platformKey, permissions: permissions.rawValue, rpID: rpID)
        let name = "getPinUvAuthTokenUsingUvWithPermissions"
        guard let encrypted = try clientPIN(request, name: name)?.pinUvAuthToken else {
            throw .malformed("\(label) answered \(name) without a pinUvAuthToken")
        }
        do {
            return try session.token(fromEncrypted: encrypted)
        } catch {
            throw .failed(error.message)
        }
    }

    /// The key's PIN policy, checked before anything is sent, so that a PIN the key would refuse
    /// costs nothing (CTAP 2.1 §6.5.1: ≥ minPINLength code points, ≤ 63 bytes).
    func checkPolicy(_ pin: PIN) throws(DeviceError) {
        do {
            try pin.check(minimumLength: try minimumPINLength())
        } catch let error as DeviceError {
            throw error
        } catch {
            throw .failed((error as? PIN.Problem)?.message ?? "\(error)")
        }
    }

    enum PINOperation { case setPIN, changePIN, token }

    /// A clientPIN failure in words, with the retries left after a wrong PIN.
    func explain(_ error: DeviceError, operation: PINOperation) -> DeviceError {
        guard let code = error.statusCode else { return error }
        switch code {
        case .pinInvalid:
            let retries = (try? pinRetries().retries).map { "\($0) attempt\($0 == 1 ? "" : "s") left" } ?? "retries unknown"
            return .failed("wrong PIN for \(label) (\(retries) before the key blocks its PIN)")
        case .pinAuthBlocked:
            return .failed("\(label) takes no more PIN attempts until it is power-cycled (three wrong PINs in a row): "
                + "unplug and replug it — a Latchkey key: restart it, or send its `latchkey serve` SIGHUP")
        case .pinBlocked:
            return .failed("the PIN of \(label) is blocked after too many wrong PINs; only a reset makes the key usable again, "
                + "and a reset deletes every credential on it")
        case .pinNotSet:
            return .failed("\(label) has no PIN; set one with `latchkey pin set`")
        case .pinPolicyViolation:
            if operation == .token {
                return .failed("\(label) requires a PIN change before it hands out tokens (forcePINChange): run `latchkey pin change`")
            }
            let minimum = (try? minimumPINLength()) ?? PIN.defaultMinimumLength
            return .failed("\(label) refused the new PIN: it needs at least \(minimum) characters and at most 63 bytes"
                + (operation == .changePIN ? ", and after a forced change a PIN other than the old one" : ""))
        case .pinAuthInvalid where operation == .setPIN:
            return .failed("\(label) refused setPIN: a PIN is probably set already (use `latchkey pin change`)")
        default:
            return error
        }
    }
}

/// What the CLI needs from authenticatorGetInfo (CTAP 2.1 §6.4).
public struct DeviceInfo: Sendable, Equatable {
    public var versions: [String]
    public var aaguid: [UInt8]
    public var options: [String: Bool]
    /// 0x06, most preferred first; nil when absent (CTAP 2.0 keys may omit it).
    public var pinUvAuthProtocols: [Int]?
    public var forcePINChange: Bool?
    public var minPINLength: Int?
    public var remainingDiscoverableCredentials: Int?
    /// 0x07 and 0x08: how many credential IDs a list may hold, and how long one may be.
    public var maxCredentialCountInList: Int?
    public var maxCredentialIdLength: Int?
    /// 0x02: the extensions the key supports (empty when absent).
    public var extensions: [String] = []
    /// 0x0F: the longest credBlob the key stores (nil: none).
    public var maxCredBlobLength: Int?
    /// 0x05: the longest message the key takes (nil: CTAP's default, 1024).
    public var maxMsgSize: Int?
    /// 0x0B: the size of the key's large-blob array (nil: the key has none).
    public var maxSerializedLargeBlobArray: Int?

    public init(versions: [String], aaguid: [UInt8] = [], options: [String: Bool], pinUvAuthProtocols: [Int]?,
                forcePINChange: Bool? = nil, minPINLength: Int? = nil, remainingDiscoverableCredentials: Int? = nil) {
        self.versions = versions; self.aaguid = aaguid; self.options = options
        self.pinUvAuthProtocols = pinUvAuthProtocols; self.forcePINChange = forcePINChange
        self.minPINLength = minPINLength; self.remainingDiscoverableCredentials = remainingDiscoverableCredentials
    }

    /// Tolerant of unknown keys; a known key of the wrong type is malformed.
    public init(cbor value: CBORValue) throws(DeviceError) {
        guard let map = value.mapValue else { throw .malformed("getInfo is not a CBOR map") }
        func malformed(_ field: String) -> DeviceError { .malformed("getInfo \(field) has the wrong type") }
        if let versions = map[1] {
            guard let list = versions.arrayValue?.compactMap(\.stringValue) else { throw malformed("versions (0x01)") }
            self.versions = list
        } else {
            self.versions = []
        }
        aaguid = map[3]?.bytesValue ?? []
        var options: [String: Bool] = [:]
        if let optionMap = map[4] {
            guard let entries = optionMap.mapValue else { throw malformed("options (0x04)") }
            for (key, flag) in entries {
                if let name = key.stringValue, let enabled = flag.boolValue { options[name] = enabled }
            }
        }
        self.options = options
        if let protocols = map[6] {
            guard let list = protocols.arrayValue?.compactMap(\.intValue) else { throw malformed("pinUvAuthProtocols (0x06)") }
            pinUvAuthProtocols = list
        } else {
            pinUvAuthProtocols = nil
        }
        forcePINChange = map[0x0C]?.boolValue
        minPINLength = map[0x0D]?.intValue
        remainingDiscoverableCredentials = map[0x14]?.intValue
        maxCredentialCountInList = map[0x07]?.intValue
        maxCredentialIdLength = map[0x08]?.intValue
        extensions = map[2]?.arrayValue?.compactMap(\.stringValue) ?? []
        maxCredBlobLength = map[0x0F]?.intValue
        maxMsgSize = map[0x05]?.intValue
        maxSerializedLargeBlobArray = map[0x0B]?.intValue
    }
}
