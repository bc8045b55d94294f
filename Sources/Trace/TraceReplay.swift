import CBOR
import CTAP
import CTAPHID

/// `latchkey replay`: the client side of a recorded session, as exchanges to send again, and
/// the comparison of each new answer with the recorded one (sans-IO: the CLI does the sending).
///
/// Answers are compared by what a key decides, not by what is random: the CTAPHID command, the
/// CTAP status, and the CBOR body's structure — the same map keys, array lengths and types, and
/// equal text, numbers and booleans; byte strings (signatures, credential IDs, public keys,
/// authenticator data, nonces) only by type. A credential ID the recorded key made is replaced,
/// in later requests, by the one the replayed key made in its place, so a session that
/// registers and then signs in replays whole. Requests whose recording was redacted (PINs,
/// tokens, hmac-secret salts) are sent as recorded — zeros — and their answers may differ for
/// that reason alone; the report says so.
public enum TraceReplay {
    /// One request of the recording and the answer the recorded key gave it.
    public struct Exchange: Sendable, Equatable {
        public var channel: UInt32
        public var command: UInt8
        public var payload: [UInt8]
        /// Fields the trace blanked in the request.
        public var redactedFields: [String]
        /// The recorded answer (nil: the trace ends before it, or the client gave up).
        public var response: Message?

        public init(channel: UInt32, command: UInt8, payload: [UInt8], redactedFields: [String] = [], response: Message? = nil) {
            self.channel = channel; self.command = command; self.payload = payload
            self.redactedFields = redactedFields; self.response = response
        }
    }

    public struct Message: Sendable, Equatable {
        public var command: UInt8
        public var payload: [UInt8]
        public init(command: UInt8, payload: [UInt8]) { self.command = command; self.payload = payload }
    }

    /// The exchanges of `contents`, in the order the client sent them. Only the first
    /// connection's traffic is taken (a socket key's trace may hold several clients': replay them
    /// one at a time with `connection`).
    public static func exchanges(_ contents: TraceFile.Contents, connection: Int? = nil) -> [Exchange] {
        let chosen = connection ?? contents.records.first { $0.report != nil }?.connection ?? 0
        var assemblers: [String: MessageAssembler] = [:]
        var redactions: [String: [TraceRedaction]] = [:]
        var exchanges: [Exchange] = []
        var awaiting: [UInt32: Int] = [:]   // channel → index of its exchange without an answer yet
        let records = contents.records.enumerated()
            .filter { $0.element.connection == chosen && $0.element.report != nil && $0.element.withheld == nil }
            .sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        for record in records {
            guard let report = record.report, let packet = CTAPHIDPacket(report: report) else { continue }
            let key = "\(record.direction.rawValue)/\(packet.channel)"
            var assembler = assemblers[key] ?? MessageAssembler(channel: packet.channel)
            if let spans = record.redactions { redactions[key, default: []] += spans }
            let result = assembler.feed(packet)
            assemblers[key] = assembler
            guard case let .complete(command, payload) = result else { continue }
            let spans = redactions.removeValue(forKey: key) ?? []
            assemblers[key] = nil
            if record.direction == .toKey {
                exchanges.append(Exchange(channel: packet.channel, command: command, payload: payload,
                                          redactedFields: spans.map(\.field), response: nil))
                awaiting[packet.channel] = exchanges.count - 1
            } else if command != CTAPHIDCommand.keepalive.rawValue, let index = awaiting.removeValue(forKey: packet.channel) {
                exchanges[index].response = Message(command: command, payload: payload)
            }
        }
        return exchanges
    }

