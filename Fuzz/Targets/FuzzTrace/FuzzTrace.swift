import FuzzSupport
import Trace

/// `latchkey trace FILE`: the JSON-lines parser, then decoding and rendering of every record.
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
    } catch {
        invariant(!error.description.isEmpty, "an error without a message")
    }
    return 0
}
