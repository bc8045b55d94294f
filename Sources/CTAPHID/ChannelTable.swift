/// The device's allocated channel IDs, bounded, with least-recently-used eviction, each owned
/// by the connection that allocated it.
///
/// IDs come from an incrementing counter started at a seed (deterministic for
/// tests), skipping the reserved ID 0, the broadcast ID and IDs in use.
struct ChannelTable: Sendable {
    let capacity: Int
    /// Every allocated channel: when it was last used, and which connection it belongs to
    /// (docs/architecture.md, How a request travels: channel state belongs to the connection that
    /// owns the channel; on uhid every reader is connection 0). One table, so a packet's checks
    /// and its touch cost one hash of the channel ID each.
    private var channels: [UInt32: Channel] = [:]
    /// Per connection: how many channels it holds, and its channels in order of use (oldest
    /// first), appended on every use; an entry whose stamp is no longer the channel's
    /// `lastUse` is stale and skipped. Eviction is then amortised O(1) instead of a scan of
    /// the whole table — which, full at 1,024 channels, made an INIT flood cost every other
    /// client tens of milliseconds (the flood test).
    private var uses: [ConnectionID: UseQueue] = [:]
    private var useClock: UInt64 = 0
    private var nextCandidate: UInt32

    private struct Channel: Sendable {
        var lastUse: UInt64
        let owner: ConnectionID
    }

    private struct UseQueue: Sendable {
        var held = 0
        var entries: [(channel: UInt32, use: UInt64)] = []
        var head = 0

        /// Appends a use; true when stale entries outnumber live ones enough to compact. A use of
        /// the channel used last only restamps its entry (the entry before it would be stale),
        /// so a client using one channel over and over adds nothing.
        mutating func append(_ channel: UInt32, use: UInt64) -> Bool {
            if entries.count > head, entries[entries.count - 1].channel == channel {
                entries[entries.count - 1].use = use
                return false
            }
            entries.append((channel, use))
            return entries.count - head > 2 * held + 64
        }

        /// Keeps only the entries from `head` on that `isLive` accepts.
        mutating func compact(_ isLive: ((channel: UInt32, use: UInt64)) -> Bool) {
            entries = entries[head...].filter(isLive)
            head = 0
        }
    }

    init(capacity: Int, seed: UInt32) {
        self.capacity = max(1, capacity)
        self.nextCandidate = seed
    }

    var count: Int { channels.count }

    /// The connection that allocated or adopted `channel`; nil for an unknown channel.
    func owner(of channel: UInt32) -> ConnectionID? {
        channels[channel]?.owner
    }

    /// Forgets every channel of `connection` (it is gone; its channel IDs are never reused by it).
    mutating func release(ownedBy connection: ConnectionID) {
        channels = channels.filter { $0.value.owner != connection }
        uses[connection] = nil
    }

    /// What `use(_:by:)` found.
    enum Use: Equatable {
        /// No such channel.
        case unknown
        /// The channel is another connection's: left as it was.
        case owned(by: ConnectionID)
        /// The connection's own channel, now marked as just used.
        case touched
    }

    /// A packet on `channel` from `connection`: the channel's owner checked and, when it is
    /// `connection`, the channel touched — one lookup of the channel for both.
    mutating func use(_ channel: UInt32, by connection: ConnectionID) -> Use {
        guard let index = channels.index(forKey: channel) else { return .unknown }
        let owner = channels.values[index].owner
        guard owner == connection else { return .owned(by: owner) }
        stamp(channel, at: index)
        return .touched
    }

    /// Marks a channel as just used (for LRU eviction); no-op for unknown channels.
    mutating func touch(_ channel: UInt32) {
        guard let index = channels.index(forKey: channel) else { return }
        stamp(channel, at: index)
    }

