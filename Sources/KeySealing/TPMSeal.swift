import CTSS
import FIDOCrypto
import Glibc

/// A secret (the store's master key, issue 14) sealed to this machine's TPM 2.0 through
/// tpm2-tss's ESAPI, so that a copy of the store's directory opens nowhere else.
///
/// Nothing is left in the TPM: each call re-creates the owner hierarchy's storage key from the
/// TCG standard ECC P-256 SRK template (the same template gives the same key for as long as the
/// owner seed lasts, that is until the TPM is cleared), creates or loads the sealed object under
/// it, and flushes both. The blob the caller keeps is the sealed object's public and private
/// areas; the private area is encrypted by the storage key and so opens only in this TPM.
/// With PCRs, the object's only way in is a PolicyPCR session over the SHA-256 bank: a change of
/// those PCRs (firmware, Secure Boot state) locks the secret until the old state comes back.
public enum TPMSeal {
    /// A secret sealed to this machine's TPM: the sealed object's TPM2B_PUBLIC and TPM2B_PRIVATE as
    /// tpm2-tss marshals them (Tss2_MU_TPM2B_PUBLIC_Marshal etc.), and the PCRs (SHA-256 bank) its
    /// policy binds, empty for none.
    public struct Blob: Equatable, Sendable {
        public var publicArea: [UInt8]
        public var privateArea: [UInt8]
        public var pcrs: [UInt8]
        /// The TPM Name (nameAlg ‖ digest of the public area) of the storage key it was sealed
        /// under; unsealing checks the storage key it re-creates against it before any secret
        /// moves. nil in blobs sealed before it was recorded (then not checked).
        public var storageKeyName: [UInt8]?

        public init(publicArea: [UInt8], privateArea: [UInt8], pcrs: [UInt8], storageKeyName: [UInt8]? = nil) {
            self.publicArea = publicArea
            self.privateArea = privateArea
            self.pcrs = pcrs
            self.storageKeyName = storageKeyName
        }
    }

    /// What the TPM can seal: TPM 2.0 Part 2 caps a sealed data object at MAX_SYM_DATA (128) bytes.
    static let largestSecret = 128
    /// The PC Client platform's 24 PCRs (TCG PC Client Platform TPM Profile): a 3-octet selection.
    static let pcrCount = 24

    /// Seals `secret` (1...128 bytes; the master key is 32) to the TPM that `tcti` reaches, bound to
    /// the current SHA-256 values of `pcrs` when any are given (`[7]`: the Secure Boot state).
    /// `tcti`: a TCTI configuration string (e.g. "swtpm:host=127.0.0.1,port=2321" or
    /// "device:/dev/tpmrm0"); nil: the TSS2_TCTI environment variable when set, else
    /// "device:/dev/tpmrm0" (see `configuration(_:)` for why not the loader's own default).
    public static func seal(_ secret: SecretBytes, pcrs: [UInt8], tcti: String?) throws(SealError) -> Blob {
        guard (1...largestSecret).contains(secret.count) else {
            throw .io("a TPM seals 1 to \(largestSecret) bytes, not \(secret.count)")
        }
        let bound: PCRSelection
        do { bound = try PCRSelection(pcrs) } catch { throw .io("cannot bind the secret to \(error)") }
        let conf = configuration(tcti)
        do {
            return try sealing(secret, bound, conf)
        } catch {
            throw sealError(error, conf)
        }
    }

