import CBOR
import CTAP
import Encoding
import FIDOClient
import FIDOCrypto

/// The WebAuthn extensions the passkey provider serves beside credProps, read from the page's
/// JSON options (WebAuthn L3 §10 and CTAP 2.2 §12's mapping): `prf` (through the key's
/// hmac-secret, and hmac-secret-mc at creation), `credentialProtectionPolicy` and
/// `enforceCredentialProtectionPolicy` (credProtect), `credBlob`, `getCredBlob` and `largeBlob`
/// (through the key's largeBlobKey and its large-blob array).
public struct PasskeyExtensionInputs: Equatable, Sendable {
    public var prf: PRFRequest?
    public var largeBlob: LargeBlobRequest?
    public var credentialProtectionPolicy: CredentialProtectionPolicy?
    public var enforceCredentialProtectionPolicy = false
    public var credBlob: [UInt8]?
    public var getCredBlob = false

    public init() {}

    /// `extensions` of create() or get(); members of other extensions are ignored here (the
    /// extension sends none it does not serve).
    init(_ json: [String: JSONDocument]?) throws(SignalFailure) {
        guard let json else { return }
        if let value = json["prf"], value != .null { prf = try PRFRequest(value) }
        if let policy = try PasskeyJSON.optionalString(json["credentialProtectionPolicy"], "extensions.credentialProtectionPolicy") {
            // An unknown value is ignored, as WebAuthn ignores unknown enumeration values.
            credentialProtectionPolicy = [
                "userVerificationOptional": .userVerificationOptional,
                "userVerificationOptionalWithCredentialIDList": .userVerificationOptionalWithCredentialIDList,
                "userVerificationRequired": .userVerificationRequired,
            ][policy]
        }
        enforceCredentialProtectionPolicy = try PasskeyJSON.optionalBool(json["enforceCredentialProtectionPolicy"],
                                                                         "extensions.enforceCredentialProtectionPolicy") ?? false
        if let blob = json["credBlob"], blob != .null { credBlob = try PasskeyJSON.bytes(blob, "extensions.credBlob") }
        getCredBlob = try PasskeyJSON.optionalBool(json["getCredBlob"], "extensions.getCredBlob") ?? false
        if let value = json["largeBlob"], value != .null { largeBlob = try LargeBlobRequest(value) }
    }
}

/// `largeBlob`'s input (`AuthenticationExtensionsLargeBlobInputs`, WebAuthn L3 §10.1.5): `support`
/// at creation, `read` or `write` at a sign-in. Which members a ceremony may carry is checked by
/// the ceremony (`forCreate`, `forGet`).
public struct LargeBlobRequest: Equatable, Sendable {
    /// "required", "preferred", or nil when absent (an unknown value reads as "preferred", as
    /// WebAuthn ignores unknown enumeration values and `support` defaults to it).
    public var support: String?
    public var read = false
    public var write: [UInt8]?

    init(_ json: JSONDocument) throws(SignalFailure) {
        let object = try PasskeyJSON.object(json, "extensions.largeBlob")
        support = try PasskeyJSON.optionalString(object["support"], "extensions.largeBlob.support")
        read = try PasskeyJSON.optionalBool(object["read"], "extensions.largeBlob.read") ?? false
        if let blob = object["write"], blob != .null { write = try PasskeyJSON.bytes(blob, "extensions.largeBlob.write") }
    }

    public init(support: String? = nil, read: Bool = false, write: [UInt8]? = nil) {
        self.support = support; self.read = read; self.write = write
    }

    /// §10.1.5, registration: `read` or `write` is NotSupportedError; whether support is required.
    func isRequiredForCreate() throws(SignalFailure) -> Bool {
        guard !read, write == nil else {
            throw .notSupported("extensions.largeBlob.read and .write belong to get(), not create()")
        }
        return support == "required"
    }

    /// §10.1.5, authentication: `support` is NotSupportedError, as are `read` and `write` together
    /// and a `write` without exactly one credential in allowCredentials (a blob is written for one
    /// credential the site names, as Chromium requires).
    func checkForGet(allowCredentials: [[UInt8]]) throws(SignalFailure) {
        guard support == nil else { throw .notSupported("extensions.largeBlob.support belongs to create(), not get()") }
        guard !(read && write != nil) else { throw .notSupported("extensions.largeBlob cannot both read and write") }
        if write != nil, allowCredentials.count != 1 {
            throw .notSupported("extensions.largeBlob.write needs allowCredentials naming exactly one credential")
        }
    }
}

