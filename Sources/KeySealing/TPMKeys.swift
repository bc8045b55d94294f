import CTSS
import FIDOCrypto
import Glibc
import Synchronization

/// Credential keys made and kept by this machine's TPM 2.0 (`serve --keys tpm`): each is an
/// ECC P-256 signing key created under the owner hierarchy's storage key (the seal's, from the
/// same TCG template), so its private part leaves the TPM only encrypted by that storage key,
/// and signs only inside it. The blob a credential keeps names the storage key it was made
/// under, then holds the key's public and (encrypted) private areas: on another TPM, or after
/// this one is cleared, it loads nowhere and signs nothing.
///
/// One connection for the key's life: the storage key is derived once (TPM2_CreatePrimary takes
/// tens of milliseconds on a real chip) and one HMAC session salted by it authorizes every
/// command, so that a device between the CPU and the TPM can neither read what is created nor
/// alter a signing request unseen. The last key used stays loaded (a sign-in is often followed
/// by another with the same credential).
public final class TPMKeys: @unchecked Sendable {
    private struct State {
        var tpm: ESAPIConnection
        var primary: ESYS_TR
        var session: ESYS_TR
        var loaded: (blob: [UInt8], handle: ESYS_TR)?
    }

    private let state: Mutex<State>
    /// The TPM Name of the storage key every key here is made under.
    public let storageKeyName: [UInt8]

    /// Connects to the TPM `tcti` reaches (as `TPMSeal.seal` does: nil is TSS2_TCTI, else
    /// /dev/tpmrm0), derives the storage key and starts the salted session.
    public init(tcti: String?) throws(SealError) {
        let conf = TPMSeal.configuration(tcti)
        do throws(TPMFailure) {
            let tpm = try ESAPIConnection(conf)
            let primary = try tpm.createPrimary()
            let session: ESYS_TR
            do {
                session = try tpm.startSession(TPM2_SE_HMAC, saltedBy: primary)
                try TPMSeal.check(Esys_TRSess_SetAttributes(tpm.context, session, TPMA_SESSION_CONTINUESESSION, 0xFF),
                                  .startAuthSession)
            } catch {
                tpm.flush(primary)
                throw error
            }
            storageKeyName = try tpm.name(of: primary)
            state = Mutex(State(tpm: tpm, primary: primary, session: session, loaded: nil))
        } catch {
            throw Self.error(error, conf, doing: "starting")
        }
    }

    deinit {
        state.withLock { state in
            if let loaded = state.loaded { state.tpm.flush(loaded.handle) }
            state.tpm.flush(state.session)
            state.tpm.flush(state.primary)
        }
    }

    /// A new P-256 key inside the TPM: its public point (x, y: 32 bytes each) and its blob.
    public func makeP256Key() throws(SealError) -> (x: [UInt8], y: [UInt8], blob: [UInt8]) {
        let name = storageKeyName
        return try state.withLock { state throws(SealError) in
            do throws(TPMFailure) {
                var template = Self.signingKeyTemplate()
                var sensitive = TPM2B_SENSITIVE_CREATE()
                var outsideInfo = TPM2B_DATA()
                var creationPCR = TPML_PCR_SELECTION()
                var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
                var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
                defer { Esys_Free(outPrivate); Esys_Free(outPublic) }
                try TPMSeal.check(Esys_Create(state.tpm.context, state.primary, state.session, ESYS_TR_NONE, ESYS_TR_NONE,
                                              &sensitive, &template, &outsideInfo, &creationPCR, &outPrivate, &outPublic,
                                              nil, nil, nil), .create)
                guard let keyPublic = outPublic, let keyPrivate = outPrivate else {
                    throw TPMFailure(.create, TPMSeal.esysGeneralFailure)
                }
                let point = keyPublic.pointee.publicArea.unique.ecc
                guard let x = Self.coordinate(point.x), let y = Self.coordinate(point.y) else {
                    throw TPMFailure(.create, TPMSeal.esysGeneralFailure)
                }
                let publicArea = try TPMSeal.marshal(keyPublic, MemoryLayout<TPM2B_PUBLIC>.size, Tss2_MU_TPM2B_PUBLIC_Marshal)
                let privateArea = try TPMSeal.marshal(keyPrivate, MemoryLayout<TPM2B_PRIVATE>.size, Tss2_MU_TPM2B_PRIVATE_Marshal)
                return (x, y, KeyBlob(storageKeyName: name, publicArea: publicArea, privateArea: privateArea).encoded)
            } catch {
                throw Self.error(error, nil, doing: "making a key")
            }
        }
    }