    /// The secret `blob` seals, unsealed by the TPM that `tcti` reaches (as in `seal`). Fails with
    /// `.sealed` saying what to do when no TPM answers, when this TPM is not the one that sealed it
    /// (or was cleared since), or when its PCRs have changed; `.corrupt` when the blob does not parse.
    /// A blob must name the storage key it was sealed under (`storageKeyName`): one without the
    /// name is `.sealed` unless `allowUnpinned` (only re-sealing, to upgrade an old record, asks).
    public static func unseal(_ blob: Blob, tcti: String?, allowUnpinned: Bool = false) throws(SealError) -> SecretBytes {
        guard blob.storageKeyName != nil || allowUnpinned else {
            throw .sealed("the TPM-sealed master key does not name the TPM's storage key (an older Latchkey wrote it, or someone "
                + "removed the name): opening it so would let a device between the CPU and the TPM read the master key. "
                + "Re-seal it with `latchkey store seal --tpm` (which records the name), then start the key again")
        }
        let bound: PCRSelection
        do { bound = try PCRSelection(blob.pcrs) } catch { throw .corrupt("the TPM-sealed master key names \(error)") }
        guard bound.indices == blob.pcrs else {
            throw .corrupt("the TPM-sealed master key's PCR list \(blob.pcrs) is not sorted and unique")
        }
        var inPublic = TPM2B_PUBLIC()
        var inPrivate = TPM2B_PRIVATE()
        try unmarshal(blob.publicArea, into: &inPublic, "public area", Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        try unmarshal(blob.privateArea, into: &inPrivate, "private area", Tss2_MU_TPM2B_PRIVATE_Unmarshal)
        let conf = configuration(tcti)
        do {
            return try unsealing(&inPublic, &inPrivate, bound, blob.storageKeyName, conf)
        } catch {
            throw unsealError(error, conf, bound)
        }
    }

    /// Whether a TPM answers (for `latchkey doctor`/`store status`): nil when it does, else the reason.
    public static func probe(tcti: String?) -> String? {
        let conf = configuration(tcti)
        do {
            let tpm = try ESAPIConnection(conf)
            var more: TPMI_YES_NO = 0
            var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
            defer { Esys_Free(data) }
            try check(Esys_GetCapability(tpm.context, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                         TPM2_CAP_TPM_PROPERTIES, manufacturerProperty, 1, &more, &data), .getCapability)
            return nil
        } catch {
            if error.isUnreachable { return "no TPM answered (\(describe(conf, error))): \(reachHint)" }
            return "the TPM answered with an error (\(error.text))"
        }
    }

    /// Extends PCR `pcr`'s SHA-256 bank with `digest` (32 bytes): for tests, which change a bound
    /// PCR as a firmware update would (a PCR cannot be set back, only extended or reset by reboot).
    static func extendPCR(_ pcr: UInt8, digest: [UInt8], tcti: String?) throws(SealError) {
        guard Int(pcr) < pcrCount, digest.count == 32 else { throw .io("PCR \(pcr) cannot be extended by \(digest.count) bytes") }
        var values = TPML_DIGEST_VALUES()
        values.count = 1
        values.digests.0.hashAlg = TPM2_ALG_SHA256
        withUnsafeMutableBytes(of: &values.digests.0.digest) { $0.copyBytes(from: digest) }
        let conf = configuration(tcti)
        do {
            let tpm = try ESAPIConnection(conf)
            try check(Esys_PCR_Extend(tpm.context, ESYS_TR_PCR0 + ESYS_TR(pcr), ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                      &values), .pcrExtend)
        } catch {
            throw .io("extending PCR \(pcr) failed (\(describe(conf, error)))")
        }
    }
}

// MARK: - The TPM conversations

extension TPMSeal {
    /// TPM2_PT_MANUFACTURER (TPM2_PT_FIXED + 5): a property every TPM has, for `probe`.
    static let manufacturerProperty: TPM2_PT = 0x105

    /// The TCTI to open: the caller's, else TSS2_TCTI, else the kernel's resource manager.
    ///
    /// Not the loader's default (NULL): when /dev/tpmrm0 and /dev/tpm0 cannot be opened it goes on
    /// to a simulator on localhost:2321 (swtpm, mssim), which any local user can run, and `seal`
    /// sends the secret to whatever answers there. An explicit TSS2_TCTI (tabrmd, a simulator)
    /// is still honoured: whoever sets the environment chooses the TPM.
    static func configuration(_ tcti: String?) -> String {
        if let tcti, !tcti.isEmpty { return tcti }
        if let variable = getenv("TSS2_TCTI"), variable.pointee != 0 { return String(cString: variable) }
        return defaultTCTI
    }

    static let defaultTCTI = "device:/dev/tpmrm0"
    static let reachHint = "can you open /dev/tpmrm0 (group tss)?"

    static func describe(_ conf: String, _ failure: TPMFailure) -> String {
        "TCTI \(conf == defaultTCTI ? "default: /dev/tpmrm0" : conf): \(failure.text)"
    }

