import CBOR
import CTAP
import FIDOCrypto

/// previewSign, version 4 of Yubico's WebAuthn signing extension
/// (yubicolabs.github.io/webauthn-sign-extension/4; python-fido2 2.2.1's `PreviewSignExtension`
/// and its device suite): at registration a credential gets a signing key of its own, which the
/// RP gets as an attestation object in the unsigned extension outputs; at authentication that key
/// signs data the RP chose.
///
/// Nothing is stored: the key handle (the generated key's credential ID) is
/// `HMAC-SHA-256(macKey, params ‖ "previewSign" ‖ rpIdHash ‖ credentialID) ‖ params` with
/// `params` = CBOR [algorithm, flags, 32 random bytes], as the extension's example encoding
/// has it (bound here to the credential too), and the private key is derived from the key's
/// wrapping key, the RP, the credential and `params`.
enum PreviewSignAlgorithm: Int, CaseIterable {
    /// ESP256 (ECDSA P-256 with SHA-256, fully specified) and ES256: the key hashes the data.
    case esp256 = -9
    case es256 = -7
    /// ESP256-split (draft-lundberg-cose-two-party-signing-algs; −300 requested, −70009 the
    /// prototypes' placeholder): the client hashes, the key signs the 32-byte digest.
    case esp256Split = -300
    case esp256SplitPlaceholder = -70009
    /// ESP256-split-ARKG (draft-bradleylundberg-cfrg-arkg-10's placeholder): the key holds an
    /// ARKG-P256 seed; the client derives public keys, and the key signs a digest with the
    /// private key a derivation's arguments name.
    case esp256SplitARKG = -65539

    var signsDigest: Bool { self != .esp256 && self != .es256 }

    /// The COSE algorithm a verifier checks signatures with (the split algorithms' public keys
    /// are ESP256 keys: the signature is one).
    var verificationAlgorithm: Int { self == .es256 ? -7 : -9 }
}

/// What a getAssertion's previewSign input resolved to, checked before presence is asked for:
/// the key to sign with and the bytes it signs (the data, or the digest the client made).
struct PreviewSignPlan {
    let key: ECDSA.PrivateKey
    let algorithm: PreviewSignAlgorithm
    let toBeSigned: [UInt8]

    func signature() throws(CTAP2StatusCode) -> [UInt8] {
        do {
            return algorithm.signsDigest ? try key.signature(forDigest: toBeSigned) : try key.signature(for: toBeSigned)
        } catch {
            throw .other
        }
    }
}

extension Authenticator {
    /// ARKG-P256's COSE numbers (python-fido2's ARKG_P256_PLACEHOLDER): key type ARKG-pub and
    /// algorithm ARKG-P256.
    static let arkgPublicKeyType = -65537
    static let arkgP256 = -65700

    /// makeCredential, before presence: the first algorithm of the RP's list the key has
    /// (none: CTAP2_ERR_UNSUPPORTED_ALGORITHM), then the flags (other than 0b000, 0b001, 0b101:
    /// CTAP2_ERR_INVALID_OPTION), in the extension's order.
    func previewSignChoice(_ input: PreviewSign.GenerateKey) throws(CTAP2StatusCode) -> (PreviewSignAlgorithm, UInt8) {
        guard let algorithm = input.algorithms.lazy.compactMap(PreviewSignAlgorithm.init(rawValue:)).first else {
            throw .unsupportedAlgorithm
        }
        guard [0b000, 0b001, 0b101].contains(input.flags) else { throw .invalidOption }
        return (algorithm, UInt8(input.flags))
    }

