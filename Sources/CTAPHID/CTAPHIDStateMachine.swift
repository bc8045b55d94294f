/// The device side of CTAPHID (CTAP 2.1 §11.2), sans IO.
///
/// A value type: every event is a `mutating func` that returns the actions the
/// caller must perform, in order (write reports, dispatch a request to the
/// authenticator worker, set a cancellation flag, wink). Time is a parameter;
/// the caller calls `tick(now:)` no later than `nextDeadline()`.
///
/// One transaction at a time for the whole device (§11.2.5.1): while a channel is
/// receiving a multi-packet message or has a request on the worker, other
/// channels get ERR_CHANNEL_BUSY, except for INIT (always served) and CANCEL
/// (never answered).
///
/// Decisions the spec leaves open:
/// - a new request on the channel whose own request is still running is also
///   ERR_CHANNEL_BUSY (the device is busy, whichever channel asks);
/// - INIT on a non-broadcast channel that is not allocated (e.g. evicted)
///   adopts that channel ID and answers with it, like a resync;
/// - an aborted request (INIT resync, connection closed) frees the device at
///   once; its eventual `complete` is dropped;
/// - continuation packets only count when they come from the connection that
///   sent the message's initialization packet;
/// - a LOCK is released when its connection closes; INIT does not release it;
/// - CANCEL is never answered: not with ERR_CHANNEL_BUSY under a lock, and not
///   with ERR_INVALID_SEQ when it interrupts its own channel's partial message
///   (which is dropped silently).
///
/// Every `now` is CLOCK_MONOTONIC nanoseconds (MonotonicTime.swift); `nextDeadline()` answers
/// in the same unit.
public struct CTAPHIDStateMachine: Sendable {
    /// §11.2.9.1.3: CTAPHID protocol version reported by INIT.
    public static let protocolVersion: UInt8 = 2
    /// §11.2.9.2.2: a LOCK lasts at most 10 seconds.
    public static let maxLockSeconds: UInt8 = 10

    private struct Assembly: Sendable {
        var channel: UInt32
        var connection: ConnectionID
        var assembler: MessageAssembler
        /// The next continuation's deadline (never past `expires`).
        var deadline: UInt64
        /// When the whole message must have arrived (`messageBudgetMilliseconds`).
        var expires: UInt64
    }

    private struct RunningRequest: Sendable {
        var transactionID: UInt64
        var channel: UInt32
        var command: UInt8
        var connection: ConnectionID
        var sendsKeepalives: Bool
        var status: KeepaliveStatus
        var nextKeepalive: UInt64
        var cancelRequested: Bool
    }

    private struct ChannelLock: Sendable {
        var channel: UInt32
        var connection: ConnectionID
        var expires: UInt64
    }

    /// The device's one transaction (§11.2.5.1: one at a time): a message arriving, or a request
    /// on the worker, never both.
    private enum Transaction: Sendable {
        case idle
        /// A message arriving in continuation packets.
        case receiving(Assembly)
        /// A request dispatched to the worker and not yet completed or aborted.
        case running(RunningRequest)
    }

    private struct State: Sendable {
        var channels: ChannelTable
        var transaction = Transaction.idle
        /// A LOCK holds whatever the transaction is.
        var lock: ChannelLock?
        var nextTransactionID: UInt64 = 1

        var assembly: Assembly? {
            if case let .receiving(assembly) = transaction { assembly } else { nil }
        }

        var running: RunningRequest? {
            if case let .running(request) = transaction { request } else { nil }
        }
    }

    public let configuration: CTAPHIDConfiguration
    private var state: State

    public init(configuration: CTAPHIDConfiguration = .init()) {
        self.configuration = configuration
        self.state = State(channels: ChannelTable(capacity: configuration.maxChannels,
                                                  seed: configuration.channelIDSeed))
    }

    /// A request is running on the worker (dispatched, not yet completed or aborted).
    public var isBusy: Bool { state.running != nil }

    /// Number of allocated channels (bounded by `configuration.maxChannels`).
    public var allocatedChannelCount: Int { state.channels.count }

    // MARK: - Events

    /// A report arrived from `connection`. A report that is not exactly 64 bytes
    /// is dropped (returns []; the caller logs).
    public mutating func receive(report: [UInt8], from connection: ConnectionID, now: UInt64) -> [CTAPHIDAction] {
        guard let header = CTAPHIDReportHeader(report: report) else { return [] }
        expireLock(now: now)
        if header.isInitialization {
            return receiveInitialization(header, report: report, from: connection, now: now)
        }
        return receiveContinuation(header, report: report, from: connection, now: now)
    }