    /// The use of the channel at `index` in `channels`: its stamp, and its owner's use queue.
    private mutating func stamp(_ channel: UInt32, at index: Dictionary<UInt32, Channel>.Index) {
        useClock += 1
        channels.values[index].lastUse = useClock
        record(channel, owner: channels.values[index].owner)
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
            if channels[candidate] != nil { continue }
            insert(candidate, owner: connection)
            return candidate
        }
    }

    /// Registers a channel ID chosen by the host (INIT on an unknown channel) for `connection`.
    mutating func adopt(_ channel: UInt32, for connection: ConnectionID, protecting protected: [UInt32]) {
        guard channels[channel] == nil else { touch(channel); return }
        makeRoom(protecting: protected)
        insert(channel, owner: connection)
    }

    private mutating func insert(_ channel: UInt32, owner: ConnectionID) {
        useClock += 1
        channels[channel] = Channel(lastUse: useClock, owner: owner)
        uses[owner, default: UseQueue()].held += 1
        record(channel, owner: owner)
    }

    /// Appends a use; compacts the queue when stale entries outnumber live ones.
    private mutating func record(_ channel: UInt32, owner: ConnectionID) {
        let use = useClock
        // Modified in place in the dictionary: one hash of the owner, and no copy of its array.
        let needsCompaction = uses[owner, default: UseQueue()].append(channel, use: use)
        if needsCompaction {
            let channels = self.channels
            uses[owner]?.compact { entry in
                guard let live = channels[entry.channel] else { return false }
                return live.lastUse == entry.use && live.owner == owner
            }
        }
    }

    private mutating func evict(_ channel: UInt32) {
        if let removed = channels.removeValue(forKey: channel) { uses[removed.owner]?.held -= 1 }
    }

    // Bounded memory: a client allocating channels in a loop can't exhaust the device — nor
    // take other clients' channels: the channel evicted is the least recently used one of the
    // connection holding the most (the allocating flooder, not an idle client with one channel).
    // On uhid every reader is connection 0, so this is plain LRU there.
    private mutating func makeRoom(protecting protected: [UInt32]) {
        while channels.count >= capacity {
            if let greediest = uses.max(by: { $0.value.held < $1.value.held || ($0.value.held == $1.value.held && $0.key > $1.key) })?.key,
               let victim = oldestUnprotected(of: greediest, protecting: protected) {
                evict(victim)
                continue
            }
            // Everything the greediest holds is protected (a running request): the oldest
            // unprotected channel anywhere, else the oldest of all — a scan, and rare.
            var victim: (channel: UInt32, use: UInt64)?
            var fallback: (channel: UInt32, use: UInt64)?
            for (channel, entry) in channels {
                let use = entry.lastUse
                if fallback == nil || use < fallback!.use { fallback = (channel, use) }
                if !protected.contains(channel), victim == nil || use < victim!.use { victim = (channel, use) }
            }
            guard let chosen = victim ?? fallback else { return }
            evict(chosen.channel)
        }
    }

    /// Pops `owner`'s use queue to its least recently used live channel that is not protected;
    /// protected ones met on the way are kept (put back in order).
    private mutating func oldestUnprotected(of owner: ConnectionID, protecting protected: [UInt32]) -> UInt32? {
        // Taken out of the dictionary while it changes, so its array is not copied.
        guard var queue = uses.removeValue(forKey: owner) else { return nil }
        var kept: [(channel: UInt32, use: UInt64)] = []
        var found: UInt32?
        while queue.head < queue.entries.count {
            let entry = queue.entries[queue.head]
            queue.head += 1
            guard let live = channels[entry.channel], live.lastUse == entry.use, live.owner == owner else { continue }   // stale
            if protected.contains(entry.channel) { kept.append(entry); continue }
            found = entry.channel
            break
        }
        if !kept.isEmpty {
            queue.entries.replaceSubrange(0..<queue.head, with: kept)
            queue.head = 0
        } else if queue.head > 1_024 && queue.head * 2 > queue.entries.count {
            queue.entries.removeFirst(queue.head)
            queue.head = 0
        }
        uses[owner] = queue
        return found
    }
}
