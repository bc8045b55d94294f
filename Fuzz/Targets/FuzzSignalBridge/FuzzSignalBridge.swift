import Authenticator
import CBOR
import CredentialStore
import FIDOCrypto
import Foundation
import FuzzSupport
import SignalBridge
import Encoding

/// `latchkey native-host`'s input: a byte stream cut into native-messaging frames, each message
/// handled by a session on a real SQLite store (two credentials of fuzz.example, one of
/// other.example). Invariants: never a trap; every reply is a JSON object with the message's
/// `id` (or null) and a boolean `ok`; a failure names one of the contract's errors; a success
/// names only credentials of the store; other.example's credential changes only by a signal
/// from other.example or a subdomain of it (the journal says which).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size).bytes
    let bridge = Bridge.shared
    var reader = NativeMessageReader()
    reader.append(input)
    var messages = 0
    while true {
        let message: [UInt8]?
        do throws(NativeMessageReader.Failure) {
            message = try reader.next()
        } catch {
            invariant(!error.message.isEmpty, "a framing failure without a message")
            break
        }
        guard let message else { break }
        messages += 1
        let (reply, understood) = bridge.session.handle(message)
        guard let json = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any] else {
            invariant(false, "the reply is not a JSON object: \(reply.prefix(200))")
            break
        }
        invariant(json["id"] is NSNull || json["id"] is NSNumber, "a reply without an id")
        guard let ok = json["ok"] as? Bool else { invariant(false, "a reply without ok"); break }
        if ok {
            for member in ["hidden", "unhidden", "renamed"] {
                if let ids = json[member] as? [String] {
                    invariant(ids.allSatisfy { bridge.storeIDs.contains($0) }, "\(member) names a credential not in the store: \(ids)")
                }
            }
        } else {
            let error = json["error"] as? String ?? ""
            invariant(["SecurityError", "TypeError", "NotFoundError", "QuotaExceededError", "InternalError"].contains(error),
                      "an error outside the contract: \(error)")
        }
        guard understood else { break }
    }
    bridge.checkOtherSite(messages: messages)
    return 0
}

/// The store and the session, made once per fuzzing process.
final class Bridge: @unchecked Sendable {
    static let shared = Bridge()

    let session: NativeHostSession
    let store: SQLiteCredentialStore
    /// Every credential's ID, base64url (whose changes checkOtherSite holds to their own site).
    var storeIDs: Set<String> = []
    let otherID: [UInt8]

    init() {
        // On tmpfs where there is one: every signal is a durable commit, and an fsync to a disk
        // would cost more than the input (issue 34: at least 1,000 executions a second).
        let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let directory = base + "/latchkey-fuzz-bridge-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        store = try! SQLiteCredentialStore.open(directory: directory)
        func credential(_ rpID: String, id: [UInt8], user: [UInt8]) -> ResidentCredential {
            ResidentCredential(credentialID: id, rpID: rpID, rpIDHash: SHA256Of(rpID), rpName: nil, userHandle: user,
                               userName: "user", userDisplayName: "User", algorithm: -7, privateKey: SecretBytes(randomCount: 32),
                               createdAt: 1_800_000_000, credProtect: .userVerificationOptional, credBlob: nil, largeBlobKey: nil,
                               hmacSecretWithUV: nil, hmacSecretWithoutUV: nil, hiddenSince: nil)
        }
        // Fixed IDs and handles ("AAAA…", "user1"), so seeds and mutations can name them.
        let ids: [[UInt8]] = [[UInt8](repeating: 0, count: 16), [UInt8](repeating: 1, count: 16)]
        otherID = [UInt8](repeating: 2, count: 16)
        try! store.saveResidentCredentials([credential("fuzz.example", id: ids[0], user: Array("user1".utf8)),
                                            credential("fuzz.example", id: ids[1], user: Array("user2".utf8)),
                                            credential("other.example", id: otherID, user: Array("user1".utf8))])
        storeIDs = Set((ids + [otherID]).map(Base64URL.encode))
        let opened = store
        // No rate limit: it would hide everything past the first signals from the fuzzer.
        session = NativeHostSession(openStore: { opened },
                                    loadSuffixes: { PublicSuffixList(rules: "com\nexample\nco.uk\n*.ck\n!www.ck\n") },
                                    limiter: SignalRateLimiter(capacity: .infinity, refillPerSecond: 0), now: { 0 })
    }

    /// No signal from any origin but other.example's own may touch its credential. Each input
    /// starts with it untouched (the end of the last one restored it), so only this input's
    /// journal entries — at most one per message — can explain a change: reading the whole
    /// journal made every input slower than the one before.
    func checkOtherSite(messages: Int) {
        guard let other = try? store.residentCredential(id: otherID) else { return invariant(false, "other.example's credential is gone") }
        let touched = other.hiddenSince != nil || other.userName != "user" || other.userDisplayName != "User"
        guard touched else { return }
        let sources = (try? store.signalJournal(limit: messages)) ?? []
        let bySite = sources.contains { entry in
            guard entry.rpID == "other.example", let host = try? SignalOrigin(entry.source).host else { return false }
            return host == "other.example" || host.hasSuffix(".other.example")
        }
        invariant(bySite, "other.example's credential changed, not by that site: \(sources.suffix(3))")
        _ = try? store.unhideCredential(credentialID: otherID)
        _ = try? store.signalCurrentUserDetails(rpID: "other.example", userHandle: Array("user1".utf8), name: "user", displayName: "User")
    }
}