    private static func sealing(_ secret: SecretBytes, _ bound: PCRSelection, _ conf: String) throws(TPMFailure) -> Blob {
        let tpm = try ESAPIConnection(conf)
        var template = TPM2B_PUBLIC()
        template.publicArea.type = TPM2_ALG_KEYEDHASH
        template.publicArea.nameAlg = TPM2_ALG_SHA256
        // A data object: the TPM keeps what it is given, so sensitiveDataOrigin stays clear
        // (set, TPM2_Create refuses the data); noDA, as a wrong guess has no password to lock out.
        template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA
        template.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL
        if bound.indices.isEmpty {
            template.publicArea.objectAttributes |= TPMA_OBJECT_USERWITHAUTH
        } else {
            // Without userWithAuth the (empty) password opens nothing: only the PCR policy does.
            template.publicArea.objectAttributes |= TPMA_OBJECT_ADMINWITHPOLICY
            template.publicArea.authPolicy = try policyDigest(tpm, bound)
        }
        let primary = try tpm.createPrimary()
        defer { tpm.flush(primary) }
        let storageKeyName = try tpm.name(of: primary)
        // The secret goes to the TPM encrypted (TPM2_Create's first parameter, inSensitive): the
        // session that authorizes the storage key is salted by it and encrypts that parameter.
        let session = try tpm.startSession(TPM2_SE_HMAC, saltedBy: primary, encrypting: TPMA_SESSION_DECRYPT)
        defer { tpm.flush(session) }

        var sensitive = TPM2B_SENSITIVE_CREATE()
        defer { wipe(&sensitive) }
        secret.withUnsafeBytes { bytes in
            withUnsafeMutableBytes(of: &sensitive.sensitive.data.buffer) { $0.copyMemory(from: bytes) }
        }
        sensitive.sensitive.data.size = UInt16(secret.count)
        var outsideInfo = TPM2B_DATA()
        var creationPCR = TPML_PCR_SELECTION()
        var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        defer { Esys_Free(outPrivate); Esys_Free(outPublic) }
        try check(Esys_Create(tpm.context, primary, session, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template,
                              &outsideInfo, &creationPCR, &outPrivate, &outPublic, nil, nil, nil), .create)
        guard let sealedPublic = outPublic, let sealedPrivate = outPrivate else { throw TPMFailure(.create, esysGeneralFailure) }
        return Blob(publicArea: try marshal(sealedPublic, MemoryLayout<TPM2B_PUBLIC>.size, Tss2_MU_TPM2B_PUBLIC_Marshal),
                    privateArea: try marshal(sealedPrivate, MemoryLayout<TPM2B_PRIVATE>.size, Tss2_MU_TPM2B_PRIVATE_Marshal),
                    pcrs: bound.indices, storageKeyName: storageKeyName)
    }

