/// A batch of datagrams from `FileDescriptor.receivePackets(into:flags:)`: storage for `slots`
/// packets of at most `capacity` bytes each, kept by its owner from one receive to the next so
/// that receiving allocates nothing (the socket transport's hot path).
public struct ReceivedPackets {
    /// The bytes kept of each packet; a longer one is cut, its `size` still the true length.
    public let capacity: Int
    /// The most packets one receive fetches (recvmmsg's vector length; at most 64).
    public let slots: Int
    var storage: [UInt8]
    var sizes: [Int]
    /// How many packets the last receive fetched.
    public internal(set) var count = 0
    /// The next packet `takeNext` hands out (a receive starts it again at 0).
    public internal(set) var next = 0

    public init(capacity: Int, slots: Int) {
        self.capacity = max(capacity, 1)
        self.slots = max(1, min(slots, 64))
        // Uninitialized: only the bytes the kernel wrote are ever read.
        let total = self.capacity * self.slots
        storage = [UInt8](unsafeUninitializedCapacity: total) { _, count in count = total }
        sizes = [Int](repeating: 0, count: self.slots)
    }

    /// Packet `index`'s true length (MSG_TRUNC): more than `capacity` when it was cut. 0 is an
    /// empty packet or, on a stream or SEQPACKET socket, the peer's end of stream.
    public func size(at index: Int) -> Int {
        precondition(index >= 0 && index < count, "no packet \(index) in a batch of \(count)")
        return sizes[index]
    }

    /// Packet `index`'s bytes, at most `capacity` of them.
    public func bytes(at index: Int) -> [UInt8] {
        let size = self.size(at: index)
        let start = index * capacity
        return Array(storage[start..<start + min(size, capacity)])
    }

    /// The next packet of the batch not yet taken, with its true length; nil when all are taken.
    /// For a reader that hands packets out one at a time (one access to the batch per packet).
    public mutating func takeNext() -> (bytes: [UInt8], size: Int)? {
        guard next < count else { return nil }
        let index = next
        next += 1
        return (bytes(at: index), sizes[index])
    }

    /// Drops the packets not yet taken.
    public mutating func discardRest() {
        next = count
    }
}