    /// Whether `blob` was made under this TPM's storage key (it parses and names it).
    public func holds(blob: [UInt8]) -> Bool {
        KeyBlob(decoding: blob)?.storageKeyName == storageKeyName
    }

    /// The DER ECDSA signature over SHA-256(`message`) by the key in `blob`, made by the TPM.
    /// `.sealed` when the blob was made under another storage key (another TPM, or this one
    /// before a clear) or does not load; `.corrupt` when it does not parse.
    public func signature(blob: [UInt8], for message: [UInt8]) throws(SealError) -> [UInt8] {
        guard let parsed = KeyBlob(decoding: blob) else { throw .corrupt("a TPM-bound credential's key blob does not parse") }
        guard parsed.storageKeyName == storageKeyName else {
            throw .sealed("this credential's key was made by another TPM (or by this one before it was cleared): "
                          + "it signs only there")
        }
        let digest = SHA256.hash(message)
        return try state.withLock { state throws(SealError) in
            do throws(TPMFailure) {
                let handle = try Self.load(parsed, blob, &state)
                var toSign = TPM2B_DIGEST()
                toSign.size = UInt16(digest.count)
                withUnsafeMutableBytes(of: &toSign.buffer) { $0.copyBytes(from: digest) }
                var scheme = TPMT_SIG_SCHEME()
                scheme.scheme = TPM2_ALG_ECDSA
                scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256
                // The digest was not made by the TPM: a NULL ticket, which an unrestricted key accepts.
                var validation = TPMT_TK_HASHCHECK()
                validation.tag = TPM2_ST_HASHCHECK
                validation.hierarchy = TPM2_RH_NULL
                var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
                defer { Esys_Free(signature) }
                try TPMSeal.check(Esys_Sign(state.tpm.context, handle, state.session, ESYS_TR_NONE, ESYS_TR_NONE,
                                            &toSign, &scheme, &validation, &signature), .sign)
                guard let signature, signature.pointee.sigAlg == TPM2_ALG_ECDSA,
                      let r = Self.coordinate(signature.pointee.signature.ecdsa.signatureR),
                      let s = Self.coordinate(signature.pointee.signature.ecdsa.signatureS) else {
                    throw TPMFailure(.sign, TPMSeal.esysGeneralFailure)
                }
                return Self.derSignature(r: r, s: s)
            } catch {
                if error.step == .load, let code = error.tpmCode,
                   code == TPMSeal.ResponseCode.integrity || code == TPMSeal.ResponseCode.binding {
                    throw .sealed("this credential's key does not load in this TPM (\(error.text)): it signs only in the "
                                  + "TPM that made it")
                }
                throw Self.error(error, nil, doing: "signing")
            }
        }
    }

    // MARK: - Internals

    /// The key's handle: the loaded one if it is the same blob, else loaded now (the other flushed).
    private static func load(_ parsed: KeyBlob, _ blob: [UInt8], _ state: inout State) throws(TPMFailure) -> ESYS_TR {
        if let loaded = state.loaded, loaded.blob == blob { return loaded.handle }
        if let loaded = state.loaded {
            state.tpm.flush(loaded.handle)
            state.loaded = nil
        }
        var inPublic = TPM2B_PUBLIC()
        var inPrivate = TPM2B_PRIVATE()
        guard unmarshal(parsed.publicArea, into: &inPublic, Tss2_MU_TPM2B_PUBLIC_Unmarshal),
              unmarshal(parsed.privateArea, into: &inPrivate, Tss2_MU_TPM2B_PRIVATE_Unmarshal) else {
            throw TPMFailure(.marshal, TPMSeal.esysGeneralFailure)
        }
        var handle: ESYS_TR = ESYS_TR_NONE
        try TPMSeal.check(Esys_Load(state.tpm.context, state.primary, state.session, ESYS_TR_NONE, ESYS_TR_NONE,
                                    &inPrivate, &inPublic, &handle), .load)
        state.loaded = (blob, handle)
        return handle
    }