    private static func unsealing(_ inPublic: inout TPM2B_PUBLIC, _ inPrivate: inout TPM2B_PRIVATE, _ bound: PCRSelection,
                                  _ storageKeyName: [UInt8]?, _ conf: String) throws(TPMFailure) -> SecretBytes {
        let tpm = try ESAPIConnection(conf)
        let primary = try tpm.createPrimary()
        defer { tpm.flush(primary) }
        // The session below is salted to this key: one that is not the key sealed under (another
        // TPM, a cleared one, or something between the CPU and the TPM answering in its place
        // with a key of its own, to read the secret) gets nothing.
        if let storageKeyName, try tpm.name(of: primary) != storageKeyName {
            throw TPMFailure(.storageKeyCheck, esysGeneralFailure)
        }
        var object: ESYS_TR = ESYS_TR_NONE
        try check(Esys_Load(tpm.context, primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                            &inPrivate, &inPublic, &object), .load)
        defer { tpm.flush(object) }

        // No PCRs: an HMAC session with the object's empty password. PCRs: a policy session that has
        // run PolicyPCR now. Either is salted by the storage key and encrypts TPM2_Unseal's response
        // parameter, so the secret comes back over the bus encrypted (TPM 2.0 Part 1, 21).
        let authorization = try tpm.startSession(bound.indices.isEmpty ? TPM2_SE_HMAC : TPM2_SE_POLICY,
                                                 saltedBy: primary, encrypting: TPMA_SESSION_ENCRYPT)
        defer { tpm.flush(authorization) }
        if !bound.indices.isEmpty {
            var pcrs = bound.list
            var current = TPM2B_DIGEST()   // empty: the TPM takes its PCRs as they are now
            try check(Esys_PolicyPCR(tpm.context, authorization, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                     &current, &pcrs), .policyPCR)
        }

        var outData: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
        defer {
            if let outData {
                wipe(&outData.pointee)
                Esys_Free(outData)
            }
        }
        try check(Esys_Unseal(tpm.context, object, authorization, ESYS_TR_NONE, ESYS_TR_NONE, &outData), .unseal)
        guard let data = outData else { throw TPMFailure(.unseal, esysGeneralFailure) }
        let size = Int(data.pointee.size)
        // In place (inout): a by-value `withUnsafeBytes(of:)` would copy the secret to a temporary.
        let secret: SecretBytes? = withUnsafeBytes(of: &data.pointee.buffer) { buffer in
            size <= buffer.count ? SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<size])) : nil
        }
        guard let secret else { throw TPMFailure(.unseal, esysGeneralFailure) }
        return secret
    }

    /// The policy digest a PolicyPCR session reaches over the current values of `bound`, computed
    /// by the TPM in a trial session (TPM 2.0 Part 3, PolicyPCR: a trial session with an empty
    /// pcrDigest takes the PCRs' present digest).
    private static func policyDigest(_ tpm: ESAPIConnection, _ bound: PCRSelection) throws(TPMFailure) -> TPM2B_DIGEST {
        let trial = try tpm.startSession(TPM2_SE_TRIAL)
        defer { tpm.flush(trial) }
        var pcrs = bound.list
        var current = TPM2B_DIGEST()
        try check(Esys_PolicyPCR(tpm.context, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &pcrs), .policyPCR)
        var digest: UnsafeMutablePointer<TPM2B_DIGEST>?
        defer { Esys_Free(digest) }
        try check(Esys_PolicyGetDigest(tpm.context, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &digest), .policyGetDigest)
        guard let result = digest, result.pointee.size == 32 else { throw TPMFailure(.policyGetDigest, esysGeneralFailure) }
        return result.pointee
    }
}

// MARK: - Errors

extension TPMSeal {
    /// TSS2_ESYS_RC_GENERAL_FAILURE (a macro Swift does not import): ESAPI answered success with
    /// no result.
    static let esysGeneralFailure: TSS2_RC = 0x07_0001

    /// TPM response codes (TPM 2.0 Part 2, 6.6), as `TPMFailure.tpmCode` reduces them. The
    /// header's macros nest casts and sums, which Swift does not import.
    enum ResponseCode {
        static let authFail: UInt32 = 0x08E       // TPM_RC_AUTH_FAIL (FMT1 + 0x00E)
        static let policyFail: UInt32 = 0x09D     // TPM_RC_POLICY_FAIL (FMT1 + 0x01D)
        static let integrity: UInt32 = 0x09F      // TPM_RC_INTEGRITY (FMT1 + 0x01F)
        static let badAuth: UInt32 = 0x0A2        // TPM_RC_BAD_AUTH (FMT1 + 0x022)
        static let binding: UInt32 = 0x0A5        // TPM_RC_BINDING (FMT1 + 0x025)
        static let pcrChanged: UInt32 = 0x128     // TPM_RC_PCR_CHANGED (VER1 + 0x028)
    }

    private static func sealError(_ failure: TPMFailure, _ conf: String) -> SealError {
        if failure.isUnreachable {
            return .io("no TPM answered (\(describe(conf, failure))): \(reachHint) Without a TPM, seal with a passphrase")
        }
        if let owner = ownerAuthMessage(failure) { return .io(owner) }
        return .io("sealing to the TPM failed (\(failure.text))")
    }

