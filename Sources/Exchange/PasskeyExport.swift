import Authenticator
import CTAP
import FIDOCrypto

/// Which of a key's credentials leave in a CXF export, and the document they make.
///
/// Only counterless discoverable credentials leave (CXF 1.0: a passkey with a non-zero
/// signature counter MUST be excluded, and the user SHOULD be told): a copy of a counting
/// credential would make the site's clone detection fire, or lock the user out. Each credential
/// left behind is listed with its reason.
public enum PasskeyExport {
    public struct Exclusion: Sendable, Equatable {
        public var rpID: String
        public var credentialID: [UInt8]
        public var reason: String
    }

    /// What the exporter calls itself in the header. Latchkey has no web origin; `.invalid` is
    /// the reserved name for one (RFC 2606), so no site can claim it.
    public static let exporterRpId = "latchkey.invalid"

    /// The document of `credentials` (every resident credential of the key, hidden ones too), for
    /// the RPs in `rpIDs` (nil: all). `largeBlobArray`: the key's serialized large-blob array.
    public static func document(of credentials: [ResidentCredential], rpIDs: [String]?, largeBlobArray: [UInt8],
                                keyName: String, now: Int64) -> (CXFDocument, [Exclusion]) {
        var items: [CXFDocument.Item] = []
        var excluded: [Exclusion] = []
        for credential in credentials.sorted(by: { ($0.rpID, $0.createdAt) < ($1.rpID, $1.createdAt) }) {
            if let rpIDs, !rpIDs.contains(credential.rpID) { continue }
            func exclude(_ reason: String) {
                excluded.append(Exclusion(rpID: credential.rpID, credentialID: credential.credentialID, reason: reason))
            }
            guard credential.discoverable else { exclude("not a passkey: kept only to be named in an allowList"); continue }
            guard credential.hiddenSince == nil else {
                exclude("hidden by a signal (bring it back with `latchkey credentials unhide` to export it)")
                continue
            }
            guard credential.counterless else {
                exclude("a counting signature counter: CXF forbids exporting a passkey whose counter is not zero "
                        + "(a copy would trip the site's clone detection); only credentials made with `serve --counter zero` "
                        + "or imported can leave")
                continue
            }
            guard !DeviceKey.isDeviceKey(credential.privateKey) else {
                exclude("its key was made in the TPM (`serve --keys tpm`) and never leaves it")
                continue
            }
            guard let algorithm = COSEAlgorithm(rawValue: credential.algorithm), let pkcs8Algorithm = algorithm.pkcs8Algorithm,
                  let key = try? PKCS8PrivateKey.encode(pkcs8Algorithm, credential.privateKey) else {
                exclude("its key (COSE algorithm \(credential.algorithm)) cannot be written as PKCS#8")
                continue
            }
            var passkey = CXFDocument.Passkey(credentialId: credential.credentialID, rpId: credential.rpID,
                                              username: credential.userName ?? "",
                                              userDisplayName: credential.userDisplayName ?? "",
                                              userHandle: credential.userHandle, key: key)
            if let withUV = credential.hmacSecretWithUV, let withoutUV = credential.hmacSecretWithoutUV {
                passkey.hmacCredentials = CXFDocument.HMACCredentials(withUV: withUV, withoutUV: withoutUV)
            }
            passkey.credBlob = credential.credBlob.flatMap { $0.isEmpty ? nil : $0 }
            if credential.credProtect != .userVerificationOptional { passkey.credProtect = Int(credential.credProtect.rawValue) }
            if let largeBlobKey = credential.largeBlobKey,
               let blob = try? LargeBlobStorage.blob(in: largeBlobArray, key: largeBlobKey) {
                passkey.largeBlob = CXFDocument.LargeBlob(uncompressedSize: blob.count, data: RawDeflate.deflate(blob))
            }
            items.append(CXFDocument.Item(id: credential.credentialID, creationAt: credential.createdAt,
                                          modifiedAt: credential.createdAt, title: credential.rpName ?? credential.rpID,
                                          urls: ["https://\(credential.rpID)"], passkeys: [passkey]))
        }
        // One account: the key's owner, who is the only user a security key knows of.
        let account = CXFDocument.Account(id: SHA256.hash(Array("latchkey key \(keyName)".utf8)).prefix(16).map { $0 },
                                          username: keyName, email: "", items: items)
        return (CXFDocument(exporterRpId: exporterRpId, exporterDisplayName: "Latchkey", timestamp: now, accounts: [account]),
                excluded)
    }
}
