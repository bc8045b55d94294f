import CTAPHID
import Foundation
import LinuxHID
import Synchronization
import SystemIO
import Trace

/// `latchkey replay TRACE --as-device`: a device (uhid, or the socket transport) that answers
/// with a recorded key's answers (RecordedAnswers), to reproduce a client's behaviour without
/// the key. CTAPHID itself is answered live — INIT allocates channels and echoes the client's
/// nonce, PING echoes, WINK and CANCEL are taken —; CBOR and MSG requests get the recording's
/// answers in order. It does no cryptography: signatures are the recorded ones, so a client
/// that verifies them against new challenges rejects them, as it should.
public final class RecordedKey: @unchecked Sendable {
    private let transport: ReportTransport
    private var answers: RecordedAnswers
    private let logger: Logger
    private let loop: StoppableLoop
    private var assemblers: [String: MessageAssembler] = [:]
    private var nextChannel: UInt32 = 0x5245_0001   // "RE" + a count: recognisable in traces

    public init(answers: RecordedAnswers, transport: ReportTransport, logger: Logger) throws(HIDProxy.Failure) {
        self.answers = answers
        self.transport = transport
        self.logger = logger
        do {
            loop = try StoppableLoop(logger: logger)
        } catch {
            throw HIDProxy.Failure(description: "the replay: \(error.description)")
        }
    }

    public func requestStop() { loop.requestStop() }

    /// Answers clients until SIGINT or SIGTERM. Returns the exit status.
    public func runUntilSignalled() -> Int32 { loop.untilSignalled(run) }

    public func run() -> Int32 {
        logger.info("playing \(answers.remaining) recorded answers")
        while !loop.isStopped {
            guard let ready = loop.wait(for: transport.pollDescriptors, pendingSendDeadline: transport.pendingSendDeadline) else {
                return 1
            }
            transport.sendPending(nowNanoseconds: MonotonicClock.nanoseconds())
            for fd in transport.pollDescriptors where ready.contains(fd) {
                for event in transport.readEvents(from: fd) {
                    switch event {
                    case let .report(report, connection): receive(report, from: connection)
                    case let .connectionClosed(connection): assemblers = assemblers.filter { !$0.key.hasPrefix("\(connection)/") }
                    default: break
                    }
                }
            }
        }
        transport.shutdown()
        logger.info("replay stopped; \(answers.remaining) recorded answers were not asked for")
        return 0
    }

    private func receive(_ report: [UInt8], from connection: TransportConnection) {
        guard let packet = CTAPHIDPacket(report: report) else { return }
        let key = "\(connection)/\(packet.channel)"
        var assembler = assemblers[key] ?? MessageAssembler(channel: packet.channel)
        let result = assembler.feed(packet)
        assemblers[key] = assembler
        guard case let .complete(command, payload) = result else {
            if case .error = result { assemblers[key] = nil }
            return
        }
        assemblers[key] = nil
        let channel = packet.channel
        switch command {
        case CTAPHIDCommand.initialize.rawValue:
            // §11.2.9.1.3: broadcast allocates a channel; INIT on a channel keeps it.
            let allocated = channel == CTAPHIDPacket.broadcastChannel ? allocateChannel() : channel
            let cid = [UInt8(allocated >> 24), UInt8(allocated >> 16 & 0xFF), UInt8(allocated >> 8 & 0xFF), UInt8(allocated & 0xFF)]
            reply(channel, command, Array(payload.prefix(8)) + cid + answers.initTail, to: connection)
        case CTAPHIDCommand.ping.rawValue:
            reply(channel, command, payload, to: connection)
        case CTAPHIDCommand.wink.rawValue:
            reply(channel, command, [], to: connection)
        case CTAPHIDCommand.cancel.rawValue:
            break
        case CTAPHIDCommand.cbor.rawValue, CTAPHIDCommand.msg.rawValue:
            if let answer = answers.answer(command: command, payload: payload) {
                logger.debug("answered \(TraceReplay.describe(.init(channel: channel, command: command, payload: payload, redactedFields: [], response: nil))) from the recording")
                reply(channel, answer.command, answer.payload, to: connection)
            } else {
                logger.warning("the recording has no (more) answers for \(TraceReplay.describe(.init(channel: channel, command: command, payload: payload, redactedFields: [], response: nil))): CTAP1_ERR_OTHER")
                reply(channel, command, command == CTAPHIDCommand.cbor.rawValue ? [0x7F] : [0x6F, 0x00], to: connection)
            }
        default:
            reply(channel, CTAPHIDCommand.error.rawValue, [CTAPHIDError.invalidCommand.rawValue], to: connection)
        }
    }

    private func allocateChannel() -> UInt32 {
        defer { nextChannel &+= 1 }
        return nextChannel
    }

    private func reply(_ channel: UInt32, _ command: UInt8, _ payload: [UInt8], to connection: TransportConnection) {
        transport.send(reports: MessageFragmenter.reports(channel: channel, command: command, payload: payload), to: connection)
    }
}
