import Encoding

/// The passkey provider's three requests (docs/native-host.md, "The passkey provider").
enum PasskeyRequestType: String {
    /// The visible passkeys the store holds for an RP: what the extension's menu lists.
    case accounts
    /// `navigator.credentials.create()` answered by the key.
    case create
    /// `navigator.credentials.get()` answered by the key.
    case get
}

/// `navigator.credentials.create()`'s and `get()`'s `publicKey` options as the extension sends
/// them: WebAuthn L3's JSON forms (`PublicKeyCredentialCreationOptionsJSON`,
/// `PublicKeyCredentialRequestOptionsJSON`, §5.1.x), binary members in base64url. Every member
/// is checked for its type (TypeError, as `parseCreationOptionsFromJSON` would throw); members
/// Latchkey does not use (hints, attestationFormats) are ignored, as a browser ignores unknown ones.
public struct PasskeyCreationOptions: Equatable, Sendable {
    public var rpID: String?
    public var rpName: String
    public var userID: [UInt8]
    public var userName: String
    public var userDisplayName: String
    public var challenge: [UInt8]
    /// COSE algorithms, in the RP's order of preference ("public-key" entries only).
    public var algorithms: [Int]
    public var timeoutMilliseconds: Double?
    public var excludeCredentials: [[UInt8]]
    public var residentKey: String
    public var userVerification: String
    public var attestation: String
    public var credProps: Bool
    /// prf, credProtect, credBlob (PasskeyExtensions.swift).
    public var extensions: PasskeyExtensionInputs

    init(_ json: JSONDocument?) throws(SignalFailure) {
        let options = try PasskeyJSON.object(json, "publicKey")
        let rp = try PasskeyJSON.object(options["rp"], "rp")
        rpID = try PasskeyJSON.optionalString(rp["id"], "rp.id")
        rpName = try PasskeyJSON.string(rp["name"], "rp.name")
        let user = try PasskeyJSON.object(options["user"], "user")
        userID = try PasskeyJSON.bytes(user["id"], "user.id")
        // WebAuthn §5.4.3: a user handle of 1 to 64 bytes.
        guard (1...64).contains(userID.count) else { throw .type("user.id must be 1 to 64 bytes, not \(userID.count)") }
        userName = try PasskeyJSON.string(user["name"], "user.name")
        userDisplayName = try PasskeyJSON.string(user["displayName"], "user.displayName")
        challenge = try PasskeyJSON.bytes(options["challenge"], "challenge")
        var algorithms: [Int] = []
        for (index, entry) in try PasskeyJSON.array(options["pubKeyCredParams"], "pubKeyCredParams").enumerated() {
            let parameters = try PasskeyJSON.object(entry, "pubKeyCredParams[\(index)]")
            let type = try PasskeyJSON.string(parameters["type"], "pubKeyCredParams[\(index)].type")
            guard case .number(let alg)? = parameters["alg"], alg.rounded() == alg, abs(alg) < 2_147_483_648 else {
                throw .type("pubKeyCredParams[\(index)].alg must be an integer")
            }
            // §5.1.3 step 10: entries of a type the client does not know are skipped.
            if type == "public-key" { algorithms.append(Int(alg)) }
        }
        // §5.1.3 step 10: an empty list means ES256 and RS256.
        if case .array(let given)? = options["pubKeyCredParams"], given.isEmpty { algorithms = [-7, -257] }
        self.algorithms = algorithms
        timeoutMilliseconds = try PasskeyJSON.optionalNumber(options["timeout"], "timeout")
        excludeCredentials = try PasskeyJSON.descriptors(options["excludeCredentials"], "excludeCredentials")
        let selection = try PasskeyJSON.optionalObject(options["authenticatorSelection"], "authenticatorSelection")
        let requireResidentKey = try PasskeyJSON.optionalBool(selection?["requireResidentKey"],
                                                              "authenticatorSelection.requireResidentKey") ?? false
        // §5.4.4: residentKey wins when it is a value the client knows; otherwise (absent or
        // unknown, which is ignored) requireResidentKey decides.
        let named = try PasskeyJSON.optionalString(selection?["residentKey"], "authenticatorSelection.residentKey")
        residentKey = named.flatMap { ["required", "preferred", "discouraged"].contains($0) ? $0 : nil }
            ?? (requireResidentKey ? "required" : "discouraged")
        userVerification = try PasskeyJSON.optionalString(selection?["userVerification"],
                                                          "authenticatorSelection.userVerification") ?? "preferred"
        attestation = try PasskeyJSON.optionalString(options["attestation"], "attestation") ?? "none"
        let extensions = try PasskeyJSON.optionalObject(options["extensions"], "extensions")
        credProps = try PasskeyJSON.optionalBool(extensions?["credProps"], "extensions.credProps") ?? false
        self.extensions = try PasskeyExtensionInputs(extensions)
        // WebAuthn L3 §10.1.4: evalByCredential has no meaning before a credential exists.
        if let prf = self.extensions.prf, !prf.evalByCredential.isEmpty {
            throw .notSupported("prf evalByCredential is for get(), not create()")
        }
    }
}

public struct PasskeyRequestOptions: Equatable, Sendable {
    /// The options from a JSON text (for tests and tools); nil when it is not valid options.
    public static func parse(_ json: [UInt8]) -> PasskeyRequestOptions? {
        guard let message = JSONDocument.parse(json) else { return nil }
        return try? PasskeyRequestOptions(message)
    }

    public var rpID: String?
    public var challenge: [UInt8]
    public var timeoutMilliseconds: Double?
    public var allowCredentials: [[UInt8]]
    public var userVerification: String
    /// prf, getCredBlob (PasskeyExtensions.swift).
    public var extensions: PasskeyExtensionInputs

    init(_ json: JSONDocument?) throws(SignalFailure) {
        let options = try PasskeyJSON.object(json, "publicKey")
        rpID = try PasskeyJSON.optionalString(options["rpId"], "rpId")
        challenge = try PasskeyJSON.bytes(options["challenge"], "challenge")
        timeoutMilliseconds = try PasskeyJSON.optionalNumber(options["timeout"], "timeout")
        allowCredentials = try PasskeyJSON.descriptors(options["allowCredentials"], "allowCredentials")
        userVerification = try PasskeyJSON.optionalString(options["userVerification"], "userVerification") ?? "preferred"
        extensions = try PasskeyExtensionInputs(try PasskeyJSON.optionalObject(options["extensions"], "extensions"))
    }
}