    /// makeCredential, once the credential's ID is known: the generated key's signed output
    /// ({3: algorithm}) and its attestation object ({1: fmt, 2: authData, 3: attStmt}, CBOR in a
    /// byte string, the unsigned output's member 7). Its authData copies the credential's RP ID
    /// hash, flags and AAGUID, counts 0, names the key by its handle and carries {4: flags};
    /// `attest` signs it as the credential's own attestation is signed.
    func previewSignKey(algorithm: PreviewSignAlgorithm, flags: UInt8, rpIDHash: [UInt8], credentialID: [UInt8],
                        credentialFlags: AuthenticatorData.Flags,
                        attest: ([UInt8]) throws(CTAP2StatusCode) -> (format: String, statement: CBORValue))
        throws(CTAP2StatusCode) -> (signed: CBORValue, attestationObject: [UInt8]) {
        let parameters = CBORValue.array([CBORValue(algorithm.rawValue), .unsignedInt(UInt64(flags)),
                                          .byteString(random.bytes(count: 32))]).encoded()
        let keyHandle = previewSignMAC(parameters, rpIDHash: rpIDHash, credentialID: credentialID) + parameters
        let publicKey = try previewSignPublicKey(algorithm, parameters: parameters, rpIDHash: rpIDHash, credentialID: credentialID)
        let authenticatorData = AuthenticatorData(
            rpIDHash: rpIDHash, flags: credentialFlags, signCount: 0,
            attestedCredentialData: .init(aaguid: secrets.aaguid, credentialID: keyHandle, publicKey: publicKey),
            extensions: .map(["previewSign": .map([PreviewSign.Member.flags: .unsignedInt(UInt64(flags))])])).encoded()
        let (format, statement) = try attest(authenticatorData)
        let attestationObject = CBORValue.map([1: .textString(format), 2: .byteString(authenticatorData), 3: statement])
        return (.map([PreviewSign.Member.algorithm: CBORValue(algorithm.rawValue)]), attestationObject.encoded())
    }

    /// getAssertion, with the credential found and before presence: the key behind the handle
    /// and what it signs. In the extension's order: a handle this key did not make for this
    /// credential → CTAP2_ERR_INVALID_CREDENTIAL; arguments that name no algorithm or another →
    /// INVALID_CREDENTIAL; an ARKG key without arguments → MISSING_PARAMETER; presence required
    /// but `up` false → UP_REQUIRED; verification required without it → PUAT_REQUIRED. A digest
    /// of another length than SHA-256's for a split algorithm → INVALID_LENGTH (the extension
    /// names no error; the data cannot be the digest it signs).
    func previewSignPlan(_ input: PreviewSign.Sign, rpIDHash: [UInt8], credentialID: [UInt8], userPresence: Bool,
                         userVerified: Bool) throws(CTAP2StatusCode) -> PreviewSignPlan {
        let handle = input.keyHandle
        guard handle.count > 32 else { throw .invalidCredential }
        let parameters = Array(handle[32...])
        guard constantTimeEquals(previewSignMAC(parameters, rpIDHash: rpIDHash, credentialID: credentialID), Array(handle[..<32])),
              let decoded = try? CBORDecoder.decode(parameters), let fields = decoded.arrayValue, fields.count == 3,
              let algorithm = fields[0].intValue.flatMap(PreviewSignAlgorithm.init(rawValue:)),
              let flags = fields[1].uint64Value.flatMap(UInt8.init(exactly:)) else { throw .invalidCredential }
        var arguments: [CBORValue: CBORValue]?
        if let encoded = input.additionalArguments {
            guard let value = try? CBORDecoder.decode(encoded), let map = value.mapValue,
                  map[3]?.intValue == algorithm.rawValue else { throw .invalidCredential }
            arguments = map
        } else if algorithm == .esp256SplitARKG {
            throw .missingParameter
        }
        if flags & 0b001 != 0, !userPresence { throw .upRequired }
        if flags & 0b100 != 0, !userVerified { throw .puatRequired }
        if algorithm.signsDigest, input.toBeSigned.count != 32 { throw .invalidLength }
        let key = try previewSignPrivateKey(algorithm, parameters: parameters, rpIDHash: rpIDHash, credentialID: credentialID,
                                            arguments: arguments)
        return PreviewSignPlan(key: key, algorithm: algorithm, toBeSigned: input.toBeSigned)
    }

    private func previewSignMAC(_ parameters: [UInt8], rpIDHash: [UInt8], credentialID: [UInt8]) -> [UInt8] {
        var macKey = previewSignSecret("Latchkey previewSign key handle")
        defer { macKey.wipe() }
        return HMACSHA256.authenticationCode(key: macKey, data: parameters + Array("previewSign".utf8) + rpIDHash + credentialID)
    }

