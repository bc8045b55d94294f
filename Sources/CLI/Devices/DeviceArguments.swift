import FIDOClient
import Foundation
import LinuxHID

/// The DEVICE argument and `--socket PATH` of the diagnostics commands (`probe`, `wink`).
enum DeviceArguments {
    /// The DEVICE argument or --socket, resolved against the FIDO devices present; nil (after
    /// saying why on stderr) when there is nothing to choose from.
    /// `argument`: which positional names the device (`replay TRACE DEVICE`: the second).
    static func select(_ parsed: ParsedArguments, argument: Int = 0) throws(UsageError) -> DeviceSelection? {
        let needsDevices = parsed.value("socket") == nil
        let devices = needsDevices ? HIDDeviceEnumerator().fidoDevices() : []
        let named = parsed.positionals.count > argument ? parsed.positionals[argument] : nil
        switch DeviceSelection.resolve(argument: named, socket: parsed.value("socket"),
                                       fidoDevices: devices) {
        case .success(let selection):
            return selection
        case .failure(let problem):
            if problem.isUsageError { throw UsageError(problem.message) }
            Console.error(problem.message)
            return nil
        }
    }
}
