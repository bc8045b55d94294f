import Foundation
import KeyService
import DeviceTools
import SystemIO

/// `latchkey proxy DEVICE`: a uhid device in front of a real FIDO key that forwards and traces
/// every report (HIDProxy), for debugging what a client and a hardware key say to each other.
public enum ProxyCommand {
    public static let spec = CommandSpec(
        name: "proxy",
        abstract: "Put a traced copy of a FIDO hidraw device in front of it (debug a client with a hardware key).",
        positionals: ["device"],
        options: [
            .init("trace", value: "FILE", help: "Write every report both ways to FILE (mode 0600, secrets blanked, as "
                  + "`latchkey serve --trace` does); decode it with `latchkey trace FILE`."),
            .init("live", help: "Print each request and response, decoded, on standard error as it completes."),
            .init("name", value: "NAME", help: "The proxy device's name (default: the real key's, marked as the proxy's)."),
            .init("uhid", value: "PATH", help: "The uhid device (default: /dev/uhid)."),
            .logLevel,
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        guard let device = parsed.positionals.first, parsed.positionals.count == 1 else {
            throw UsageError("give the real key's hidraw node, e.g. /dev/hidraw0 (`latchkey devices` lists them)")
        }
        var options = HIDProxy.Options(devicePath: device)
        options.tracePath = parsed.value("trace")
        if options.tracePath?.isEmpty == true { throw UsageError("invalid --trace '': give a file path") }
        options.live = parsed.flag("live")
        options.name = parsed.value("name")
        if let uhid = parsed.value("uhid") { options.uhidPath = uhid }
        let level = try parsed.logLevel() ?? .info
        let logger = Logger(level: level)
        do {
            return try HIDProxy(options: options, logger: logger).runUntilSignalled()
        } catch {
            logger.error(error.description)
            return 1
        }
    }
}