    /// The worker finished `transactionID`: the response is fragmented on the
    /// request's channel with the request's command, to the request's
    /// connection. Stale or aborted IDs return [].
    public mutating func complete(transactionID: UInt64, response: [UInt8], now: UInt64) -> [CTAPHIDAction] {
        guard let request = state.running, request.transactionID == transactionID else { return [] }
        state.transaction = .idle
        guard response.count <= CTAPHIDPacket.maxMessageLength else {
            // A response that cannot be framed is an internal failure: ERR_OTHER rather than a truncated message.
            return [errorReport(.other, channel: request.channel, to: request.connection)]
        }
        return send(channel: request.channel, command: request.command, payload: response, to: request.connection)
    }

    /// The worker's keepalive status changed (e.g. to waiting for user presence).
    /// A change sends a KEEPALIVE at once (CBOR requests only); no change, a MSG
    /// request, or a stale ID returns [].
    public mutating func updateKeepalive(transactionID: UInt64, status: KeepaliveStatus, now: UInt64) -> [CTAPHIDAction] {
        guard var request = state.running, request.transactionID == transactionID,
              request.sendsKeepalives, request.status != status else { return [] }
        request.status = status
        // §11.2.9.1.7: keepalives at least every 100 ms, so the next one is due a full interval after this one.
        request.nextKeepalive = now.addingMilliseconds(configuration.keepaliveIntervalMilliseconds)
        state.transaction = .running(request)
        return [keepaliveReport(for: request)]
    }

    /// Timeouts (ERR_MSG_TIMEOUT, lock expiry) and due keepalives.
    public mutating func tick(now: UInt64) -> [CTAPHIDAction] {
        var actions: [CTAPHIDAction] = []
        expireLock(now: now)
        if let assembly = state.assembly, now >= assembly.deadline {
            // §11.2.5.2: a continuation that does not arrive in time abandons the message with ERR_MSG_TIMEOUT.
            state.transaction = .idle
            actions.append(errorReport(.messageTimeout, channel: assembly.channel, to: assembly.connection))
        }
        if var request = state.running, request.sendsKeepalives, now >= request.nextKeepalive {
            // §11.2.9.1.7: while a CBOR request runs, KEEPALIVE at least every 100 ms, phased from dispatch time.
            actions.append(keepaliveReport(for: request))
            let interval = configuration.keepaliveIntervalMilliseconds
            request.nextKeepalive = request.nextKeepalive.addingMilliseconds(interval)
            if request.nextKeepalive <= now { request.nextKeepalive = now.addingMilliseconds(interval) }
            state.transaction = .running(request)
        }
        return actions
    }

    /// The connection went away: its in-progress message is dropped, its running
    /// request aborted (cancel action; the response is dropped later) and its
    /// lock released.
    public mutating func connectionClosed(_ connection: ConnectionID) -> [CTAPHIDAction] {
        var actions: [CTAPHIDAction] = []
        switch state.transaction {
        case let .receiving(assembly) where assembly.connection == connection:
            state.transaction = .idle
        case let .running(request) where request.connection == connection:
            state.transaction = .idle
            actions.append(.cancelRequest(transactionID: request.transactionID))
        case .idle, .receiving, .running:
            break
        }
        if state.lock?.connection == connection { state.lock = nil }
        state.channels.release(ownedBy: connection)
        return actions
    }

    /// The earliest instant at which `tick(now:)` has something to do, or nil.
    public func nextDeadline() -> UInt64? {
        var deadlines: [UInt64] = []
        if let assembly = state.assembly { deadlines.append(assembly.deadline) }
        if let request = state.running, request.sendsKeepalives { deadlines.append(request.nextKeepalive) }
        if let lock = state.lock { deadlines.append(lock.expires) }
        return deadlines.min()
    }

    // MARK: - Packets