    /// Where an answer differs from the recorded one; empty: the same decision.
    public static func differences(recorded: Message, replayed: Message) -> [String] {
        guard recorded.command == replayed.command else {
            return ["\(hidName(replayed.command)) \(errorText(replayed)) where the recording has \(hidName(recorded.command)) \(errorText(recorded))"]
        }
        switch recorded.command {
        case CTAPHIDCommand.error.rawValue:
            return recorded.payload.first == replayed.payload.first ? [] : ["\(errorText(replayed)), recorded \(errorText(recorded))"]
        case CTAPHIDCommand.initialize.rawValue:
            // nonce(8) CID(4) protocol(1) version(3) capabilities(1): the nonce and CID are the client's and the key's to choose.
            guard recorded.payload.count >= 17, replayed.payload.count >= 17 else {
                return recorded.payload.count == replayed.payload.count ? [] : ["INIT answer of \(replayed.payload.count) bytes, recorded \(recorded.payload.count)"]
            }
            var found: [String] = []
            if recorded.payload[12] != replayed.payload[12] { found.append("CTAPHID protocol \(replayed.payload[12]), recorded \(recorded.payload[12])") }
            if recorded.payload[13..<16] != replayed.payload[13..<16] {
                found.append("device version \(replayed.payload[13..<16].map(String.init).joined(separator: ".")), recorded "
                    + recorded.payload[13..<16].map(String.init).joined(separator: "."))
            }
            if recorded.payload[16] != replayed.payload[16] {
                found.append(String(format: "capabilities 0x%02x, recorded 0x%02x", replayed.payload[16], recorded.payload[16]))
            }
            return found
        case CTAPHIDCommand.ping.rawValue:
            return recorded.payload == replayed.payload ? [] : ["PING echoed \(replayed.payload.count) bytes that differ from the recording's"]
        case CTAPHIDCommand.cbor.rawValue:
            return cborDifferences(recorded.payload, replayed.payload)
        case CTAPHIDCommand.msg.rawValue:
            // U2F: the status word decides; the data is signatures and handles.
            let sw = { (payload: [UInt8]) in payload.suffix(2).map { String(format: "%02x", $0) }.joined() }
            return sw(recorded.payload) == sw(replayed.payload) ? [] : ["U2F status word \(sw(replayed.payload)), recorded \(sw(recorded.payload))"]
        default:
            return recorded.payload.count == replayed.payload.count ? [] : ["\(replayed.payload.count) bytes, recorded \(recorded.payload.count)"]
        }
    }

    static func cborDifferences(_ recorded: [UInt8], _ replayed: [UInt8]) -> [String] {
        guard let recordedStatus = recorded.first, let replayedStatus = replayed.first else {
            return recorded.count == replayed.count ? [] : ["an empty answer where the other has a status"]
        }
        guard recordedStatus == replayedStatus else {
            return ["status \(statusName(replayedStatus)), recorded \(statusName(recordedStatus))"]
        }
        let bodies = (recorded.dropFirst(), replayed.dropFirst())
        if bodies.0.isEmpty && bodies.1.isEmpty { return [] }
        guard let left = try? CBORDecoder.decode(Array(bodies.0)) else {
            // The trace blanked the recorded body (an answer it could not attribute): nothing to compare it with.
            return ["not comparable: the recording's answer body was blanked"]
        }
        guard let right = try? CBORDecoder.decode(Array(bodies.1)) else {
            return ["the answer's CBOR body does not decode (the recording's does)"]
        }
        var found: [String] = []
        compare(left, right, path: "", into: &found)
        return found
    }

    /// Structure and decided values; byte strings by type only.
    static func compare(_ recorded: CBORValue, _ replayed: CBORValue, path: String, into found: inout [String]) {
        let at = path.isEmpty ? "the body" : path
        switch (recorded, replayed) {
        case let (.map(left), .map(right)):
            for key in Set(left.keys).union(right.keys).sorted(by: { $0.encoded().lexicographicallyPrecedes($1.encoded()) }) {
                let name = path + (path.isEmpty ? "" : ".") + (key.stringValue ?? key.intValue.map(String.init) ?? "?")
                switch (left[key], right[key]) {
                case let (l?, r?): compare(l, r, path: name, into: &found)
                case (_?, nil): found.append("\(name) is missing (recorded \(short(left[key]!)))")
                case (nil, _?): found.append("\(name) is new (\(short(right[key]!)))")
                case (nil, nil): break
                }
            }
        case let (.array(left), .array(right)):
            guard left.count == right.count else {
                found.append("\(at): \(right.count) entries, recorded \(left.count)")
                return
            }
            for (index, (l, r)) in zip(left, right).enumerated() { compare(l, r, path: "\(path)[\(index)]", into: &found) }
        case (.byteString, .byteString):
            break
        default:
            if recorded != replayed { found.append("\(at): \(short(replayed)), recorded \(short(recorded))") }
        }
    }

    /// The credential ID a makeCredential answer (CTAP2_OK ‖ {2: authData}) carries.
    public static func credentialID(inMakeCredentialAnswer payload: [UInt8]) -> [UInt8]? {
        guard payload.first == 0, let body = try? CBORDecoder.decode(Array(payload.dropFirst())),
              let authData = body[2]?.bytesValue, let data = try? AuthenticatorData(decoding: authData) else { return nil }
        return data.attestedCredentialData?.credentialID
    }

