import CBOR
import CTAP
import CTAPHID

/// Which bytes of a reassembled CTAPHID message are secret and must not reach a trace file
/// (architecture rule 5: no secret ever reaches a log line — a trace is a log).
///
/// Secret, by CTAP 2.1 message (map keys in parentheses):
/// - authenticatorClientPIN request: newPinEnc (5), pinHashEnc (6) — the encrypted PIN and PIN
///   hash; response: pinUvAuthToken (2), the encrypted token.
/// - makeCredential (extensions, 6) / getAssertion (extensions, 4) requests: hmac-secret and
///   hmac-secret-mc saltEnc (2), credBlob.
/// - makeCredential / getAssertion / getNextAssertion responses: authData extension outputs
///   hmac-secret, hmac-secret-mc (encrypted outputs) and credBlob; largeBlobKey (5 in
///   makeCredential, 7 in getAssertion).
/// - authenticatorLargeBlobs: set (2) in requests, config (1) in responses (large-blob data).
/// - credentialManagement responses: largeBlobKey (0x0B).
///
/// Identifying, and blanked too, because a trace is shared to debug a client and where its
/// user has accounts is theirs (issue 16's secrets scan): the RP and user entities —
/// makeCredential rp (2) and user (3), getAssertion rpId (1), clientPIN rpId (0x0A),
/// config setMinPINLength's minPinLengthRPIDs, getAssertion/getNextAssertion
/// response user (4), credentialManagement responses rp (3) and user (6) and the user (3) in
/// updateUserInformation's subCommandParams. Their SHA-256 (rpIdHash in authData and
/// credentialManagement) stays: it names no one, and matches what a client computes.
///
/// Not secret, and kept because they are what one debugs: pinUvAuthParam (a MAC), saltAuth,
/// key-agreement public keys, credential IDs (sealed blobs, as are U2F key handles),
/// signatures, attestation, rpIdHash.
///
/// A secret field of an unexpected type has every string inside it blanked. A message of one
/// of these commands whose CBOR cannot be walked has its whole body blanked, and so has a
/// response body whose request the recorder did not see: when in doubt, leave it out.
enum TraceRedactor {
    /// Extension outputs in authenticator data that carry secrets.
    static let secretAuthDataExtensions: Set<String> = ["hmac-secret", "hmac-secret-mc", "credBlob"]

    /// Secret spans of a request the key received.
    static func requestRedactions(hidCommand: UInt8, payload: [UInt8]) -> [TraceRedaction] {
        guard hidCommand == CTAPHIDCommand.cbor.rawValue, payload.count > 1,
              let command = CTAPCommand(rawValue: payload[0]) else { return [] }
        let name = fieldPrefix(command)
        let rules: (CBORLayout, inout [TraceRedaction]) -> Void
        switch command {
        case .clientPIN:
            rules = { map, out in
                secretValue(map.value(forKey: 5), field: "\(name).newPinEnc", into: &out)
                secretValue(map.value(forKey: 6), field: "\(name).pinHashEnc", into: &out)
                identifierValue(map.value(forKey: 0x0A), field: "\(name).rpId", into: &out)
            }
        case .makeCredential:
            rules = { map, out in
                identifierValue(map.value(forKey: 2), field: "\(name).rp", into: &out)
                identifierValue(map.value(forKey: 3), field: "\(name).user", into: &out)
                extensionInputs(map.value(forKey: 6), prefix: "\(name).extensions", into: &out)
            }
        case .getAssertion:
            rules = { map, out in
                identifierValue(map.value(forKey: 1), field: "\(name).rpId", into: &out)
                extensionInputs(map.value(forKey: 4), prefix: "\(name).extensions", into: &out)
            }
        case .credentialManagement, .credentialManagementPreview:
            rules = { map, out in
                identifierValue(map.value(forKey: 2)?.value(forKey: 3), field: "\(name).subCommandParams.user", into: &out)
            }
        case .largeBlobs:
            rules = { map, out in secretValue(map.value(forKey: 2), field: "\(name).set", into: &out) }
        case .config:
            // setMinPINLength's minPinLengthRPIDs (subCommandParams 2 → 2).
            rules = { map, out in
                identifierValue(map.value(forKey: 2)?.value(forKey: 2), field: "\(name).subCommandParams.minPinLengthRPIDs",
                                into: &out)
            }
        default:
            return []
        }
        return apply(rules, to: payload, field: name)
    }