    private mutating func receiveInitialization(_ header: CTAPHIDReportHeader, report: [UInt8],
                                                from connection: ConnectionID, now: UInt64) -> [CTAPHIDAction] {
        let channel = header.channel
        let command = header.commandOrSequence
        // §11.2.3: CID 0 is reserved and never valid.
        if channel == CTAPHIDPacket.reservedChannel {
            return [errorReport(.invalidChannel, channel: channel, to: connection)]
        }
        // §11.2.9.1.3: INIT is always served, even while another channel is busy or holds the lock.
        if command == CTAPHIDCommand.initialize.rawValue {
            return handleInit(declaredLength: header.declaredLength, nonce: report[7..<15], channel: channel, from: connection)
        }
        // §11.2.3: the broadcast channel only carries INIT.
        if channel == CTAPHIDPacket.broadcastChannel {
            return [errorReport(.invalidChannel, channel: channel, to: connection)]
        }
        // §11.2.3: a non-INIT command on a channel that was never allocated is ERR_INVALID_CHANNEL.
        // A channel belongs to the connection that allocated it: another one naming its CID (on
        // the socket transport, where IDs are sequential and guessable) cannot send on it, cancel
        // its request or take its getNextAssertion — ERR_INVALID_CHANNEL, and CANCEL, as ever,
        // gets no answer. The connection's own channel is touched (LRU).
        switch state.channels.use(channel, by: connection) {
        case .unknown:
            return [errorReport(.invalidChannel, channel: channel, to: connection)]
        case .owned:
            if command == CTAPHIDCommand.cancel.rawValue { return [] }
            return [errorReport(.invalidChannel, channel: channel, to: connection)]
        case .touched:
            break
        }

        // §11.2.5.4: an initialization packet on a channel that is mid-message drops it with ERR_INVALID_SEQ.
        if let assembly = state.assembly, assembly.channel == channel {
            state.transaction = .idle
            // §11.2.9.1.5: CANCEL is never answered; the host gave its message up.
            if command == CTAPHIDCommand.cancel.rawValue { return [] }
            return [errorReport(.invalidSequence, channel: channel, to: connection)]
        }
        // §11.2.9.1.5: CANCEL gets no response of its own, whatever the device is doing.
        if command == CTAPHIDCommand.cancel.rawValue {
            return handleCancel(channel: channel)
        }
        // §11.2.5.1: one transaction at a time; any other channel is ERR_CHANNEL_BUSY meanwhile.
        guard case .idle = state.transaction else {
            return [errorReport(.channelBusy, channel: channel, to: connection)]
        }
        // §11.2.9.2.2: while a channel holds the lock, other channels are ERR_CHANNEL_BUSY.
        if let lock = state.lock, lock.channel != channel {
            return [errorReport(.channelBusy, channel: channel, to: connection)]
        }
        // §11.2.9: a command the device does not implement is ERR_INVALID_CMD.
        guard isImplemented(command) else {
            return [errorReport(.invalidCommand, channel: channel, to: connection)]
        }

        var assembler = MessageAssembler(channel: channel)
        switch assembler.feed(header, data: report[header.dataStart...]) {
        case let .complete(command, payload):
            return handleMessage(channel: channel, command: command, payload: payload, from: connection, now: now)
        case .needMore:
            let expires = now.addingMilliseconds(configuration.messageBudgetMilliseconds)
            state.transaction = .receiving(Assembly(
                channel: channel, connection: connection, assembler: assembler,
                deadline: min(now.addingMilliseconds(configuration.messageTimeoutMilliseconds), expires), expires: expires))
            return []
        case .error(let error):
            return [errorReport(error, channel: channel, to: connection)]
        case .ignored:
            return []
        }
    }

    private mutating func receiveContinuation(_ header: CTAPHIDReportHeader, report: [UInt8],
                                              from connection: ConnectionID, now: UInt64) -> [CTAPHIDAction] {
        let channel = header.channel
        // §11.2.5.4: a continuation packet for a channel with no message in progress is ignored silently.
        guard var assembly = state.assembly, assembly.channel == channel, assembly.connection == connection else {
            return []
        }
        state.transaction = .idle  // keeps the assembler's buffer uniquely referenced
        state.channels.touch(channel)
        switch assembly.assembler.feed(header, data: report[header.dataStart...]) {
        case .needMore:
            // §11.2.5.2: the message timeout restarts with every packet received, within the
            // whole message's budget.
            assembly.deadline = min(now.addingMilliseconds(configuration.messageTimeoutMilliseconds), assembly.expires)
            state.transaction = .receiving(assembly)
            return []
        case let .complete(command, payload):
            return handleMessage(channel: channel, command: command, payload: payload, from: connection, now: now)
        case .error(let error):
            return [errorReport(error, channel: channel, to: connection)]
        case .ignored:
            state.transaction = .receiving(assembly)
            return []
        }
    }

