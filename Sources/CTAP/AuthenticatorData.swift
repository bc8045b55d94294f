import CBOR

/// Authenticator data (WebAuthn §6.1): rpIdHash ‖ flags ‖ signCount ‖ [attestedCredentialData] ‖ [extensions].
public struct AuthenticatorData: Sendable, Equatable {
    /// Flag bits (WebAuthn §6.1, "flags").
    public struct Flags: OptionSet, Sendable, Equatable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// User present (bit 0)
        public static let userPresent = Flags(rawValue: 0x01)
        /// User verified (bit 2)
        public static let userVerified = Flags(rawValue: 0x04)
        /// Backup eligibility (bit 3)
        public static let backupEligible = Flags(rawValue: 0x08)
        /// Backup state (bit 4)
        public static let backedUp = Flags(rawValue: 0x10)
        /// Attested credential data included (bit 6)
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// Extension data included (bit 7)
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// Attested credential data (WebAuthn §6.5.1): aaguid ‖ L(2) ‖ credentialId ‖ COSE public key.
    public struct AttestedCredentialData: Sendable, Equatable {
        public var aaguid: [UInt8]
        public var credentialID: [UInt8]
        /// The COSE_Key map. A key making a credential gives the `COSEKey` itself
        /// (`init(aaguid:credentialID:coseKey:)`) and its bytes are written straight into the
        /// authenticator data; the map is built only when somebody reads it here.
        public var publicKey: CBORValue {
            get {
                switch key {
                case let .value(value): value
                case let .cose(key): key.cborValue
                }
            }
            set { key = .value(newValue) }
        }

        private enum PublicKey: Sendable {
            case value(CBORValue)
            case cose(COSEKey)
        }
        private var key: PublicKey

        public init(aaguid: [UInt8], credentialID: [UInt8], publicKey: CBORValue) {
            self.aaguid = aaguid; self.credentialID = credentialID; self.key = .value(publicKey)
        }

        public init(aaguid: [UInt8], credentialID: [UInt8], coseKey: COSEKey) {
            self.aaguid = aaguid; self.credentialID = credentialID; self.key = .cose(coseKey)
        }

        public static func == (a: AttestedCredentialData, b: AttestedCredentialData) -> Bool {
            a.aaguid == b.aaguid && a.credentialID == b.credentialID && a.publicKey == b.publicKey
        }

        func encodePublicKey(into output: inout [UInt8]) {
            switch key {
            case let .value(value): value.encode(into: &output)
            case let .cose(key): key.encode(into: &output)
            }
        }
    }

    public var rpIDHash: [UInt8]
    public var flags: Flags
    public var signCount: UInt32
    public var attestedCredentialData: AttestedCredentialData?
    public var extensions: CBORValue?

    public init(rpIDHash: [UInt8], flags: Flags, signCount: UInt32,
                attestedCredentialData: AttestedCredentialData? = nil, extensions: CBORValue? = nil) {
        self.rpIDHash = rpIDHash
        var flags = flags
        // The AT and ED bits are derived from what is present, never set by hand.
        if attestedCredentialData != nil { flags.insert(.attestedCredentialData) } else { flags.remove(.attestedCredentialData) }
        if extensions != nil { flags.insert(.extensionData) } else { flags.remove(.extensionData) }
        self.flags = flags
        self.signCount = signCount
        self.attestedCredentialData = attestedCredentialData
        self.extensions = extensions
    }

    /// The wire bytes.
    public func encoded() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(37 + (attestedCredentialData.map { 18 + $0.credentialID.count + 77 } ?? 0))
        out += rpIDHash
        out.append(flags.rawValue)
        // Byte by byte: an array literal is an allocation (on every assertion).
        out.append(UInt8(truncatingIfNeeded: signCount >> 24)); out.append(UInt8(truncatingIfNeeded: signCount >> 16))
        out.append(UInt8(truncatingIfNeeded: signCount >> 8)); out.append(UInt8(truncatingIfNeeded: signCount))
        if let attested = attestedCredentialData {
            out += attested.aaguid
            out.append(UInt8(truncatingIfNeeded: attested.credentialID.count >> 8))
            out.append(UInt8(truncatingIfNeeded: attested.credentialID.count))
            out += attested.credentialID
            attested.encodePublicKey(into: &out)
        }
        extensions?.encode(into: &out)
        return out
    }

    /// Parse authenticator data (for tests, traces, the diagnostics CLI and the rig's events and overrides).
    public init(decoding bytes: [UInt8]) throws(CBORDecodingError) {
        guard bytes.count >= 37 else { throw .truncated }
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
        var offset = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= offset + 18 else { throw .truncated }
            let aaguid = Array(bytes[offset..<offset + 16])
            let length = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard bytes.count >= offset + length else { throw .truncated }
            let credentialID = Array(bytes[offset..<offset + length])
            offset += length
            let (key, used) = try CBORDecoder.decodePrefix(bytes[offset...])
            offset += used
            attestedCredentialData = AttestedCredentialData(aaguid: aaguid, credentialID: credentialID, publicKey: key)
        } else {
            attestedCredentialData = nil
        }
        if flags.contains(.extensionData) {
            let (ext, used) = try CBORDecoder.decodePrefix(bytes[offset...])
            offset += used
            extensions = ext
        } else {
            extensions = nil
        }
        guard offset == bytes.count else { throw .trailingBytes }
    }
}

extension AuthenticatorData {
    /// `bytes` with `flags` cleared (the flags byte changed in place; nothing else moves).
    public static func clearing(_ flags: Flags, in bytes: [UInt8]) -> [UInt8] {
        guard bytes.count > 32 else { return bytes }
        var cleared = bytes
        cleared[32] &= ~flags.rawValue
        return cleared
    }
}