    /// A key of the wrapping key's for one purpose (HKDF-SHA-256, the purpose as info).
    private func previewSignSecret(_ purpose: String) -> [UInt8] {
        var wrappingKey = secrets.wrappingKey.copyBytes()
        defer { wrappingKey.wipe() }
        return HKDFSHA256.deriveKey(inputKeyMaterial: wrappingKey, salt: [], info: Array(purpose.utf8), outputByteCount: 32)
    }

    /// The P-256 private key(s) behind a handle's parameters: one for the ECDSA algorithms; the
    /// blinding and KEM keys of an ARKG seed.
    private func previewSignSeedKey(_ parameters: [UInt8], rpIDHash: [UInt8], credentialID: [UInt8],
                                    role: String) throws(CTAP2StatusCode) -> ECDSA.PrivateKey {
        var derivationKey = previewSignSecret("Latchkey previewSign key")
        defer { derivationKey.wipe() }
        var material = HMACSHA256.authenticationCode(key: derivationKey, data: rpIDHash + credentialID + parameters)
        defer { material.wipe() }
        do {
            return try ARKGP256.derivedPrivateKey(from: material, domain: Array("Latchkey-previewSign-\(role)".utf8))
        } catch {
            throw .other
        }
    }

    private func previewSignPublicKey(_ algorithm: PreviewSignAlgorithm, parameters: [UInt8], rpIDHash: [UInt8],
                                      credentialID: [UInt8]) throws(CTAP2StatusCode) -> CBORValue {
        func ec2(_ key: ECDSA.PrivateKey, algorithm: Int) -> CBORValue {
            .map([1: 2, 3: CBORValue(algorithm), -1: 1, -2: .byteString(key.publicKey.x), -3: .byteString(key.publicKey.y)])
        }
        guard algorithm == .esp256SplitARKG else {
            let key = try previewSignSeedKey(parameters, rpIDHash: rpIDHash, credentialID: credentialID, role: "ECDSA")
            return ec2(key, algorithm: algorithm.verificationAlgorithm)
        }
        // ARKG-P256's public seed (ARKG draft-10 §5.1): pk_bl (as an ES256 key) and pk_kem (as an
        // ECDH-ES+HKDF-256 key), and the algorithm derived keys sign with (ESP256): the shape a
        // YubiKey 5.8's preview firmware gives.
        let blinding = try previewSignSeedKey(parameters, rpIDHash: rpIDHash, credentialID: credentialID, role: "ARKG-BL")
        let kem = try previewSignSeedKey(parameters, rpIDHash: rpIDHash, credentialID: credentialID, role: "ARKG-KEM")
        return .map([1: CBORValue(Self.arkgPublicKeyType), 3: CBORValue(Self.arkgP256),
                     -1: ec2(blinding, algorithm: -7), -2: ec2(kem, algorithm: -25), -3: CBORValue(-9)])
    }

    private func previewSignPrivateKey(_ algorithm: PreviewSignAlgorithm, parameters: [UInt8], rpIDHash: [UInt8],
                                       credentialID: [UInt8], arguments: [CBORValue: CBORValue]?) throws(CTAP2StatusCode)
        -> ECDSA.PrivateKey {
        guard algorithm == .esp256SplitARKG else {
            return try previewSignSeedKey(parameters, rpIDHash: rpIDHash, credentialID: credentialID, role: "ECDSA")
        }
        // COSE_Sign_Args of ESP256-split-ARKG: {3: alg, -1: ARKG key handle, -2: context}; a
        // handle this seed did not make (its tag fails) is not this credential's.
        guard let arkgHandle = arguments?[-1]?.bytesValue, let context = arguments?[-2]?.bytesValue else {
            throw .invalidCredential
        }
        let blinding = try previewSignSeedKey(parameters, rpIDHash: rpIDHash, credentialID: credentialID, role: "ARKG-BL")
        let kem = try previewSignSeedKey(parameters, rpIDHash: rpIDHash, credentialID: credentialID, role: "ARKG-KEM")
        do {
            let derived = try ARKGP256.deriveSecretKey(blinding: blinding.rawRepresentation, kem: kem.rawRepresentation,
                                                       keyHandle: arkgHandle, context: context)
            return try ECDSA.PrivateKey(secret: derived, suite: .es256)
        } catch {
            throw .invalidCredential
        }
    }
}
