import Authenticator
import Exchange
import FIDOClient
import Encoding

/// `--endpoints` of `credentials list`, `show` and `delete`: the sites' passkey endpoints
/// (PasskeyEndpointsClient), asked only when the option is given — network use is opt-in.
extension CredentialsCommand {
    static let endpointsOption = CommandSpec.Option(
        "endpoints", help: "Ask each site for its passkey endpoints (enroll/manage links, PRF use): "
            + "https://RPID/.well-known/passkey-endpoints, HTTPS only, 5 s, cached a day.")

    static func endpointsClient(io: CommandIO) -> PasskeyEndpointsClient {
        PasskeyEndpointsClient(cachePath: PasskeyEndpointsClient.defaultCachePath(environment: io.environment))
    }

    static func endpointsJSON(_ outcome: PasskeyEndpointsClient.Outcome) -> JSONValue {
        switch outcome {
        case let .found(endpoints):
            .object([("enroll", .optional(endpoints.enroll)), ("manage", .optional(endpoints.manage)),
                     ("prfUsageDetails", .optional(endpoints.prfUsageDetails))])
        case let .failed(reason): .object([("error", .string(reason))])
        }
    }

    /// "Enroll: …" lines for text output (the links as the site gave them, made safe to print).
    static func endpointsLines(_ outcome: PasskeyEndpointsClient.Outcome) -> [String] {
        switch outcome {
        case let .found(endpoints) where endpoints.isEmpty: ["none published ({})"]
        case let .found(endpoints):
            [("Enroll", endpoints.enroll), ("Manage", endpoints.manage), ("PRF usage", endpoints.prfUsageDetails)]
                .compactMap { label, link in link.map { "\(label): \(DisplayText.safe($0))" } }
        case let .failed(reason): ["not known: \(DisplayText.safe(reason))"]
        }
    }

    /// The warning before deleting a credential that gave PRF (hmac-secret) outputs: a site may
    /// have encrypted the user's data with it. With `--endpoints`, the site's prfUsageDetails link.
    static func prfWarning(rpID: String, usedPRF: Bool, parsed: ParsedArguments, io: CommandIO) -> String? {
        guard usedPRF else { return nil }
        var warning = "this passkey has given PRF (hmac-secret) outputs: \(DisplayText.safe(rpID)) may have encrypted data "
            + "with it that nothing else opens."
        if parsed.flag("endpoints") {
            if case let .found(endpoints) = endpointsClient(io: io).endpoints(rpID: rpID), let link = endpoints.prfUsageDetails {
                warning += " The site says what depends on it: \(DisplayText.safe(link))"
            } else {
                warning += " The site publishes no prfUsageDetails link."
            }
        } else {
            warning += " (--endpoints asks the site where it says what.)"
        }
        return warning
    }
}