    private static func unsealError(_ failure: TPMFailure, _ conf: String, _ bound: PCRSelection) -> SealError {
        let code = failure.tpmCode
        if failure.isUnreachable {
            return .sealed("the master key is sealed to a TPM 2.0, and no TPM answered (\(describe(conf, failure))): "
                           + "is this the machine it was sealed on, and \(reachHint)")
        }
        if let owner = ownerAuthMessage(failure) { return .sealed(owner) }
        if failure.step == .storageKeyCheck {
            return .sealed("the master key is sealed to another TPM (or this TPM was cleared): this TPM's storage key is not "
                           + "the one it was sealed under; open the store on the machine that sealed it (if this is that "
                           + "machine and its TPM was not cleared, something between the CPU and the TPM may be answering "
                           + "in its place)")
        }
        // Another TPM's storage key (or this one's after TPM2_Clear) cannot decrypt the private
        // area: its integrity HMAC fails, or the public and private areas no longer match.
        if failure.step == .load, code == ResponseCode.integrity || code == ResponseCode.binding {
            return .sealed("the master key is sealed to another TPM (or this TPM was cleared): this TPM cannot load it "
                           + "(\(failure.text)); open the store on the machine that sealed it")
        }
        if failure.step == .unseal || failure.step == .policyPCR,
           code == ResponseCode.policyFail || code == ResponseCode.pcrChanged {
            let list = bound.indices.map(String.init).joined(separator: ", ")
            let which = bound.indices.count == 1 ? "PCR \(list), whose value has" : "PCRs \(list), whose values have"
            return .sealed("the master key is sealed to this TPM bound to \(which) changed since (a firmware or Secure Boot "
                           + "change): unseal on the old state, or restore a backup (\(failure.text))")
        }
        return .sealed("the master key is sealed to a TPM 2.0, and unsealing it failed (\(failure.text))")
    }

    /// The storage key is re-created under the owner hierarchy with its empty password; one who
    /// set an owner password (tpm2_changeauth -c owner) is told so.
    private static func ownerAuthMessage(_ failure: TPMFailure) -> String? {
        guard failure.step == .createPrimary,
              failure.tpmCode == ResponseCode.badAuth || failure.tpmCode == ResponseCode.authFail else { return nil }
        return "the TPM's owner hierarchy has a password (\(failure.text)): latchkey re-creates its storage key "
            + "under an empty owner password; seal with a passphrase instead"
    }

    static func check(_ rc: TSS2_RC, _ step: TPMFailure.Step) throws(TPMFailure) {
        if rc != TSS2_RC_SUCCESS { throw TPMFailure(step, rc) }
    }
}

/// One TSS2 call that failed: which, and its response code.
struct TPMFailure: Error {
    enum Step: String {
        case tctiLoader = "Tss2_TctiLdr_Initialize", initialize = "Esys_Initialize"
        case createPrimary = "Esys_CreatePrimary", create = "Esys_Create", load = "Esys_Load", unseal = "Esys_Unseal"
        case startAuthSession = "Esys_StartAuthSession", policyPCR = "Esys_PolicyPCR", policyGetDigest = "Esys_PolicyGetDigest"
        case getCapability = "Esys_GetCapability", pcrExtend = "Esys_PCR_Extend", marshal = "Tss2_MU"
        case getName = "Esys_TR_GetName", storageKeyCheck = "the storage key's name", sign = "Esys_Sign"
    }

    let step: Step
    let rc: TSS2_RC

    init(_ step: Step, _ rc: TSS2_RC) {
        self.step = step
        self.rc = rc
    }

    /// TSS2 layers (tss2_common.h: TSS2_RC_LAYER(n) is n << 16).
    static let tctiLayer: TSS2_RC = 10 << 16
    static let resourceManagerTPMLayer: TSS2_RC = 12 << 16

    /// The call and tpm2-tss's own words for the code (Tss2_RC_Decode: "tpm:parameter(1):integrity check failed").
    var text: String {
        let decoded = Tss2_RC_Decode(rc).map { String(cString: $0) } ?? "unknown"
        return "\(step.rawValue): \(decoded) (0x\(String(rc, radix: 16)))"
    }

    /// Whether no TPM was there to answer: the loader found none, or the transport failed.
    var isUnreachable: Bool {
        step == .tctiLoader || step == .initialize || rc & 0xFF_0000 == Self.tctiLayer
    }

