import Encoding

/// Add Virtual Authenticator's parameters (WebAuthn Level 3 §11.3, the Authenticator
/// Configuration table) as a rig key's options: the spec's defaults where it gives one — which
/// differ from the rig's (no resident keys, no extensions) — and its errors: a member the table
/// has not, of the wrong type or with a value not in the spec's list is "invalid argument"; a
/// transport or an extension this remote end does not have is "unsupported operation".
enum VirtualAuthenticatorOptions {
    /// The extensions a virtual authenticator may be given: those with a `webauthn:extension:…`
    /// capability, as chromedriver takes them (and so the rig's names for them).
    static let extensions = ["credBlob", "largeBlob", "minPinLength", "prf"]
    /// The members of the Authenticator Configuration table.
    static let members: Set<String> = ["protocol", "transport", "hasResidentKey", "hasUserVerification", "isUserConsenting",
                                       "isUserVerified", "extensions", "defaultBackupEligibility", "defaultBackupState"]
    /// The spec's transports: valid values, of which a rig key is only `usb`.
    static let transports: Set<String> = ["usb", "nfc", "ble", "smart-card", "hybrid", "internal"]
    /// What WebDriver's virtual authenticators sign with (Chromium's take ES256, EdDSA and RS256
    /// keys in Add Credential): the rig's default list and RS256 at the end, so an RSA key added
    /// signs and a browser's create() still gets ES256 first.
    static let algorithms = ["ES256", "EdDSA", "ES384", "ES512", "ES256K", "RS256"]

    static func rigParameters(_ parameters: [String: JSONDocument]) throws(WebDriverError) -> [String: JSONValue] {
        if let unknown = parameters.keys.sorted().first(where: { !members.contains($0) }) {
            throw .invalidArgument("\(JSONValue.quoted(unknown)) is not an authenticator configuration member "
                                   + "(\(members.sorted().joined(separator: ", ")))")
        }
        var params: [String: JSONValue] = [:]
        guard case .string(let proto)? = parameters["protocol"] else {
            throw .invalidArgument("protocol must be one of \"ctap1/u2f\", \"ctap2\", \"ctap2_1\"")
        }
        switch proto {
        case "ctap1/u2f": params["protocol"] = .string("u2f")
        // WebDriver's ctap2 is a CTAP 2.0 authenticator. Chromium's virtual one never shows UI: a
        // discoverable sign-in there ends without an account chooser. A real CTAP 2.0 key cannot
        // say its user chose (userSelected is CTAP 2.1), so the browser shows its chooser, which no
        // WebDriver reaches, and every such suite would hang. So ctap2 is a CTAP 2.1 key here
        // (getInfo FIDO_2_0 and FIDO_2_1, as a YubiKey 5 reports), which a 2.0 client uses as 2.0.
        case "ctap2": params["protocol"] = .string("ctap2_1")
        case "ctap2_1": params["protocol"] = .string("ctap2_1")
        default: throw .invalidArgument("protocol \(JSONValue.quoted(proto)) is not ctap1/u2f, ctap2 or ctap2_1")
        }
        let isU2F = proto == "ctap1/u2f"
        guard case .string(let transport)? = parameters["transport"], transports.contains(transport) else {
            throw .invalidArgument("transport must be one of \(transports.sorted().joined(separator: ", "))")
        }
        // Rig keys are HID devices: the spec's other transports are not something they can be.
        guard transport == "usb" else {
            throw .unsupportedOperation("transport \(JSONValue.quoted(transport)) is not one this remote end has: its keys are USB HID devices (usb)")
        }
        var flags: [String: Bool] = [:]
        for (member, fallback) in [("hasResidentKey", false), ("hasUserVerification", false), ("isUserConsenting", true),
                                   ("isUserVerified", false), ("defaultBackupEligibility", false), ("defaultBackupState", false)] {
            switch parameters[member] {
            case nil: flags[member] = fallback
            case .bool(let flag)?: flags[member] = flag
            case let other?: throw .invalidArgument("\(member) must be a boolean, not \(other.typeName)")
            }
        }
        var names: [String] = []
        switch parameters["extensions"] {
        case nil: break
        case .array(let elements)?:
            for element in elements {
                guard case .string(let name) = element else { throw .invalidArgument("extensions must be an array of strings") }
                guard extensions.contains(name) else {
                    throw .unsupportedOperation("extension \(JSONValue.quoted(name)) is not one this remote end has "
                                                + "(\(extensions.joined(separator: ", ")))")
                }
                names.append(name)
            }
        case let other?: throw .invalidArgument("extensions must be an array of strings, not \(other.typeName)")
        }
        if isU2F {
            // A CTAP1 key keeps no credential and verifies no user: as Chromium's virtual
            // authenticator does, those members are ignored (Add Credential then refuses a resident one).
            guard names.isEmpty else { throw .invalidArgument("a ctap1/u2f authenticator has no extensions") }
            params["isUserConsenting"] = .bool(flags["isUserConsenting"]!)
            return params
        }
        if proto == "ctap2", let late = names.first(where: { $0 != "prf" }) {
            throw .invalidArgument("\(late) needs a ctap2_1 authenticator (CTAP 2.0 has hmac-secret, WebAuthn's prf, alone)")
        }
        if names.contains("largeBlob"), flags["hasResidentKey"] != true {
            throw .invalidArgument("largeBlob needs hasResidentKey true (large blobs belong to discoverable credentials)")
        }
        for (member, value) in flags { params[member] = .bool(value) }
        // Every credential a virtual authenticator makes is in Get Credentials, non-resident ones too.
        params["keepsNonResidentCredentials"] = .bool(true)
        // credProtect has no WebDriver name: every CTAP 2.1 key offers it (a YubiKey 5 does), and
        // Chromium's virtual authenticator too.
        params["extensions"] = .array((["credProtect"] + names).map(JSONValue.string))
        params["algorithms"] = .array(algorithms.map(JSONValue.string))
        return params
    }
}

