import FuzzSupport
import Trace

/// `latchkey trace FILE` and `latchkey replay FILE`: the JSON-lines parser, then decoding and
/// rendering of every record, and replay's exchanges, comparisons and recorded answers.
/// A malformed file must be an error naming what is wrong, never a trap; whatever parses must
/// decode and render as text and JSON lines.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    do {
        let contents = try TraceFile.parse(bytes, name: "fuzz.trace")
        for full in [false, true] {
            let events = TraceDecoder.decode(contents, fullByteStrings: full)
            _ = TraceDecoder.text(events, header: contents.header, truncatedLines: contents.truncatedLines)
            _ = TraceDecoder.jsonLines(events)
        }
        // `latchkey replay`: its reading of the same records, its comparisons of recorded answers
        // with each other, and `--as-device`'s answer book asked for every request it holds.
        let exchanges = TraceReplay.exchanges(contents)
        var answers = RecordedAnswers(exchanges)
        for (index, exchange) in exchanges.prefix(64).enumerated() {
            if let recorded = exchange.response, let other = exchanges[(index + 1) % exchanges.count].response {
                _ = TraceReplay.differences(recorded: recorded, replayed: other)
            }
            _ = TraceReplay.credentialID(inMakeCredentialAnswer: exchange.response?.payload ?? [])
            _ = TraceReplay.substituting([exchange.payload: [0x01]], in: exchange.payload)
            _ = answers.answer(command: exchange.command, payload: exchange.payload)
            invariant(!TraceReplay.describe(exchange).isEmpty, "an exchange without a description")
        }
    } catch {
        invariant(!error.description.isEmpty, "an error without a message")
    }
    return 0
}