    /// The TPM's own response code with the handle, parameter or session number it names taken out,
    /// or nil when the code is the TSS's rather than the TPM's. TPM 2.0 Part 2, 6.6: format one
    /// (bit 7 set) keeps its error in bits 0-5, the parameter flag in bit 6 and the number in bits
    /// 8-11, so `rc & 0xFFF` alone would not do: a policy failure on session 1 (0x99D) and on
    /// session 2 (0xA9D) are both TPM_RC_POLICY_FAIL (0x09D). Format zero is the whole low 12
    /// bits (VER1, severity, error).
    var tpmCode: UInt32? {
        let layer = rc & 0xFF_0000
        guard layer == 0 || layer == Self.resourceManagerTPMLayer else { return nil }
        let code = rc & 0xFFFF
        return code & 0x80 != 0 ? code & 0xBF : code & 0xFFF
    }
}

// MARK: - ESAPI plumbing

/// One conversation with a TPM: the TCTI the loader opened and the ESAPI context over it, owned
/// here and finalized in deinit (STYLE 5); transient handles are flushed by whoever made them.
final class ESAPIConnection {
    let context: OpaquePointer
    private var tcti: OpaquePointer?

    init(_ conf: String) throws(TPMFailure) {
        var tcti: OpaquePointer?
        let loaded = Tss2_TctiLdr_Initialize(conf, &tcti)
        guard loaded == TSS2_RC_SUCCESS, tcti != nil else { throw TPMFailure(.tctiLoader, loaded) }
        var context: OpaquePointer?
        let initialized = Esys_Initialize(&context, tcti, nil)
        guard initialized == TSS2_RC_SUCCESS, let context else {
            Tss2_TctiLdr_Finalize(&tcti)
            throw TPMFailure(.initialize, initialized)
        }
        self.context = context
        self.tcti = tcti
    }

    deinit {
        var context: OpaquePointer? = context
        Esys_Finalize(&context)
        Tss2_TctiLdr_Finalize(&tcti)
    }

    /// The owner hierarchy's storage key from the TCG standard SRK template (TCG TPM v2.0
    /// Provisioning Guidance, 7.5.1: ECC NIST P-256, AES-128-CFB, unique empty): the same owner
    /// seed always derives the same key, so nothing has to be made persistent in the TPM.
    func createPrimary() throws(TPMFailure) -> ESYS_TR {
        var template = TPM2B_PUBLIC()
        template.publicArea.type = TPM2_ALG_ECC
        template.publicArea.nameAlg = TPM2_ALG_SHA256
        template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
            | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT
        template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES
        template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128
        template.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB
        template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL
        template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256
        template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var outsideInfo = TPM2B_DATA()
        var creationPCR = TPML_PCR_SELECTION()
        var handle: ESYS_TR = ESYS_TR_NONE
        let rc = Esys_CreatePrimary(context, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive,
                                    &template, &outsideInfo, &creationPCR, &handle, nil, nil, nil, nil)
        guard rc == TSS2_RC_SUCCESS else { throw TPMFailure(.createPrimary, rc) }
        return handle
    }

    /// A session over SHA-256. Unsalted (`key` none): a trial one, to compute a policy (nothing
    /// secret crosses the bus in it). Salted by `key` (its salt sent encrypted to that key: only
    /// this TPM learns the session key), it encrypts the first parameter of the commands it is
    /// used in, AES-128-CFB: `TPMA_SESSION_DECRYPT` for a command's (the TPM decrypts it),
    /// `TPMA_SESSION_ENCRYPT` for a response's. Against a passive listener on the bus, as
    /// systemd-cryptenroll and tpm2-tools' sealing do; an active one answering with a storage key
    /// of its own is caught by the storage key's recorded name (`unsealing`).
    func startSession(_ type: TPM2_SE, saltedBy key: ESYS_TR = ESYS_TR_NONE,
                      encrypting direction: TPMA_SESSION = 0) throws(TPMFailure) -> ESYS_TR {
        var symmetric = TPMT_SYM_DEF()
        symmetric.algorithm = TPM2_ALG_NULL
        if key != ESYS_TR_NONE {
            symmetric.algorithm = TPM2_ALG_AES
            symmetric.keyBits.aes = 128
            symmetric.mode.aes = TPM2_ALG_CFB
        }
        var session: ESYS_TR = ESYS_TR_NONE
        var rc = Esys_StartAuthSession(context, key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                       nil, type, &symmetric, TPM2_ALG_SHA256, &session)
        guard rc == TSS2_RC_SUCCESS else { throw TPMFailure(.startAuthSession, rc) }
        guard direction != 0 else { return session }
        rc = Esys_TRSess_SetAttributes(context, session, direction | TPMA_SESSION_CONTINUESESSION, 0xFF)
        guard rc == TSS2_RC_SUCCESS else {
            flush(session)
            throw TPMFailure(.startAuthSession, rc)
        }
        return session
    }

