import FIDOClient
import Foundation
import LinuxHID
import Encoding

/// `latchkey wink`: CTAPHID INIT, then WINK — the device signals the user
/// (a hardware key blinks; a Latchkey key logs "wink"). Tells keys apart.
public enum WinkCommand {
    public static let spec = CommandSpec(
        name: "wink",
        abstract: "Make a FIDO device signal the user (CTAPHID WINK), to tell keys apart.",
        positionals: ["device"],
        options: [
            .init("socket", value: "PATH", help: "Wink a key on the socket transport instead of a hidraw device."),
            .init("timeout", value: "MS", help: "How long to wait for each reply, in milliseconds (default: 1000)."),
            CredentialsCommand.jsonOption,
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        let timeout = try parsed.integer("timeout", default: 1_000,
                                               range: 1...600_000)
        guard let selection = try DeviceArguments.select(parsed) else { return 1 }
        switch wink(selection, timeoutMilliseconds: Int32(timeout)) {
        case .success(let message):
            Console.out(parsed.flag("json") ? JSONValue.object([("winked", .bool(true)), ("message", .string(message))]).rendered : message)
            return 0
        case .failure(let error):
            Console.error(error.message)
            return 1
        }
    }

    public struct Failure: Error, Equatable {
        public var message: String
    }

    /// INIT and WINK on `selection`; the line to print, or why it failed.
    static func wink(_ selection: DeviceSelection, timeoutMilliseconds: Int32) -> Result<String, Failure> {
        let link: ClientReportTransport
        do {
            link = try selection.open()
        } catch {
            return .failure(Failure(message: error.description))
        }
        return wink(client: CTAPHIDClient(link: link, replyTimeoutMilliseconds: timeoutMilliseconds),
                    label: selection.label)
    }

    /// INIT and WINK over any link (tests pass a fake).
    public static func wink(client: CTAPHIDClient, label: String) -> Result<String, Failure> {
        do {
            let response = try client.initialize()
            guard response.supportsWink else {
                return .failure(Failure(message: "\(label) does not support WINK (its INIT capabilities: "
                    + (response.capabilityNames.isEmpty ? "none" : response.capabilityNames.joined(separator: ", ")) + ")"))
            }
            try client.wink()
            return .success("Winked \(label).")
        } catch {
            return .failure(Failure(message: "\(label): \(error)"))
        }
    }
}
