import Authenticator
import CredentialStore
import Encoding
import FIDOClient
import FIDOCrypto

extension NativeHostSession {
    /// Checks run as a browser runs them: the origin (SecurityError), the options' members
    /// (TypeError), the RP ID against the origin (SecurityError), then the key.
    func passkeyRequest(_ type: PasskeyRequestType, _ json: JSONDocument, id: Int64) throws(SignalFailure) -> String {
        let originText = try PasskeyJSON.string(json["origin"], "origin")
        let origin = try SignalOrigin(originText)
        // WebAuthn §5.1.3/§5.1.4: an opaque origin or an IP address has no valid RP ID.
        guard origin.isSecure else {
            throw .security("passkeys are for https origins and http://localhost only, not \(origin.serialized)")
        }
        guard !origin.hostIsIPAddress else {
            throw .security("\(origin.serialized) is an IP address, which no RP ID can name")
        }
        let topOrigin = try crossOriginTop(json, origin: origin)
        var reply = JSONValue.Object()
        reply.add("id", id)
        reply.add("ok", true)
        switch type {
        case .accounts:
            let rpID = try relyingPartyID(json["rpId"], origin: origin)
            // What the person may choose from before anything is verified: credProtect 2
            // passkeys only when the request's allowCredentials names them, 3 never (CTAP 2.1
            // §12.1, decided by the verification performed, which here is none). The request's
            // userVerification is read for compatibility and changes nothing.
            _ = try PasskeyJSON.optionalString(json["userVerification"], "userVerification")
            let allowList = try PasskeyJSON.descriptors(json["allowCredentials"], "allowCredentials")
            // `verify`: the person asked to see the passkeys only a verified sign-in may use; the
            // key verifies them first (built-in UV, or its PIN from the window), and only then are
            // credProtect 2 and 3 passkeys listed.
            let verify = try PasskeyJSON.optionalBool(json["verify"], "verify") ?? false
            if verify {
                try PasskeyClient(link: try openKey(PasskeyClient.defaultTimeoutMilliseconds), pin: try pin(json))
                    .verifyUser(rpID: rpID)
                log("accounts: the user verified on the key")
            }
            reply.add("rpId", rpID)
            reply.add("verified", verify)
            reply.add("accounts", try accounts(rpID: rpID, allowList: allowList, userVerified: verify))
        case .create:
            let options = try PasskeyCreationOptions(json["options"])
            let rpID = try relyingPartyID(options.rpID.map(JSONDocument.string), origin: origin)
            let timeout = PasskeyClient.timeoutMilliseconds(options.timeoutMilliseconds)
            let credential = try PasskeyClient(link: try openKey(timeout), timeoutMilliseconds: timeout, pin: try pin(json))
                .create(origin: origin.serialized, topOrigin: topOrigin, rpID: rpID, options: options)
            log("create: a passkey made on the key")
            reply.add("credential", credential)
        case .get:
            let options = try PasskeyRequestOptions(json["options"])
            let rpID = try relyingPartyID(options.rpID.map(JSONDocument.string), origin: origin)
            var allowList = options.allowCredentials
            if let chosen = json["credentialId"], chosen != .null {
                let chosenID = try PasskeyJSON.bytes(chosen, "credentialId")
                // The user's choice in Latchkey's menu narrows the page's list; it never widens it.
                guard allowList.isEmpty || allowList.contains(chosenID) else {
                    throw .notAllowed("the chosen passkey is not one of the page's allowCredentials")
                }
                allowList = [chosenID]
            }
            let timeout = PasskeyClient.timeoutMilliseconds(options.timeoutMilliseconds)
            let credential = try PasskeyClient(link: try openKey(timeout), timeoutMilliseconds: timeout, pin: try pin(json))
                .get(origin: origin.serialized, topOrigin: topOrigin, rpID: rpID, options: options, allowList: allowList)
            log("get: signed in with a passkey of the key")
            reply.add("credential", credential)
        }
        return reply.rendered
    }

    /// `topOrigin` and `crossOrigin` (optional, added in 1.3): the top-level page's origin, from
    /// the browser, when the request comes from a frame, and whether the frame is cross-origin
    /// with any ancestor (WebAuthn L3's sameOriginWithAncestors false: also a frame of the top's
    /// own origin inside another origin's frame). Cross-origin: a `topOrigin` other than `origin`,
    /// or `crossOrigin` true; then the serialized top origin goes into clientDataJSON. The RP ID
    /// is still checked against the frame's own origin, as §5.1.3 does.
    private func crossOriginTop(_ json: JSONDocument, origin: SignalOrigin) throws(SignalFailure) -> String? {
        let crossOrigin = try PasskeyJSON.optionalBool(json["crossOrigin"], "crossOrigin") ?? false
        guard let text = try PasskeyJSON.optionalString(json["topOrigin"], "topOrigin") else {
            if crossOrigin { throw .type("crossOrigin true needs the topOrigin") }
            return nil
        }
        let top = try SignalOrigin(text)
        guard top.isSecure, !top.hostIsIPAddress else {
            throw .security("a frame of \(top.serialized) cannot use passkeys: the top-level page is not a secure origin")
        }
        return crossOrigin || top.serialized != origin.serialized ? top.serialized : nil
    }

    /// The key's PIN the person typed in the extension's window (`pin`, optional): kept only for
    /// this request, as `PIN` (its bytes in SecretBytes), never logged.
    private func pin(_ json: JSONDocument) throws(SignalFailure) -> PIN? {
        guard let text = try PasskeyJSON.optionalString(json["pin"], "pin") else { return nil }
        var bytes = Array(text.utf8)
        do throws(PIN.Problem) {
            return try PIN(consuming: &bytes)
        } catch {
            throw .pin(PINNeed(state: .tooShort))
        }
    }

    /// The RP ID the page named (or the origin's host), checked as the signals check theirs.
    private func relyingPartyID(_ value: JSONDocument?, origin: SignalOrigin) throws(SignalFailure) -> String {
        let named = try PasskeyJSON.optionalString(value, "rpId") ?? origin.host
        return try origin.relyingPartyID(named, publicSuffixes: try publicSuffixes())
    }

    /// `[{"credentialId", "userHandle", "name", "displayName"}, …]`, oldest first: what the key
    /// would answer (`isOffered`), the user verified or not: with an empty allowList its
    /// discoverable passkeys (levels 2 and 3 only verified), otherwise those of the list it
    /// holds (level 3 only verified); hidden passkeys (signals) are never offered. Names are the site's own; the
    /// extension shows them as text.
    private func accounts(rpID: String, allowList: [[UInt8]], userVerified: Bool) throws(SignalFailure) -> JSONValue {
        let store = try openedStore()
        let credentials: [ResidentCredential]
        do throws(StoreError) {
            credentials = try store.residentCredentials(rpIDHash: SHA256.hash(Array(rpID.utf8)))
        } catch {
            throw .internal(error.message(directory: store.directory))
        }
        let offered = credentials.filter { $0.isOffered(allowList: allowList, userVerified: userVerified) }
        let entries = offered.sorted { $0.createdAt < $1.createdAt }.map { credential in
            var entry = JSONValue.Object()
            entry.add("credentialId", Base64URL.encode(credential.credentialID))
            entry.add("userHandle", Base64URL.encode(credential.userHandle))
            entry.add("name", credential.userName ?? "")
            entry.add("displayName", credential.userDisplayName ?? "")
            return entry.value
        }
        return .array(entries)
    }
}