    private static func unmarshal<T>(_ bytes: [UInt8], into value: inout T,
                                     _ unmarshal: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<T>?) -> TSS2_RC) -> Bool {
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer { unmarshal($0.baseAddress, $0.count, &offset, &value) }
        return rc == TSS2_RC_SUCCESS && offset == bytes.count
    }

    /// An ECC P-256 ECDSA-SHA256 signing key, unrestricted (it signs digests made outside the
    /// TPM), bound to this TPM and to its parent, its private part made by the TPM, used with
    /// its empty password; noDA, as there is no password to guess.
    static func signingKeyTemplate() -> TPM2B_PUBLIC {
        var template = TPM2B_PUBLIC()
        template.publicArea.type = TPM2_ALG_ECC
        template.publicArea.nameAlg = TPM2_ALG_SHA256
        template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT
            | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_SIGN_ENCRYPT
        template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL
        template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA
        template.publicArea.parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256
        template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256
        template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL
        return template
    }

    /// A P-256 coordinate or signature half, left-padded to 32 bytes; nil if longer.
    static func coordinate(_ parameter: TPM2B_ECC_PARAMETER) -> [UInt8]? {
        var parameter = parameter
        let size = Int(parameter.size)
        guard size <= 32 else { return nil }
        let bytes = withUnsafeBytes(of: &parameter.buffer) { Array($0.prefix(size)) }
        return [UInt8](repeating: 0, count: 32 - size) + bytes
    }

    /// ECDSA-Sig-Value (RFC 3279 2.2.3): SEQUENCE { INTEGER r, INTEGER s }, minimal INTEGERs.
    static func derSignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ value: [UInt8]) -> [UInt8] {
            var bytes = Array(value.drop { $0 == 0 })
            if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }

    private static func error(_ failure: TPMFailure, _ conf: String?, doing what: String) -> SealError {
        if failure.isUnreachable {
            let reach = conf.map { TPMSeal.describe($0, failure) } ?? failure.text
            return .io("no TPM answered \(what) a credential key (\(reach)): \(TPMSeal.reachHint)")
        }
        return .io("the TPM failed \(what) a credential key (\(failure.text))")
    }
}

/// A TPM-bound credential key as the store keeps it (inside `DeviceKey`'s blob): version 1,
/// then three length-prefixed fields (2 octets, big-endian): the storage key's Name, the key's
/// TPM2B_PUBLIC and TPM2B_PRIVATE as tpm2-tss marshals them.
struct KeyBlob: Equatable {
    var storageKeyName: [UInt8]
    var publicArea: [UInt8]
    var privateArea: [UInt8]

    static let version: UInt8 = 1

    init(storageKeyName: [UInt8], publicArea: [UInt8], privateArea: [UInt8]) {
        self.storageKeyName = storageKeyName
        self.publicArea = publicArea
        self.privateArea = privateArea
    }

    var encoded: [UInt8] {
        var out: [UInt8] = [Self.version]
        for field in [storageKeyName, publicArea, privateArea] {
            out += [UInt8(field.count >> 8), UInt8(field.count & 0xFF)] + field
        }
        return out
    }

    init?(decoding bytes: [UInt8]) {
        guard bytes.first == Self.version else { return nil }
        var fields: [[UInt8]] = []
        var offset = 1
        while fields.count < 3 {
            guard offset + 2 <= bytes.count else { return nil }
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            offset += 2
            guard length > 0, offset + length <= bytes.count else { return nil }
            fields.append(Array(bytes[offset..<offset + length]))
            offset += length
        }
        guard offset == bytes.count else { return nil }
        self.init(storageKeyName: fields[0], publicArea: fields[1], privateArea: fields[2])
    }
}
