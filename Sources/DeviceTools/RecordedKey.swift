import Authenticator
import CTAPHID
import KeyService
import LinuxHID
import SystemIO
import Trace

/// `latchkey replay TRACE --as-device`: a device (uhid, or the socket transport) that answers
/// with a recorded key's answers (RecordedAnswers), to reproduce a client's behaviour without
/// the key. It is a request handler on the key's own KeyRunner, so CTAPHID is answered live by
/// the same state machine as a key's — INIT allocates channels and echoes the client's nonce
/// with the recorded key's versions and capabilities, PING echoes, WINK, CANCEL and busy
/// channels are handled —; CBOR and MSG requests get the recording's answers in order. It does
/// no cryptography: signatures are the recorded ones, so a client that verifies them against
/// new challenges rejects them, as it should.
public final class RecordedKey: RequestHandler, @unchecked Sendable {
    /// Touched only from the runner's loop (`neverWaitsForUser`: every request runs there).
    private var answers: RecordedAnswers
    private let logger: Logger

    public init(answers: RecordedAnswers, logger: Logger) {
        self.answers = answers
        self.logger = logger
    }

    /// The recorded key's INIT answer (device version, capabilities); channels numbered from
    /// "RE" + 1, recognisable in traces.
    public var hidConfiguration: CTAPHIDConfiguration {
        let tail = answers.initTail
        var configuration = CTAPHIDConfiguration(channelIDSeed: 0x5245_0001)
        if tail.count == 5 {
            configuration.deviceVersion = (major: tail[1], minor: tail[2], build: tail[3])
            configuration.capabilities = tail[4]
        }
        return configuration
    }

    public var remaining: Int { answers.remaining }

    public var neverWaitsForUser: Bool { true }

    public func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool { false }

    public func powerCycle() {}

    public func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
        let request = TraceReplay.describe(.init(channel: context.channel, command: command, payload: payload, redactedFields: [],
                                                 response: nil))
        if let answer = answers.answer(command: command, payload: payload) {
            if answer.command == command {
                logger.debug("answered \(request) from the recording")
                return answer.payload
            }
            logger.warning("the recording answered \(request) with CTAPHID command 0x\(String(answer.command, radix: 16)), "
                + "which a replayed key does not send: CTAP1_ERR_OTHER")
        } else {
            logger.warning("the recording has no (more) answers for \(request): CTAP1_ERR_OTHER")
        }
        return command == CTAPHIDCommand.cbor.rawValue ? [0x7F] : [0x6F, 0x00]
    }

    /// Answers clients on `transport` until SIGINT or SIGTERM. Returns the exit status.
    public static func serve(_ answers: RecordedAnswers, on transport: ReportTransport, logger: Logger) -> Int32 {
        let key = RecordedKey(answers: answers, logger: logger)
        let runner: KeyRunner
        do {
            runner = try KeyRunner(transport: transport, handler: key, logger: logger, hidConfiguration: key.hidConfiguration)
        } catch {
            logger.error("the replay: \(error.description)")
            transport.shutdown()
            return 1
        }
        let signals = SignalWatcher(stop: { _ in runner.requestStop() }, powerCycle: {})
        defer { signals.cancel() }
        logger.info("playing \(key.remaining) recorded answers")
        runner.run()
        logger.info("replay stopped; \(key.remaining) recorded answers were not asked for")
        return 0
    }
}