    /// Secret spans of a response the key sent; `requestCommand` is the CTAP command byte of
    /// the request it answers on that channel, if the recorder saw one.
    static func responseRedactions(hidCommand: UInt8, payload: [UInt8], requestCommand: UInt8?) -> [TraceRedaction] {
        guard hidCommand == CTAPHIDCommand.cbor.rawValue, payload.count > 1 else { return [] }
        guard let requestCommand else {
            return [TraceRedaction(field: "response to an unseen request", offset: 1, length: payload.count - 1)]
        }
        guard let command = CTAPCommand(rawValue: requestCommand) else { return [] }
        let name = fieldPrefix(command)
        let rules: (CBORLayout, inout [TraceRedaction]) -> Void
        switch command {
        case .clientPIN:
            rules = { map, out in secretValue(map.value(forKey: 2), field: "\(name).pinUvAuthToken", into: &out) }
        case .makeCredential:
            rules = { map, out in
                authDataOutputs(map.value(forKey: 2), in: payload, prefix: "\(name).authData", into: &out)
                secretValue(map.value(forKey: 5), field: "\(name).largeBlobKey", into: &out)
            }
        case .getAssertion, .getNextAssertion:
            rules = { map, out in
                authDataOutputs(map.value(forKey: 2), in: payload, prefix: "\(name).authData", into: &out)
                identifierValue(map.value(forKey: 4), field: "\(name).user", into: &out)
                secretValue(map.value(forKey: 7), field: "\(name).largeBlobKey", into: &out)
            }
        case .largeBlobs:
            rules = { map, out in secretValue(map.value(forKey: 1), field: "\(name).config", into: &out) }
        case .credentialManagement, .credentialManagementPreview:
            rules = { map, out in
                identifierValue(map.value(forKey: 3), field: "\(name).rp", into: &out)
                identifierValue(map.value(forKey: 6), field: "\(name).user", into: &out)
                secretValue(map.value(forKey: 0x0B), field: "\(name).largeBlobKey", into: &out)
            }
        default:
            return []
        }
        return apply(rules, to: payload, field: name)
    }

    /// Walks the CBOR body (payload[1...]) and applies `rules` to its top-level map; a body that
    /// cannot be walked, or has bytes after its map, is blanked whole.
    private static func apply(_ rules: (CBORLayout, inout [TraceRedaction]) -> Void, to payload: [UInt8],
                              field: String) -> [TraceRedaction] {
        guard let body = CBORLayout.parse(payload, exactly: 1..<payload.count), body.kind == .map else {
            return [TraceRedaction(field: "\(field) (undecodable CBOR)", offset: 1, length: payload.count - 1)]
        }
        var out: [TraceRedaction] = []
        rules(body, &out)
        return out
    }

    /// A secret field: a byte string's content; for any other type, the content of every
    /// string inside it (headers stay, so the message still parses).
    private static func secretValue(_ value: CBORLayout?, field: String, into out: inout [TraceRedaction]) {
        guard let value else { return }
        switch value.kind {
        case .bytes, .text:
            if !value.content.isEmpty {
                out.append(TraceRedaction(field: field, offset: value.content.lowerBound, length: value.content.count))
            }
        default:
            for child in value.children { secretValue(child, field: field, into: &out) }
        }
    }

