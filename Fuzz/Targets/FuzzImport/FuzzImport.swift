import Authenticator
import CTAP
import Exchange
import FIDOCrypto
import FuzzSupport

/// A file given to `latchkey import` or `restore`: `PasskeyFile.encryptedExport(in:)` (the
/// encrypted header), `PasskeyFile(_:)` (CXF, Bitwarden, KeePassXC) and the import plan against an
/// empty key, `KeyBackup.decode`, and a version 2 backup's header line and prologue. Invariants: never a trap; every passkey read has one outcome;
/// a plan that may be applied stores only counterless credentials whose key signs, one per account
/// and per credential ID.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    _ = try? PasskeyFile.encryptedExport(in: bytes)
    _ = try? KeyBackup.decode(bytes)
    // A streamed backup's first line and its plaintext's prologue (BackupStream, version 2).
    if let newline = bytes.firstIndex(of: 0x0A) { _ = try? BackupStream.Header(line: Array(bytes[..<newline])) }
    _ = try? BackupStream.readPrologue(bytes)
    guard let file = try? PasskeyFile(bytes) else { return 0 }
    let plan = PasskeyImport(file: file, existing: [], algorithms: COSEAlgorithm.credentialAlgorithms, maxCredBlobLength: 32,
                             conflicts: .refuse, now: 0, random: SystemRandom())
    invariant(plan.outcomes.count == file.passkeys.count, "\(file.passkeys.count) passkeys, \(plan.outcomes.count) outcomes")
    if plan.canApply {
        invariant(plan.credentials.count == file.passkeys.count, "an applicable plan stores every passkey of an empty key")
        invariant(Set(plan.credentials.map(\.credentialID)).count == plan.credentials.count, "a credential ID twice")
        for credential in plan.credentials {
            invariant(credential.counterless, "an imported credential that counts")
            invariant((1...64).contains(credential.userHandle.count), "user handle of \(credential.userHandle.count) bytes")
            let algorithm = COSEAlgorithm(rawValue: credential.algorithm)
            invariant(algorithm.map { CredentialKeyCheck.publicKey(algorithm: $0, secret: credential.privateKey) != nil } ?? false,
                      "a stored key that does not sign")
        }
    }
    return 0
}