    // MARK: - Commands

    private mutating func handleInit(declaredLength: Int, nonce: ArraySlice<UInt8>, channel: UInt32,
                                     from connection: ConnectionID) -> [CTAPHIDAction] {
        // §11.2.9.1.3: the INIT request payload is an 8-byte nonce, nothing else.
        guard declaredLength == 8 else {
            return [errorReport(.invalidLength, channel: channel, to: connection)]
        }
        var actions: [CTAPHIDAction] = []
        let assignedChannel: UInt32
        if channel == CTAPHIDPacket.broadcastChannel {
            // §11.2.9.1.3: INIT on the broadcast channel allocates a fresh channel ID.
            assignedChannel = state.channels.allocate(for: connection, protecting: activeChannels)
        } else {
            // INIT on a channel of another connection would abort that connection's transaction.
            if let owner = state.channels.owner(of: channel), owner != connection {
                return [errorReport(.invalidChannel, channel: channel, to: connection)]
            }
            // §11.2.5.3: INIT on an existing channel resynchronises it, aborting only that channel's transaction.
            switch state.transaction {
            case let .receiving(assembly) where assembly.channel == channel:
                state.transaction = .idle
            case let .running(request) where request.channel == channel:
                state.transaction = .idle
                actions.append(.cancelRequest(transactionID: request.transactionID))
            case .idle, .receiving, .running:
                break
            }
            state.channels.adopt(channel, for: connection, protecting: activeChannels)
            assignedChannel = channel
        }
        state.channels.touch(assignedChannel)

        var response = Array(nonce)
        response.append(UInt8(truncatingIfNeeded: assignedChannel >> 24))
        response.append(UInt8(truncatingIfNeeded: assignedChannel >> 16))
        response.append(UInt8(truncatingIfNeeded: assignedChannel >> 8))
        response.append(UInt8(truncatingIfNeeded: assignedChannel))
        response.append(Self.protocolVersion)
        response.append(configuration.deviceVersion.major)
        response.append(configuration.deviceVersion.minor)
        response.append(configuration.deviceVersion.build)
        response.append(configuration.capabilities)
        // §11.2.9.1.3: the response goes out on the channel the INIT came on (broadcast for a new allocation).
        actions += send(channel: channel, command: CTAPHIDCommand.initialize.rawValue, payload: response, to: connection)
        return actions
    }

    private mutating func handleCancel(channel: UInt32) -> [CTAPHIDAction] {
        // §11.2.9.1.5: CANCEL applies to a CBOR request running on the same channel; otherwise it is ignored.
        guard var request = state.running, request.channel == channel,
              request.command == CTAPHIDCommand.cbor.rawValue, !request.cancelRequested else { return [] }
        request.cancelRequested = true
        state.transaction = .running(request)
        return [.cancelRequest(transactionID: request.transactionID)]
    }

    private mutating func handleMessage(channel: UInt32, command: UInt8, payload: [UInt8],
                                        from connection: ConnectionID, now: UInt64) -> [CTAPHIDAction] {
        switch CTAPHIDCommand(rawValue: command) {
        case .ping:
            // §11.2.9.1.4: PING echoes its payload.
            return send(channel: channel, command: command, payload: payload, to: connection)
        case .wink:
            // §11.2.9.2.1: WINK takes no payload.
            guard payload.isEmpty else { return [errorReport(.invalidLength, channel: channel, to: connection)] }
            return send(channel: channel, command: command, payload: [], to: connection) + [.wink]
        case .lock:
            return handleLock(channel: channel, payload: payload, from: connection, now: now)
        case .cbor:
            // A device without the CBOR capability (a U2F-only key) does not know the command.
            guard configuration.capabilities & CTAPHIDConfiguration.capabilityCBOR != 0 else {
                return [errorReport(.invalidCommand, channel: channel, to: connection)]
            }
            // §11.2.9.1.2: a CBOR request carries at least the CTAP command byte.
            guard !payload.isEmpty else { return [errorReport(.invalidLength, channel: channel, to: connection)] }
            return dispatch(channel: channel, command: command, payload: payload, from: connection, now: now)
        case .msg:
            guard configuration.capabilities & CTAPHIDConfiguration.capabilityNoMSG == 0 else {
                return [errorReport(.invalidCommand, channel: channel, to: connection)]
            }
            return dispatch(channel: channel, command: command, payload: payload, from: connection, now: now)
        default:
            if CTAPHIDCommand.isVendor(command) && configuration.vendorCommands.contains(command) {
                return dispatch(channel: channel, command: command, payload: payload, from: connection, now: now)
            }
            return [errorReport(.invalidCommand, channel: channel, to: connection)]
        }
    }

