import FIDOClient

/// Connecting to a device for a CLI command, and the PIN-protected credential management on it.
enum DeviceSession {
    static func connect(_ selection: DeviceSelection, io: CommandIO) throws(CLIError) -> RemoteAuthenticator {
        do throws(DeviceError) {
            return RemoteAuthenticator(link: try io.openDevice(selection))
        } catch {
            throw error.cliError
        }
    }

    /// Checks that the key can manage credentials and has a PIN, then asks for the PIN (file,
    /// environment or terminal) and gets a token with the `cm` permission.
    static func credentialManager(_ remote: RemoteAuthenticator, parsed: ParsedArguments,
                                  io: CommandIO) throws(CLIError) -> RemoteCredentialManager {
        do throws(DeviceError) {
            let info = try remote.info()
            guard info.options["credMgmt"] == true || info.options["credentialMgmtPreview"] == true else {
                throw DeviceError.unsupported("\(remote.label) does not support credential management "
                    + "(getInfo has neither credMgmt nor credentialMgmtPreview)")
            }
            guard info.options["clientPin"] == true else {
                throw DeviceError.failed("\(remote.label) has no PIN, and credential management needs one: "
                    + "set it with `latchkey pin set` and the same --device/--socket")
            }
        } catch {
            throw error.cliError
        }
        let pin = try PINInput.current(file: parsed.value("pin-file"), io: io, label: remote.label)
        do throws(DeviceError) {
            return try remote.credentialManagement(pin: pin)
        } catch {
            throw error.cliError
        }
    }

    /// Every credential on the key (or of one RP), with RP names.
    static func summaries(_ manager: RemoteCredentialManager, rpID: String?) throws(CLIError) -> [CredentialSummary] {
        do throws(DeviceError) {
            var summaries: [CredentialSummary] = []
            for party in try manager.relyingParties() where rpID == nil || party.id == rpID {
                summaries += try manager.credentials(rpID: party.id).map { CredentialSummary($0, rpName: party.name) }
            }
            return summaries
        } catch {
            throw error.cliError
        }
    }
}
