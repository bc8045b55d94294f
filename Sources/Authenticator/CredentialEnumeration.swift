import CTAP

/// authenticatorCredentialManagement enumeration state (CTAP 2.1 §6.8.3, §6.8.4): what
/// enumerateRPsBegin or enumerateCredentialsBegin found, handed out by the GetNext subcommands.
///
/// One enumeration at a time, bound to the channel that began it. The store is asked once, at
/// Begin; each GetNext is O(1), so enumerating n items costs O(n) in total.
struct CredentialEnumeration {
    enum Items {
        case relyingParties([RelyingPartyEntry])
        /// An RP's credentials by count, read one at a time from the store's order: no
        /// snapshot of them (or their private keys) is decrypted up front or held between requests.
        case credentials(rpIDHash: [UInt8], count: Int)

        var count: Int {
            switch self {
            case let .relyingParties(entries): entries.count
            case let .credentials(_, count): count
            }
        }
    }

    /// The CTAPHID channel that began the enumeration.
    let channel: UInt32
    let items: Items
    /// Index of the next item to hand out (Begin handed out item 0).
    private(set) var next = 1
    /// Where the last credential handed out stands in the store's order (credentials only).
    private(set) var position: CredentialReference?
    /// Monotonic milliseconds of the last Begin or GetNext.
    private(set) var lastUsed: UInt64

    init(channel: UInt32, items: Items, position: CredentialReference? = nil, now: UInt64) {
        self.channel = channel
        self.items = items
        self.position = position
        self.lastUsed = now
    }

    /// CTAP 2.1 §6.8.3, §6.8.4: the GetNext subcommands continue the enumeration their own
    /// channel began; any other command from that channel ends it. (Other credentialManagement
    /// subcommands end it too: see `isEnded(by:on:)` for subcommands.)
    func isEnded(by command: CTAPCommand, on channel: UInt32) -> Bool {
        channel == self.channel && command != .credentialManagement && command != .credentialManagementPreview
    }

    /// Any credentialManagement subcommand but the two GetNext ones (an unknown one included)
    /// from the enumeration's channel ends it.
    func isEnded(by subcommand: CredentialManagementSubcommand?, on channel: UInt32) -> Bool {
        channel == self.channel && subcommand != .enumerateRPsGetNextRP && subcommand != .enumerateCredentialsGetNextCredential
    }

    /// Whether more than `timeout` (in the unit of `now`) passed since Begin or the last GetNext.
    func hasExpired(now: UInt64, timeout: UInt64) -> Bool {
        now &- lastUsed > timeout
    }

    var isExhausted: Bool { next >= items.count }

    /// The next RP, or nil when this enumeration lists credentials or is exhausted.
    mutating func nextRelyingParty(now: UInt64) -> RelyingPartyEntry? {
        guard case let .relyingParties(entries) = items, next < entries.count else { return nil }
        defer { next += 1; lastUsed = now }
        return entries[next]
    }

    /// Where the next credential is to be read from (after the returned position, of the returned
    /// RP), or nil when this enumeration lists RPs or is exhausted.
    func nextCredentialQuery() -> (rpIDHash: [UInt8], after: CredentialReference)? {
        guard case let .credentials(rpIDHash, count) = items, next < count, let position else { return nil }
        return (rpIDHash, position)
    }

    /// `credential` was handed out; the enumeration continues after it.
    mutating func handedOut(_ credential: DiscoverableCredential, now: UInt64) {
        position = credential.position
        next += 1
        lastUsed = now
    }
}