/// Add Credential's and Get Credentials' Credential Parameters (WebAuthn Level 3 §11.5), which
/// are the rig's Credential with its required members checked here first.
enum CredentialParameters {
    static let members = ["credentialId", "isResidentCredential", "rpId", "privateKey", "userHandle", "signCount", "largeBlob",
                          "backupEligibility", "backupState", "userName", "userDisplayName"]

    static func rigCredential(_ parameters: [String: JSONDocument]) throws(WebDriverError) -> JSONValue {
        for member in ["credentialId", "rpId", "privateKey"] {
            guard case .string? = parameters[member] else { throw .invalidArgument("\(member) must be a string") }
        }
        guard case .bool? = parameters["isResidentCredential"] else {
            throw .invalidArgument("isResidentCredential must be a boolean")
        }
        switch parameters["signCount"] {
        case .null?: break   // Level 3: no counter to start from; the key's starts at 0
        case .number(let count)? where count >= 0 && count <= Double(UInt32.max) && count.rounded() == count: break
        default: throw .invalidArgument("signCount must be a whole number from 0 to 4294967295")
        }
        for member in ["userHandle", "largeBlob", "userName", "userDisplayName"] {
            if let value = parameters[member], value != .null {
                guard case .string = value else { throw .invalidArgument("\(member) must be a string") }
            }
        }
        for member in ["backupEligibility", "backupState"] {
            if let value = parameters[member], value != .null {
                guard case .bool = value else { throw .invalidArgument("\(member) must be a boolean") }
            }
        }
        var credential: [String: JSONValue] = [:]
        for member in members {
            guard let value = parameters[member], value != .null else { continue }
            credential[member] = JSONValue(value)
        }
        return JSONValue.sorted(credential)
    }

    /// A rig Credential as Get Credentials' element: the spec's members, in its table's order.
    static func webDriverCredential(_ credential: JSONDocument) -> JSONValue {
        var object = JSONValue.Object()
        for member in members {
            guard let value = credential[member], value != .null else { continue }
            object.add(member, JSONValue(value))
        }
        return object.value
    }
}