    /// `payload` (a CTAPHID_CBOR request) with every byte string equal to a key of `replacements`
    /// replaced by its value; unchanged when none occurs.
    public static func substituting(_ replacements: [[UInt8]: [UInt8]], in payload: [UInt8]) -> [UInt8] {
        guard !replacements.isEmpty, let command = payload.first, payload.count > 1,
              let body = try? CBORDecoder.decode(Array(payload.dropFirst())) else { return payload }
        var changed = false
        let replaced = replace(body, replacements, &changed)
        return changed ? [command] + replaced.encoded() : payload
    }

    private static func replace(_ value: CBORValue, _ replacements: [[UInt8]: [UInt8]], _ changed: inout Bool) -> CBORValue {
        switch value {
        case let .byteString(bytes):
            guard let new = replacements[bytes] else { return value }
            changed = true
            return .byteString(new)
        case let .array(items):
            return .array(items.map { replace($0, replacements, &changed) })
        case let .map(entries):
            var result: [CBORValue: CBORValue] = [:]
            for (key, item) in entries { result[key] = replace(item, replacements, &changed) }
            return .map(result)
        default:
            return value
        }
    }

    /// What a replay may send (`replay` skips the rest, and what depends on what it skipped).
    public enum Allowance: Sendable, Equatable {
        /// Nothing that changes what the key holds (the default: a replay never writes to a key
        /// unless told to).
        case readOnly
        /// Also writes (`--allow-writes`): discoverable credentials made, large blobs written,
        /// credentials renamed or deleted, the PIN set or changed, config.
        case writes
        /// Everything (`--include-harmful`): also a reset and requests whose PIN the trace blanked.
        case everything
    }

    /// Why each exchange is not sent under `allowance`, in order (nil: it is sent): `harm` for
    /// what it would do, or that it depends on a skipped write — a sign-in naming a credential the
    /// replay did not make, a discoverable sign-in at an RP whose discoverable credential it did
    /// not make (and its getNextAssertions), getInfo, credential management and large-blob reads
    /// after a skipped change (their answers count or list what the recording's key had).
    public static func skipReasons(_ exchanges: [Exchange], allowance: Allowance) -> [String?] {
        var skippedCredentials: Set<[UInt8]> = []
        var skippedRPs: Set<String> = []
        var skippedStoreChange = false
        var skippedBlobWrite = false
        var skippedSignInOn: Set<UInt32> = []
        return exchanges.map { exchange in
            let ctap = exchange.command == CTAPHIDCommand.cbor.rawValue ? exchange.payload.first : nil
            let body = ctap == nil ? nil : try? CBORDecoder.decode(Array(exchange.payload.dropFirst()))
            if let harm = harm(exchange), !allowed(exchange, allowance) {
                switch ctap {
                case CTAPCommand.makeCredential.rawValue?:
                    if let rp = body?[2]?["id"]?.stringValue { skippedRPs.insert(rp) }
                    if let response = exchange.response, let id = credentialID(inMakeCredentialAnswer: response.payload) {
                        skippedCredentials.insert(id)
                    }
                    skippedStoreChange = true
                case CTAPCommand.largeBlobs.rawValue?:
                    skippedBlobWrite = true
                default:
                    skippedStoreChange = true
                }
                return harm
            }
            let dependent = "it depends on a write the replay skipped (--allow-writes sends both)"
            switch ctap {
            case CTAPCommand.getAssertion.rawValue?:
                let allowList = body?[3]?.arrayValue?.compactMap { $0["id"]?.bytesValue } ?? []
                let rp = body?[1]?.stringValue ?? ""
                if allowList.contains(where: skippedCredentials.contains) || (allowList.isEmpty && skippedRPs.contains(rp)) {
                    skippedSignInOn.insert(exchange.channel)
                    return dependent
                }
                skippedSignInOn.remove(exchange.channel)
            case CTAPCommand.getNextAssertion.rawValue?:
                if skippedSignInOn.contains(exchange.channel) { return dependent }
            case CTAPCommand.credentialManagement.rawValue?, CTAPCommand.credentialManagementPreview.rawValue?,
                 CTAPCommand.getInfo.rawValue?:
                // getInfo too: remainingDiscoverableCredentials and encCredStoreState count the writes.
                if skippedStoreChange { return dependent }
            case CTAPCommand.largeBlobs.rawValue?:
                if skippedBlobWrite { return dependent }
            default:
                break
            }
            return nil
        }
    }

