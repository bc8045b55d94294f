/// Tunables of `CTAPHIDStateMachine`. The defaults follow CTAP 2.1 §11.2.
public struct CTAPHIDConfiguration: Sendable {
    /// §11.2.9.1.3 capability flags reported in the INIT response.
    public static let capabilityWink: UInt8 = 0x01
    public static let capabilityLock: UInt8 = 0x02
    public static let capabilityCBOR: UInt8 = 0x04
    /// Set when the device does NOT implement CTAPHID_MSG.
    public static let capabilityNoMSG: UInt8 = 0x08

    /// Capability byte of the INIT response; default WINK|LOCK|CBOR (MSG supported).
    public var capabilities: UInt8
    /// Major, minor and build device version numbers of the INIT response.
    public var deviceVersion: (major: UInt8, minor: UInt8, build: UInt8)
    /// A multi-packet message whose next continuation does not arrive within
    /// this time is abandoned with ERR_MSG_TIMEOUT.
    public var messageTimeoutMilliseconds: UInt64
    /// A whole message must arrive within this time of its initialization packet, however
    /// promptly each continuation comes (ERR_MSG_TIMEOUT otherwise). CTAPHID runs one
    /// transaction at a time, so without it a client trickling a 129-packet message, one
    /// packet every 499 ms, would hold every other client at ERR_CHANNEL_BUSY for a minute.
    /// The spec bounds only the gap between packets; a USB host sends a maximal message in
    /// about 130 ms (one packet per 1 ms frame), so 3 s leaves slow VMs twenty times that.
    public var messageBudgetMilliseconds: UInt64
    /// Interval between KEEPALIVE packets while a CBOR request runs.
    public var keepaliveIntervalMilliseconds: UInt64
    /// Upper bound of the channel table; the least recently used channel is
    /// evicted when a new one is allocated on a full table.
    public var maxChannels: Int
    /// First candidate channel ID; further IDs count up from it (skipping 0,
    /// the broadcast ID and IDs in use), so allocation is deterministic.
    public var channelIDSeed: UInt32
    /// Vendor commands (0x40...0x7F) dispatched to the worker like MSG/CBOR.
    /// Any other vendor command is answered with ERR_INVALID_CMD.
    public var vendorCommands: Set<UInt8>

    public init(
        capabilities: UInt8 = CTAPHIDConfiguration.capabilityWink
            | CTAPHIDConfiguration.capabilityLock
            | CTAPHIDConfiguration.capabilityCBOR,
        deviceVersion: (major: UInt8, minor: UInt8, build: UInt8) = (major: 1, minor: 0, build: 0),
        messageTimeoutMilliseconds: UInt64 = 500,
        messageBudgetMilliseconds: UInt64 = 3000,
        keepaliveIntervalMilliseconds: UInt64 = 100,
        maxChannels: Int = 1024,
        channelIDSeed: UInt32 = 1,
        vendorCommands: Set<UInt8> = []
    ) {
        self.capabilities = capabilities
        self.deviceVersion = deviceVersion
        self.messageTimeoutMilliseconds = messageTimeoutMilliseconds
        self.messageBudgetMilliseconds = messageBudgetMilliseconds
        self.keepaliveIntervalMilliseconds = keepaliveIntervalMilliseconds
        self.maxChannels = maxChannels
        self.channelIDSeed = channelIDSeed
        self.vendorCommands = vendorCommands
    }
}
