/// The device's allocated channel IDs, bounded, with least-recently-used eviction, each owned
/// by the connection that allocated it.
///
/// IDs come from an incrementing counter started at a seed (deterministic for
/// tests), skipping the reserved ID 0, the broadcast ID and IDs in use.
struct ChannelTable: Sendable {
    let capacity: Int
    private var lastUse: [UInt32: UInt64] = [:]
    /// Which connection a channel belongs to (ARCHITECTURE.md, The data path: channel state
    /// belongs to the connection that owns the channel). On uhid every reader is connection 0.
    private var owners: [UInt32: ConnectionID] = [:]
    private var useClock: UInt64 = 0
    private var nextCandidate: UInt32

    init(capacity: Int, seed: UInt32) {
        self.capacity = max(1, capacity)
        self.nextCandidate = seed
    }

    var count: Int { lastUse.count }

    func contains(_ channel: UInt32) -> Bool {
        lastUse[channel] != nil
    }

    /// The connection that allocated or adopted `channel`; nil for an unknown channel.
    func owner(of channel: UInt32) -> ConnectionID? {
        owners[channel]
    }

    /// Forgets every channel of `connection` (it is gone; its channel IDs are never reused by it).
    mutating func release(ownedBy connection: ConnectionID) {
        for (channel, owner) in owners where owner == connection {
            owners[channel] = nil
            lastUse[channel] = nil
        }
    }

    /// Marks a channel as just used (for LRU eviction); no-op for unknown channels.
    mutating func touch(_ channel: UInt32) {
        guard lastUse[channel] != nil else { return }
        useClock += 1
        lastUse[channel] = useClock
    }

    /// Allocates a fresh channel ID, evicting the least recently used channel
    /// (preferably one not in `protected`) if the table is full.
    mutating func allocate(for connection: ConnectionID, protecting protected: [UInt32]) -> UInt32 {
        makeRoom(protecting: protected)
        while true {
            let candidate = nextCandidate
            nextCandidate &+= 1
            // §11.2.3: 0 is reserved and 0xFFFFFFFF is broadcast; never hand them out.
            if candidate == CTAPHIDPacket.reservedChannel || candidate == CTAPHIDPacket.broadcastChannel { continue }
            if lastUse[candidate] != nil { continue }
            insert(candidate, owner: connection)
            return candidate
        }
    }

    /// Registers a channel ID chosen by the host (INIT on an unknown channel) for `connection`.
    mutating func adopt(_ channel: UInt32, for connection: ConnectionID, protecting protected: [UInt32]) {
        guard lastUse[channel] == nil else { touch(channel); return }
        makeRoom(protecting: protected)
        insert(channel, owner: connection)
    }

    private mutating func insert(_ channel: UInt32, owner: ConnectionID) {
        useClock += 1
        lastUse[channel] = useClock
        owners[channel] = owner
    }

    // Bounded memory: a client allocating channels in a loop can't exhaust the device — nor
    // take other clients' channels: the channel evicted is the least recently used one of the
    // connection holding the most (the allocating flooder, not an idle client with one channel).
    // On uhid every reader is connection 0, so this is plain LRU there.
    private mutating func makeRoom(protecting protected: [UInt32]) {
        while lastUse.count >= capacity {
            var held: [ConnectionID: Int] = [:]
            for owner in owners.values { held[owner, default: 0] += 1 }
            let greediest = held.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }?.key
            var victim: (channel: UInt32, use: UInt64)?
            var fallback: (channel: UInt32, use: UInt64)?
            for (channel, use) in lastUse {
                if fallback == nil || use < fallback!.use { fallback = (channel, use) }
                if !protected.contains(channel), owners[channel] == greediest, victim == nil || use < victim!.use {
                    victim = (channel, use)
                }
            }
            guard let evict = victim ?? fallback else { return }
            lastUse[evict.channel] = nil
            owners[evict.channel] = nil
        }
    }
}
