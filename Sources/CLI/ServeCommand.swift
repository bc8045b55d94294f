import Authenticator
import CredentialStore
import CTAP
import Foundation
import KeyService
import Presence
import SystemIO

/// `latchkey serve`: run a key until SIGINT/SIGTERM; SIGHUP is a power cycle.
public enum ServeCommand {
    public static let spec = CommandSpec(
        name: "serve",
        abstract: "Run a FIDO2 security key (uhid by default, or a socket for rigs without /dev/uhid).",
        options: [
            .init("transport", value: "uhid|socket:PATH", help: "Where the key appears (default: uhid)."),
            .init("store", value: "DIR", help: "Store directory (default: $XDG_DATA_HOME/latchkey/<name>)."),
            .init("name", value: "NAME", help: "Key name: store subdirectory and device name (default: default)."),
            .init("presence", value: "auto|deny|prompt|notify|control",
                  help: "How a touch is given: prompt (ask on the terminal; the default), notify (a desktop "
                      + "notification with Approve/Deny), control (`latchkey approve` / `latchkey deny`), "
                      + "auto (approve all: test rigs only), deny (refuse all)."),
            .init("uv", value: "polkit|fprintd|auto|deny",
                  help: "Built-in user verification, as a fingerprint sensor gives a key (default: none): polkit (your "
                      + "password in the desktop's polkit dialog), fprintd (a finger on the reader), auto (every "
                      + "verification succeeds: test rigs, e.g. headless browsers creating passkeys), deny (every "
                      + "attempt fails: retry and lockout tests)."),
            .init("control", value: "PATH", help: "The control socket of --presence control, and of notify when the "
                  + "notification server shows no buttons (default: "
                  + "$XDG_RUNTIME_DIR/latchkey/<name>.control, or ~/.cache/latchkey/run-<host>/<name>.control)."),
            .init("trace", value: "FILE", help: "Record every CTAPHID report in and out to FILE (mode 0600, secrets blanked); "
                  + "decode it with `latchkey trace FILE`."),
            .init("attestation", value: "batch|installation",
                  help: "Attestation certificate: batch (the one every Latchkey shares; the default) or installation "
                      + "(this store's own, remade by a reset: for rigs testing attestation chains; it identifies the store)."),
            .init("algorithms", value: "ALG,ALG,…",
                  help: "The credential algorithms the key makes, in its order of preference (default: "
                      + COSEAlgorithm.defaultCredentialAlgorithms.map(\.name).joined(separator: ",") + "): names or COSE numbers, "
                      + "e.g. ES256,EdDSA to emulate a YubiKey 5 before firmware 5.7. RS256 and PS256 only when named: "
                      + "no credential ID carries an RSA key, so every RSA credential takes a slot in the store. "
                      + "ML-DSA-44, ML-DSA-65 and ML-DSA-87 (post-quantum, FIPS 204) only when named: no browser takes "
                      + "them yet."),
            .init("keys", value: "software|tpm",
                  help: "Where credential keys are made and kept: software (the default) or tpm (inside this machine's "
                      + "TPM 2.0, reached as the store's seal reaches it: TSS2_TCTI, else /dev/tpmrm0; ES256 only; each "
                      + "credential's key signs only in this TPM, so a copied store or backup signs nothing elsewhere). "
                      + "Credentials made before keep their keys where they are."),
            .init("enterprise-rp", value: "RPID,RPID,…",
                  help: "RP IDs given a vendor-facilitated enterprise attestation (the store's own certificate chain, "
                      + "which identifies this installation) once it is enabled with authenticatorConfig "
                      + "enableEnterpriseAttestation (e.g. python-fido2's Config.enable_enterprise_attestation)."),
            .init("counter", value: "counting|zero",
                  help: "The signature counter of the credentials made: counting (a counter that only goes up, as a "
                      + "hardware key's; the default) or zero (always 0, as a synced passkey's: such credentials can "
                      + "leave in `latchkey export`). Credentials made before keep theirs."),
            .init("account-choice", value: "recent|client",
                  help: "With --presence auto, when a site has several passkeys on the key and asks for any: recent (the key "
                      + "picks the one used last, as a key with a display lets its user pick, so headless browsers show no "
                      + "account chooser; the default) or client (the key returns them all and the browser asks)."),
            .init("passphrase-file", value: "FILE", help: "The passphrase of a store sealed with one (`latchkey store seal`): "
                  + "one line in a file only you can read (default: LATCHKEY_PASSPHRASE_FILE, the systemd credential "
                  + "latchkey-passphrase, or the terminal)."),
            .logLevel,
        ])

    /// What `latchkey serve` runs (the key's configuration, KeyService).
    public typealias Options = KeyConfiguration
    public typealias Transport = KeyConfiguration.Transport
    public typealias PresenceMode = KeyConfiguration.PresenceMode

