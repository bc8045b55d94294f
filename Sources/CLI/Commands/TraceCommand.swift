import Foundation
import Trace

/// `latchkey trace FILE [--json] [--full]`: decode a trace written by `latchkey serve --trace FILE`.
public enum TraceCommand {
    public static let spec = CommandSpec(
        name: "trace",
        abstract: "Decode a trace written by `latchkey serve --trace FILE` (CTAPHID, CTAP2, U2F, CBOR).",
        positionals: ["file"], minimumPositionals: 1,
        options: [
            .init("json", help: "Print JSON Lines: one decoded message per line."),
            .init("full", help: "Print long byte strings in full (text output shortens them)."),
        ])

    /// Runs the command; returns the exit status.
    public static func run(_ parsed: ParsedArguments) -> Int32 {
        let path = parsed.positionals[0]
        let contents: TraceFile.Contents
        do {
            contents = try TraceFile.read(path: path)
        } catch {
            Console.error(error.description)
            return 1
        }
        let json = parsed.flag("json")
        let events = TraceDecoder.decode(contents, fullByteStrings: parsed.flag("full") || json)
        let output = json ? TraceDecoder.jsonLines(events)
            : TraceDecoder.text(events, header: contents.header, truncatedLines: contents.truncatedLines)
        if !output.isEmpty { Console.out(output) }
        return 0
    }
}
