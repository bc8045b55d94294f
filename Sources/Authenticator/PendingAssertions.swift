import CTAP

/// authenticatorGetNextAssertion state (CTAP 2.1 §6.3): the discoverable credentials a
/// getAssertion without an allowList found after the first, handed out one per
/// getNextAssertion, with what that getAssertion settled (flags, user verification, the
/// extension requests).
///
/// One sequence at a time, bound to the channel of its getAssertion. It holds a position in the
/// store's order and a count, not the credentials: each is read when it is handed out, nothing
/// is decrypted ahead or kept between requests, and an RP with many accounts costs no list.
struct PendingAssertions {
    /// The CTAPHID channel of the getAssertion.
    let channel: UInt32
    let rpIDHash: [UInt8]
    let clientDataHash: [UInt8]
    let flags: AuthenticatorData.Flags
    let userVerified: Bool
    let wantsCredBlob: Bool
    let wantsLargeBlobKey: Bool
    let wantsThirdPartyPayment: Bool
    let hmacSecret: HMACSecretRequest?
    /// Where the last handed-out credential stands in the store's order (newest first).
    private(set) var position: CredentialReference
    /// How many numberOfCredentials promised that are not handed out yet.
    private(set) var remaining: Int
    /// Monotonic milliseconds of the getAssertion or the last getNextAssertion.
    private(set) var lastUsed: UInt64

    init(channel: UInt32, rpIDHash: [UInt8], clientDataHash: [UInt8], flags: AuthenticatorData.Flags,
         userVerified: Bool, wantsCredBlob: Bool, wantsLargeBlobKey: Bool, wantsThirdPartyPayment: Bool = false,
         hmacSecret: HMACSecretRequest?, position: CredentialReference, remaining: Int, now: UInt64) {
        self.channel = channel; self.rpIDHash = rpIDHash; self.clientDataHash = clientDataHash
        self.flags = flags; self.userVerified = userVerified
        self.wantsCredBlob = wantsCredBlob; self.wantsLargeBlobKey = wantsLargeBlobKey; self.hmacSecret = hmacSecret
        self.wantsThirdPartyPayment = wantsThirdPartyPayment
        self.position = position; self.remaining = remaining
        self.lastUsed = now
    }

    /// CTAP 2.1 §6.3: getNextAssertion must directly follow on the same channel; any other
    /// command from that channel ends the sequence (commands on other channels do not).
    func isEnded(by command: CTAPCommand, on channel: UInt32) -> Bool {
        command != .getNextAssertion && channel == self.channel
    }

    /// Whether more than `timeout` (in the unit of `now`) passed since the last use (the sequence is over).
    func hasExpired(now: UInt64, timeout: UInt64) -> Bool {
        now &- lastUsed > timeout
    }

    var isExhausted: Bool { remaining <= 0 }

    /// `next` was handed out (a use, for `hasExpired`); the sequence continues after it.
    mutating func handedOut(_ next: DiscoverableCredential, now: UInt64) {
        position = next.position
        remaining -= 1
        lastUsed = now
    }
}
