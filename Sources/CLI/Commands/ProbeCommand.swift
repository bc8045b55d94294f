import FIDOClient
import Foundation
import LinuxHID

/// `latchkey probe`: talk CTAPHID to a FIDO device — INIT, PING round trips,
/// a 7609-byte echo, WINK, getInfo — and say what it is and whether it works.
/// Exit 0 when every step worked (warnings allowed), 1 otherwise.
/// Every read has a timeout: a silent device is diagnosed, never waited on forever.
public enum ProbeCommand {
    public static let spec = CommandSpec(
        name: "probe",
        abstract: "Check a FIDO device end to end: CTAPHID INIT, PING timings, a 7609-byte echo, WINK, getInfo.",
        positionals: ["device"],
        options: [
            .init("pings", value: "N", help: "How many PING round trips to time (default: 32)."),
            .init("socket", value: "PATH", help: "Probe a key on the socket transport instead of a hidraw device."),
            .init("echo-bytes", value: "N", help: "Size of the echoed PING, 0 to skip it (default: 7609, the largest message)."),
            .init("timeout", value: "MS", help: "How long to wait for each reply, in milliseconds (default: 1000)."),
            .init("json", help: "Print the results as JSON."),
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        let pings = try parsed.integer("pings", default: 32, range: 0...100_000)
        let timeout = try parsed.integer("timeout", default: 1_000, range: 1...600_000)
        let echoBytes = try parsed.integer("echo-bytes", default: ProbeReport.echoLength,
                                    range: 0...ProbeReport.echoLength)
        let json = parsed.flag("json")
        guard let selection = try DeviceArguments.select(parsed) else { return 1 }
        let link: ClientReportTransport
        do {
            link = try selection.open()
        } catch {
            var report = ProbeReport(target: selection.label, transport: selection.transportName)
            report.failures.append(error.description)
            emit(report, json: json)
            return 1
        }
        let client = CTAPHIDClient(link: link, replyTimeoutMilliseconds: Int32(timeout))
        let report = ProbeReport.run(client: client, target: selection.label,
                                     transport: selection.transportName, pings: pings, echoBytes: echoBytes)
        emit(report, json: json)
        return report.succeeded ? 0 : 1
    }

    private static func emit(_ report: ProbeReport, json: Bool) {
        if json {
            Console.out(report.json.rendered)
        } else {
            Console.out(report.text)
        }
    }
}