    /// The TPM Name of a loaded object, as ESAPI holds it: nameAlg ‖ digest of its public area.
    func name(of handle: ESYS_TR) throws(TPMFailure) -> [UInt8] {
        var name: UnsafeMutablePointer<TPM2B_NAME>?
        defer { Esys_Free(name) }
        let rc = Esys_TR_GetName(context, handle, &name)
        guard rc == TSS2_RC_SUCCESS else { throw TPMFailure(.getName, rc) }
        guard let name, name.pointee.size > 0 else { throw TPMFailure(.getName, TPMSeal.esysGeneralFailure) }
        return withUnsafeBytes(of: &name.pointee.name) { Array($0.prefix(Int(name.pointee.size))) }
    }

    /// Frees a transient object or session in the TPM (its few slots are shared by every program).
    /// A failure is ignored: the caller is already returning, and a resource manager flushes a
    /// closed connection's handles anyway.
    func flush(_ handle: ESYS_TR) {
        if handle != ESYS_TR_NONE { _ = Esys_FlushContext(context, handle) }
    }
}

/// The SHA-256 bank's PCRs a policy binds: sorted, unique, each one of the platform's 24.
struct PCRSelection {
    let indices: [UInt8]

    /// A PCR number past the platform's.
    struct Invalid: Error, CustomStringConvertible {
        let pcr: UInt8
        var description: String { "PCR \(pcr), which is not one of the TPM's \(TPMSeal.pcrCount)" }
    }

    init(_ pcrs: [UInt8]) throws(Invalid) {
        indices = Array(Set(pcrs)).sorted()
        if let past = indices.first(where: { Int($0) >= TPMSeal.pcrCount }) { throw Invalid(pcr: past) }
    }

    /// As TPM2_PolicyPCR takes it: one SHA-256 selection, a bit per PCR (bit n % 8 of octet n / 8).
    var list: TPML_PCR_SELECTION {
        var list = TPML_PCR_SELECTION()
        list.count = 1
        list.pcrSelections.0.hash = TPM2_ALG_SHA256
        list.pcrSelections.0.sizeofSelect = UInt8(TPMSeal.pcrCount / 8)
        withUnsafeMutableBytes(of: &list.pcrSelections.0.pcrSelect) { bits in
            for pcr in indices { bits[Int(pcr / 8)] |= 1 << (pcr % 8) }
        }
        return list
    }
}

// MARK: - Marshalling

extension TPMSeal {
    static func marshal<T>(_ value: UnsafePointer<T>, _ capacity: Int,
                                   _ marshal: (UnsafePointer<T>?, UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?) -> TSS2_RC)
        throws(TPMFailure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: capacity)
        var offset = 0
        let rc = bytes.withUnsafeMutableBufferPointer { marshal(value, $0.baseAddress, $0.count, &offset) }
        guard rc == TSS2_RC_SUCCESS else { throw TPMFailure(.marshal, rc) }
        return Array(bytes[0..<offset])
    }

    /// Parses a whole blob field into `value`: trailing bytes are refused as corruption too.
    private static func unmarshal<T>(_ bytes: [UInt8], into value: inout T, _ what: String,
                                     _ unmarshal: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<T>?) -> TSS2_RC)
        throws(SealError) {
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer { unmarshal($0.baseAddress, $0.count, &offset, &value) }
        guard rc == TSS2_RC_SUCCESS, offset == bytes.count else {
            let reason = rc == TSS2_RC_SUCCESS ? "\(bytes.count - offset) bytes left over" : TPMFailure(.marshal, rc).text
            throw .corrupt("the TPM-sealed master key's \(what) does not parse (\(reason))")
        }
    }

    /// Zeroes, in place, a C struct that held secret bytes (explicit_bzero: never elided as a dead store).
    static func wipe<T>(_ value: inout T) {
        withUnsafeMutableBytes(of: &value) { bytes in
            if let base = bytes.baseAddress { explicit_bzero(base, bytes.count) }
        }
    }
}
