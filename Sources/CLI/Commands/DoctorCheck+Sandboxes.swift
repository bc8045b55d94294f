/// The doctor's checks for sandboxed browsers and for a doctor run inside a sandbox
/// (SandboxedBrowsers.swift says what each sandbox lets through). Warnings, never failures: a
/// browser the user does not use with keys needs nothing.
extension DoctorCheck {
    static let nativeBrowsers = "a browser from Debian's packages (sudo apt install chromium, or firefox-esr)"

    static func sandboxedBrowsers(_ facts: DoctorFacts) -> [DoctorCheck] {
        guard !facts.sandboxedBrowsers.isEmpty else {
            return [DoctorCheck(id: "sandboxed-browsers", title: "sandboxed browsers", status: .ok,
                                detail: "no Flatpak or Snap browser installed")]
        }
        return facts.sandboxedBrowsers.map(browser)
    }

    static func browser(_ browser: SandboxedBrowser) -> DoctorCheck {
        let id = "browser-\(browser.packaging.rawValue)-\(browser.identifier)"
        switch browser.access {
        case .allDevices:
            return DoctorCheck(id: id, title: "Flatpak \(browser.name)", status: .ok,
                               detail: "\(browser.identifier) (\(browser.installation ?? "?") installation) may open security keys "
                                   + "(device permission all)")
        case let .noDevices(effective, decidedBy):
            let devices = effective.isEmpty ? "none" : effective.joined(separator: ";")
            return DoctorCheck(id: id, title: "Flatpak \(browser.name)", status: .warn,
                               detail: "\(browser.identifier) (\(browser.installation ?? "?") installation) cannot open security keys: "
                                   + "its sandbox lacks the device permission all (devices: \(devices); decided by \(decidedBy))",
                               fix: "flatpak override --user --device=all \(browser.identifier), then restart \(browser.name)")
        case .u2fDevicesConnected:
            return DoctorCheck(id: id, title: "Snap \(browser.name)", status: .warn,
                               detail: "the \(browser.identifier) snap has u2f-devices connected: hardware keys on snapd's list work, "
                                   + "but snapd lets a snap open only hidraw nodes it tagged by USB vendor/product ID, and a "
                                   + "Latchkey key is a uhid device with no USB parent, so this browser never sees it",
                               fix: "use Latchkey from \(nativeBrowsers), or a Flatpak browser with --device=all")
        case .u2fDevicesNotConnected:
            return DoctorCheck(id: id, title: "Snap \(browser.name)", status: .warn,
                               detail: "the \(browser.identifier) snap cannot open security keys: its u2f-devices interface is not "
                                   + "connected (and even connected, snapd admits only the hardware keys on its list, never a "
                                   + "Latchkey uhid key)",
                               fix: "sudo snap connect \(browser.identifier):u2f-devices (hardware keys); for Latchkey use "
                                   + "\(nativeBrowsers)")
        }
    }

    /// Inside a Flatpak, a snap or a container the host's keys are visible only if they were
    /// let in: with none visible, say where this runs and how to let them in.
    static func runningSandbox(_ facts: DoctorFacts) -> DoctorCheck? {
        guard let sandbox = facts.runningSandbox else { return nil }
        let title = "sandbox"
        let (place, fix): (String, String)
        switch sandbox {
        case let .flatpak(appID):
            place = "the Flatpak sandbox of \(appID)"
            fix = "on the host: flatpak override --user --device=all \(appID), then restart it"
        case let .snap(name):
            place = "the \(name) snap"
            fix = "on the host: sudo snap connect \(name):u2f-devices (hardware keys on snapd's list only; a Latchkey uhid "
                + "key cannot reach a snap)"
        case let .container(kind):
            place = "a \(kind) container"
            fix = "start the container with the key's node, e.g. docker run --device /dev/hidrawN (`latchkey devices` on the "
                + "host names N), or reach a Latchkey key over its socket transport by mounting the socket"
        }
        guard facts.fidoDeviceCount == 0 else {
            return DoctorCheck(id: "running-sandbox", title: title, status: .ok,
                               detail: "running inside \(place); \(facts.fidoDeviceCount) FIDO device\(facts.fidoDeviceCount == 1 ? "" : "s") visible here")
        }
        return DoctorCheck(id: "running-sandbox", title: title, status: .warn,
                           detail: "running inside \(place), where no FIDO device is visible: keys plugged into or running on "
                               + "the host are not seen here until they are let in", fix: fix)
    }
}