    private mutating func handleLock(channel: UInt32, payload: [UInt8],
                                     from connection: ConnectionID, now: UInt64) -> [CTAPHIDAction] {
        // §11.2.9.2.2: LOCK takes one byte, a duration of 0...10 seconds; anything else is ERR_INVALID_PAR.
        guard payload.count == 1, payload[0] <= Self.maxLockSeconds else {
            return [errorReport(.invalidParameter, channel: channel, to: connection)]
        }
        if payload[0] == 0 {
            // §11.2.9.2.2: a zero duration releases the lock.
            state.lock = nil
        } else {
            state.lock = ChannelLock(channel: channel, connection: connection,
                                     expires: now.addingMilliseconds(UInt64(payload[0]) * 1000))
        }
        return send(channel: channel, command: CTAPHIDCommand.lock.rawValue, payload: [], to: connection)
    }

    private mutating func dispatch(channel: UInt32, command: UInt8, payload: [UInt8],
                                   from connection: ConnectionID, now: UInt64) -> [CTAPHIDAction] {
        let id = state.nextTransactionID
        state.nextTransactionID += 1
        // §11.2.9.1.7: only CTAP2 (CBOR) requests get keepalives; U2F (MSG) clients poll.
        let keepalives = command == CTAPHIDCommand.cbor.rawValue
        state.transaction = .running(RunningRequest(
            transactionID: id, channel: channel, command: command, connection: connection,
            sendsKeepalives: keepalives, status: .processing,
            nextKeepalive: now.addingMilliseconds(configuration.keepaliveIntervalMilliseconds),
            cancelRequested: false))
        return [.dispatch(CTAPHIDRequest(transactionID: id, channel: channel, command: command,
                                         payload: payload, connection: connection))]
    }

    // MARK: - Helpers

    private func isImplemented(_ command: UInt8) -> Bool {
        switch CTAPHIDCommand(rawValue: command) {
        case .ping, .msg, .lock, .wink, .cbor: return true
        case .initialize, .cancel: return true  // handled before assembly; listed for completeness
        case .keepalive, .error: return false   // device-to-host only
        case nil: return CTAPHIDCommand.isVendor(command) && configuration.vendorCommands.contains(command)
        }
    }

    /// Channels with state attached, which LRU eviction spares when it can.
    private var activeChannels: [UInt32] {
        let transaction: UInt32? = switch state.transaction {
        case .idle: nil
        case let .receiving(assembly): assembly.channel
        case let .running(request): request.channel
        }
        return [transaction, state.lock?.channel].compactMap { $0 }
    }

    private mutating func expireLock(now: UInt64) {
        // §11.2.9.2.2: the lock ends by itself when its duration has elapsed.
        if let lock = state.lock, now >= lock.expires { state.lock = nil }
    }

    private func send(channel: UInt32, command: UInt8, payload: [UInt8], to connection: ConnectionID) -> [CTAPHIDAction] {
        var actions: [CTAPHIDAction] = []
        actions.reserveCapacity(MessageFragmenter.reportCount(payloadCount: payload.count))
        MessageFragmenter.forEachReport(channel: channel, command: command, payload: payload) {
            actions.append(.send(report: $0, to: connection))
        }
        return actions
    }

    private func errorReport(_ error: CTAPHIDError, channel: UInt32, to connection: ConnectionID) -> CTAPHIDAction {
        .send(report: CTAPHIDPacket.initialization(channel: channel, command: CTAPHIDCommand.error.rawValue,
                                                   declaredLength: 1, data: [error.rawValue]).report,
              to: connection)
    }

    private func keepaliveReport(for request: RunningRequest) -> CTAPHIDAction {
        .send(report: CTAPHIDPacket.initialization(channel: request.channel, command: CTAPHIDCommand.keepalive.rawValue,
                                                   declaredLength: 1, data: [request.status.rawValue]).report,
              to: request.connection)
    }
}
