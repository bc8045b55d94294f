import CBOR

/// The `previewSign` extension's authenticator inputs: version 4 of Yubico's WebAuthn signing
/// extension (yubicolabs.github.io/webauthn-sign-extension/4, as python-fido2 2.2.1 speaks it).
/// At registration the RP asks for a signing key inside the credential; at authentication it has
/// that key sign arbitrary data.
public enum PreviewSign {
    /// The member numbers of its CBOR maps.
    public enum Member {
        public static let keyHandle: CBORValue = 2
        public static let algorithm: CBORValue = 3
        public static let flags: CBORValue = 4
        public static let toBeSigned: CBORValue = 6
        /// The additional arguments at authentication (CBOR COSE_Sign_Args in a byte string); the
        /// attestation object of the generated key in the unsigned outputs of registration.
        public static let seven: CBORValue = 7
    }

    /// makeCredential's input: generate a key. `algorithms` in the RP's order of preference;
    /// `flags` as sent (0b001 when absent): 0b000 unattended, 0b001 presence required, 0b101
    /// verification required — the handler refuses any other value after choosing the algorithm,
    /// as the extension's processing orders it.
    public struct GenerateKey: Sendable, Equatable {
        public var algorithms: [Int]
        public var flags: UInt64

        public init(algorithms: [Int], flags: UInt64 = 0b001) {
            self.algorithms = algorithms; self.flags = flags
        }

        /// Members 2, 6 and 7 belong to signing: CTAP2_ERR_INVALID_OPTION here. A missing
        /// algorithm list is CTAP2_ERR_MISSING_PARAMETER; wrong types CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
        public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
            guard let map = value.mapValue else { throw .cborUnexpectedType }
            if map[Member.keyHandle] != nil || map[Member.toBeSigned] != nil || map[Member.seven] != nil { throw .invalidOption }
            guard let list = map[Member.algorithm] else { throw .missingParameter }
            guard let entries = list.arrayValue else { throw .cborUnexpectedType }
            var algorithms: [Int] = []
            for entry in entries {
                guard let algorithm = entry.intValue else { throw .cborUnexpectedType }
                algorithms.append(algorithm)
            }
            self.algorithms = algorithms
            flags = try map[Member.flags].optionalUnsigned() ?? 0b001
        }

        public var cborValue: CBORValue {
            .map([Member.algorithm: .array(algorithms.map { CBORValue($0) }), Member.flags: .unsignedInt(flags)])
        }
    }

    /// getAssertion's input: sign `toBeSigned` with the key behind `keyHandle`. Members 3 and 4
    /// belong to registration, and a missing key handle or data is CTAP2_ERR_INVALID_OPTION, as
    /// the extension specifies; wrong types are CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
    public struct Sign: Sendable, Equatable {
        public var keyHandle: [UInt8]
        public var toBeSigned: [UInt8]
        /// CBOR COSE_Sign_Args, still encoded: what they must hold depends on the key's algorithm.
        public var additionalArguments: [UInt8]?

        public init(keyHandle: [UInt8], toBeSigned: [UInt8], additionalArguments: [UInt8]? = nil) {
            self.keyHandle = keyHandle; self.toBeSigned = toBeSigned; self.additionalArguments = additionalArguments
        }

        public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
            guard let map = value.mapValue else { throw .cborUnexpectedType }
            if map[Member.algorithm] != nil || map[Member.flags] != nil { throw .invalidOption }
            guard let keyHandle = try map[Member.keyHandle].optionalBytes(),
                  let toBeSigned = try map[Member.toBeSigned].optionalBytes() else { throw .invalidOption }
            self.keyHandle = keyHandle
            self.toBeSigned = toBeSigned
            additionalArguments = try map[Member.seven].optionalBytes()
        }

        public var cborValue: CBORValue {
            var map: [CBORValue: CBORValue] = [Member.keyHandle: .byteString(keyHandle), Member.toBeSigned: .byteString(toBeSigned)]
            if let additionalArguments { map[Member.seven] = .byteString(additionalArguments) }
            return .map(map)
        }
    }
}