/// One or two PRF inputs (`AuthenticationExtensionsPRFValues`).
public struct PRFValues: Equatable, Sendable {
    public var first: [UInt8]
    public var second: [UInt8]?

    init(_ json: JSONDocument?, _ name: String) throws(SignalFailure) {
        let object = try PasskeyJSON.object(json, name)
        first = try PasskeyJSON.bytes(object["first"], "\(name).first")
        if let second = object["second"], second != .null { self.second = try PasskeyJSON.bytes(second, "\(name).second") }
    }

    public init(first: [UInt8], second: [UInt8]? = nil) {
        self.first = first; self.second = second
    }

    /// WebAuthn L3 §10.1.4: each input becomes the salt SHA-256("WebAuthn PRF" ‖ 0x00 ‖ input),
    /// so a site's PRF values never reach the key's hmac-secret directly.
    public var salts: [UInt8] {
        Self.salt(first) + (second.map(Self.salt) ?? [])
    }

    static func salt(_ input: [UInt8]) -> [UInt8] {
        SHA256.hash(Array("WebAuthn PRF".utf8) + [0] + input)
    }
}

/// `prf`'s input (`AuthenticationExtensionsPRFInputs`).
public struct PRFRequest: Equatable, Sendable {
    public var eval: PRFValues?
    public var evalByCredential: [[UInt8]: PRFValues] = [:]

    init(_ json: JSONDocument) throws(SignalFailure) {
        let object = try PasskeyJSON.object(json, "extensions.prf")
        if let eval = object["eval"], eval != .null { self.eval = try PRFValues(eval, "extensions.prf.eval") }
        for (key, value) in try PasskeyJSON.optionalObject(object["evalByCredential"], "extensions.prf.evalByCredential") ?? [:] {
            // §10.1.4: a key that is not base64url is a SyntaxError (the page's JSON, as a TypeError here).
            guard !key.isEmpty, let id = Base64URL.decode(key) else {
                throw .type("extensions.prf.evalByCredential has a key that is not a base64url credential ID")
            }
            evalByCredential[id] = try PRFValues(value, "extensions.prf.evalByCredential.\(key)")
        }
    }

    /// The values to evaluate for a sign-in with `allowList` (§10.1.4's client processing).
    func values(allowCredentials: [[UInt8]], allowList: [[UInt8]]) throws(SignalFailure) -> PRFValues? {
        if !evalByCredential.isEmpty {
            guard !allowCredentials.isEmpty else { throw .notSupported("prf evalByCredential needs allowCredentials") }
            guard evalByCredential.keys.allSatisfy(allowCredentials.contains) else {
                throw .type("prf evalByCredential names a credential that is not in allowCredentials")
            }
        }
        if allowList.count == 1, let chosen = evalByCredential[allowList[0]] { return chosen }
        return eval
    }
}

/// The client half of hmac-secret (CTAP 2.1 §12.5): the salts encrypted to a fresh shared secret
/// with the key, and the key's output decrypted with it.
struct HMACSecretClient {
    let session: PlatformPinUvAuthSession

    init(link: CTAP2Link) throws(SignalFailure) {
        do throws(DeviceError) {
            session = try RemoteAuthenticator(link: link).session()
        } catch {
            throw .notAllowed("the key gave no key agreement for hmac-secret (\(error.message))")
        }
    }

    func input(_ values: PRFValues) throws(SignalFailure) -> HMACSecretInput {
        do throws(PlatformPinUvAuthError) {
            let saltEnc = try session.encrypt(values.salts)
            return HMACSecretInput(keyAgreement: session.platformKey, saltEnc: saltEnc, saltAuth: session.authenticate(saltEnc),
                                   pinUvAuthProtocol: UInt64(session.pinUvAuthProtocol.rawValue))
        } catch {
            throw .internal("the hmac-secret salts could not be encrypted (\(error.message))")
        }
    }

    /// `{"first": B64URL, "second"?: B64URL}` from the key's encrypted output (32 or 64 bytes).
    func results(_ encrypted: [UInt8]) throws(SignalFailure) -> JSONValue.Object {
        let output: [UInt8]
        do throws(PlatformPinUvAuthError) {
            output = try session.decrypt(encrypted)
        } catch {
            throw .internal("the key's hmac-secret output could not be decrypted (\(error.message))")
        }
        guard output.count == 32 || output.count == 64 else {
            throw .internal("the key's hmac-secret output is \(output.count) bytes, not 32 or 64")
        }
        var results = JSONValue.Object()
        results.add("first", Base64URL.encode(Array(output[0..<32])))
        if output.count == 64 { results.add("second", Base64URL.encode(Array(output[32..<64]))) }
        return results
    }
}