    public static func options(from parsed: ParsedArguments,
                               environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Options {
        let name = parsed.value("name") ?? "default"
        guard StoreLocation.isValidName(name) else {
            throw UsageError("invalid --name '\(name)': use letters, digits, '-', '_' or '.'")
        }
        var options = Options(storeDirectory: StoreLocation.directory(explicit: parsed.value("store"), name: name,
                                                                      environment: environment))
        options.name = name
        if let transport = parsed.value("transport") {
            if transport == "uhid" {
                options.transport = .uhid(path: environment["LATCHKEY_UHID_PATH"] ?? "/dev/uhid")
            } else if transport.hasPrefix("socket:"), transport.count > 7 {
                options.transport = .socket(path: String(transport.dropFirst(7)))
            } else {
                throw UsageError("invalid --transport '\(transport)': use uhid or socket:PATH")
            }
        }
        if let presence = parsed.value("presence") {
            guard let mode = PresenceMode(rawValue: presence) else {
                throw UsageError("invalid --presence '\(presence)': use auto, deny, prompt, notify or control")
            }
            options.presence = mode
        }
        if let uv = parsed.value("uv") {
            guard let mode = KeyConfiguration.VerificationMode(rawValue: uv) else {
                throw UsageError("invalid --uv '\(uv)': use polkit, fprintd, auto or deny")
            }
            options.userVerification = mode
        }
        if let control = parsed.value("control") {
            // With notify: where to answer when the notification server shows no buttons (KeyHost).
            guard options.presence == .control || options.presence == .notify else {
                throw UsageError("--control is for --presence control (or notify, for a server without buttons)")
            }
            guard !control.isEmpty else { throw UsageError("invalid --control '': give a socket path") }
            options.controlPath = control
        } else if options.presence == .control {
            options.controlPath = ControlSocket.defaultPath(name: name, environment: environment)
            options.controlPathIsDefault = true
        }
        if let attestation = parsed.value("attestation") {
            guard let mode = AuthenticatorConfiguration.Attestation(rawValue: attestation) else {
                throw UsageError("invalid --attestation '\(attestation)': use batch or installation")
            }
            options.attestation = mode
        }
        if let list = parsed.value("algorithms") {
            do {
                options.algorithms = try COSEAlgorithm.credentialAlgorithms(named: list.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
            } catch {
                throw UsageError("invalid --algorithms '\(list)': \(error)")
            }
        }
        if let keys = parsed.value("keys") {
            guard let location = KeyConfiguration.CredentialKeys(rawValue: keys) else {
                throw UsageError("invalid --keys '\(keys)': use software or tpm")
            }
            options.keys = location
            // A TPM makes P-256 keys: naming other algorithms as well would promise what it cannot make.
            if location == .tpm, parsed.value("algorithms") != nil, options.algorithms != [.es256] {
                throw UsageError("--keys tpm makes ES256 keys only: drop --algorithms or give --algorithms ES256")
            }
            if location == .tpm { options.algorithms = [.es256] }
        }
        if let list = parsed.value("enterprise-rp") {
            let rpIDs = list.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            if let bad = rpIDs.first(where: { $0.isEmpty || $0.contains(where: { $0.isWhitespace || $0.isUppercase }) }) {
                throw UsageError("invalid --enterprise-rp '\(list)': '\(bad)' is not an RP ID (a lowercase domain, e.g. example.com)")
            }
            options.enterpriseRPIDs = rpIDs
        }
        if let counter = parsed.value("counter") {
            switch counter {
            case "counting": options.countersZero = false
            case "zero": options.countersZero = true
            default: throw UsageError("invalid --counter '\(counter)': use counting or zero")
            }
        }
        if let choice = parsed.value("account-choice") {
            guard let policy = AccountChooser.Policy(rawValue: choice) else {
                throw UsageError("invalid --account-choice '\(choice)': use recent or client")
            }
            options.accountChoice = policy
        }
        if let file = parsed.value("passphrase-file") {
            guard !file.isEmpty else { throw UsageError("invalid --passphrase-file '': give a file path") }
            PassphraseInput.explicitFile.withLock { $0 = file }
        }
        if let trace = parsed.value("trace") {
            guard !trace.isEmpty else { throw UsageError("invalid --trace '': give a file path") }
            options.tracePath = trace
        }
        if let level = try parsed.logLevel() { options.logLevel = level }
        return options
    }

    /// Run the key; returns the process exit status.
    /// Runs the key; a store this start creates is sealed from its first byte when
    /// LATCHKEY_SEAL says how (NewStoreSeal).
    public static func run(_ options: Options) throws(UsageError) -> Int32 {
        try CLIError.run(.standard) { () throws(CLIError) -> Int32 in
            let seal = try NewStoreSeal.method(for: options.storeDirectory, environment: ProcessInfo.processInfo.environment,
                                               terminal: ControllingTerminal.open(), warn: { Console.error($0) })
            return KeyHost.run(options, sealNewStore: seal)
        }
    }
}