    /// Whether `allowance` lets `exchange` (one `harm` names) be sent.
    public static func allowed(_ exchange: Exchange, _ allowance: Allowance) -> Bool {
        switch allowance {
        case .readOnly: return false
        case .everything: return true
        case .writes:
            // Not a reset, nor a wrong PIN (a blanked one): those are never mere writes.
            guard exchange.command == CTAPHIDCommand.cbor.rawValue, let ctap = exchange.payload.first else { return false }
            if ctap == CTAPCommand.reset.rawValue { return false }
            if ctap == CTAPCommand.clientPIN.rawValue, !exchange.redactedFields.isEmpty { return false }
            if ctap == CTAPCommand.clientPIN.rawValue,
               let subcommand = (try? CBORDecoder.decode(Array(exchange.payload.dropFirst())))?[2]?.uint64Value,
               [5, 6, 9].contains(subcommand) { return false }   // a retry spent is no mere write
            return true
        }
    }

    /// Why replaying `exchange` could harm the key it is sent to (nil: it cannot): a reset erases
    /// every credential; a clientPIN request whose PIN fields the trace blanked is a wrong PIN
    /// (retries spent, a key blocked after a few replays); a discoverable makeCredential stores a
    /// credential (for the RP ID and user the trace blanked: junk on a real key); config, deleting
    /// or renaming credentials and writing large blobs change what the key holds. `replay` skips
    /// these unless told otherwise.
    public static func harm(_ exchange: Exchange) -> String? {
        guard exchange.command == CTAPHIDCommand.cbor.rawValue, let ctap = exchange.payload.first else {
            // U2F: registrations and authentications change nothing that matters; vendor commands are unknown.
            return CTAPHIDCommand(rawValue: exchange.command) == nil ? "a vendor command" : nil
        }
        let body = try? CBORDecoder.decode(Array(exchange.payload.dropFirst()))
        switch ctap {
        case CTAPCommand.makeCredential.rawValue:
            return body?[7]?["rk"]?.boolValue == true   // options (0x07) rk: a credential the key keeps
                ? "it stores a discoverable credential on the key (with the RP ID and user the trace blanked)" : nil
        case CTAPCommand.reset.rawValue: return "authenticatorReset erases every credential"
        case CTAPCommand.clientPIN.rawValue:
            if !exchange.redactedFields.isEmpty { return "its PIN fields were blanked: sent, it would count as a wrong PIN" }
            if let subcommand = body?[2]?.uint64Value, [3, 4].contains(subcommand) { return "it sets or changes the PIN" }
            // A token asked with the recording's PIN or UV: encrypted to the recorded key's
            // agreement, it decrypts to garbage here — a wrong PIN, or a failed UV, either way a retry spent.
            if let subcommand = body?[2]?.uint64Value, [5, 6, 9].contains(subcommand) {
                return "it asks a token with the recording's PIN or UV, which this key would count as a failure"
            }
            return nil
        case CTAPCommand.config.rawValue: return "authenticatorConfig changes the key's settings"
        case CTAPCommand.credentialManagement.rawValue, CTAPCommand.credentialManagementPreview.rawValue:
            if let subcommand = body?[1]?.uint64Value, [6, 7].contains(subcommand) { return "it deletes or renames a credential" }
            return nil
        case CTAPCommand.largeBlobs.rawValue:
            return body?[2] != nil ? "it writes the large-blob array" : nil
        default:
            return nil
        }
    }

    /// "CBOR authenticatorMakeCredential (0x01)", "PING", … for the report.
    public static func describe(_ exchange: Exchange) -> String {
        var text = hidName(exchange.command)
        if exchange.command == CTAPHIDCommand.cbor.rawValue, let first = exchange.payload.first {
            text += " " + (CTAPCommand(rawValue: first)?.name ?? String(format: "command 0x%02x", first))
        }
        return text
    }

    static func hidName(_ command: UInt8) -> String {
        CTAPHIDCommand(rawValue: command)?.name ?? String(format: "vendor 0x%02x", command)
    }

    static func errorText(_ message: Message) -> String {
        guard message.command == CTAPHIDCommand.error.rawValue, let code = message.payload.first else { return "" }
        return CTAPHIDError(rawValue: code)?.name ?? String(format: "0x%02x", code)
    }

    static func statusName(_ status: UInt8) -> String {
        (CTAP2StatusCode(rawValue: status)?.specName ?? "status") + String(format: " (0x%02x)", status)
    }

    static func short(_ value: CBORValue) -> String {
        let text = value.description
        return text.count > 60 ? String(text.prefix(57)) + "…" : text
    }
}