    /// An RP or user entity (or an RP ID): every string value blanked, map keys ("id", "name",
    /// "displayName") kept, so the decoded trace still shows which fields were there.
    private static func identifierValue(_ value: CBORLayout?, field: String, into out: inout [TraceRedaction]) {
        guard let value else { return }
        if value.kind == .map {
            for entry in value.entries { identifierValue(entry.value, field: field, into: &out) }
        } else {
            secretValue(value, field: field, into: &out)
        }
    }

    /// hmac-secret / hmac-secret-mc inputs ({1: keyAgreement, 2: saltEnc, 3: saltAuth, 4: protocol})
    /// and credBlob in an extensions map.
    private static func extensionInputs(_ extensions: CBORLayout?, prefix: String, into out: inout [TraceRedaction]) {
        guard let extensions, extensions.kind == .map else { return }
        for entry in extensions.entries {
            guard case let .text(identifier) = entry.key.kind else { continue }
            switch identifier {
            case "hmac-secret", "hmac-secret-mc":
                if entry.value.kind == .map {
                    secretValue(entry.value.value(forKey: 2), field: "\(prefix).\(identifier).saltEnc", into: &out)
                } else if entry.value.kind != .other {
                    secretValue(entry.value, field: "\(prefix).\(identifier)", into: &out)   // not `true`: unknown shape
                }
            case "credBlob":
                secretValue(entry.value, field: "\(prefix).\(identifier)", into: &out)
            default:
                continue
            }
        }
    }

    /// Extension outputs inside authenticator data (WebAuthn §6.1: rpIdHash 32, flags 1,
    /// signCount 4, [attested credential data if AT], [extensions map if ED]).
    private static func authDataOutputs(_ authData: CBORLayout?, in payload: [UInt8], prefix: String,
                                        into out: inout [TraceRedaction]) {
        guard let authData else { return }
        guard authData.kind == .bytes else {
            secretValue(authData, field: prefix, into: &out)
            return
        }
        let start = authData.content.lowerBound, end = authData.content.upperBound
        guard end - start >= 37 else { return }
        let flags = payload[start + 32]
        guard flags & 0x80 != 0 else { return }   // ED clear: no extension outputs
        let bytes = Array(payload[..<end])
        var position = start + 37
        func withholdRest(_ reason: String) {
            out.append(TraceRedaction(field: "\(prefix) (\(reason))", offset: position, length: end - position))
        }
        if flags & 0x40 != 0 {   // AT: aaguid 16, credentialIdLength 2, credentialId, COSE key
            guard end - position >= 18 else { return withholdRest("undecodable attested credential data") }
            let idLength = Int(bytes[position + 16]) << 8 | Int(bytes[position + 17])
            guard end - position - 18 >= idLength,
                  let key = CBORLayout.parse(bytes, at: position + 18 + idLength) else {
                return withholdRest("undecodable attested credential data")
            }
            position = key.range.upperBound
        }
        guard let extensions = CBORLayout.parse(bytes, at: position), extensions.kind == .map,
              extensions.range.upperBound == end else {
            return withholdRest("undecodable extensions")
        }
        for entry in extensions.entries {
            guard case let .text(identifier) = entry.key.kind, secretAuthDataExtensions.contains(identifier) else { continue }
            secretValue(entry.value, field: "\(prefix).extensions.\(identifier)", into: &out)
        }
    }

    /// Short command names for field labels ("clientPIN.newPinEnc").
    static func fieldPrefix(_ command: CTAPCommand) -> String {
        switch command {
        case .makeCredential: "makeCredential"
        case .getAssertion: "getAssertion"
        case .getInfo: "getInfo"
        case .clientPIN: "clientPIN"
        case .reset: "reset"
        case .getNextAssertion: "getNextAssertion"
        case .bioEnrollment: "bioEnrollment"
        case .credentialManagement, .credentialManagementPreview: "credentialManagement"
        case .selection: "selection"
        case .largeBlobs: "largeBlobs"
        case .config: "config"
        }
    }
}
