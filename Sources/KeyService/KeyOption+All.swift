import Authenticator
import CTAP

extension KeyOption {
    /// Every key option, in the order help lists them and values are applied.
    public static let all: [KeyOption] = [
        presence, userVerification, attestation, algorithms, credentialKeys, enterpriseRPIDs, counter, accountChoice,
        protocolVersion, hasResidentKey, keepsNonResidentCredentials, hasUserVerification, isUserVerified, automaticUserVerification, isUserConsenting,
        automaticPresenceSimulation, seed, extensions, defaultBackupEligibility, defaultBackupState,
    ]

    public static let presence = choice(
        "presence", flag: "presence", KeySpecification.PresenceMode.self, default: "prompt",
        help: "How a touch is given: prompt (ask on the terminal; the default), notify (a desktop notification with "
            + "Approve/Deny), control (`latchkey approve` / `latchkey deny`), auto (approve all: test rigs only), deny "
            + "(refuse all).") { $0.presence = $1 }

    public static let userVerification = choice(
        "userVerification", flag: "uv", KeySpecification.VerificationMode.self, default: "none",
        help: "Built-in user verification, as a fingerprint sensor gives a key (default: none): polkit (your password in "
            + "the desktop's polkit dialog), fprintd (a finger on the reader), auto (every verification succeeds: test "
            + "rigs, e.g. headless browsers creating passkeys), deny (every attempt fails: retry and lockout tests).") {
        $0.userVerification = $1
    }

    public static let attestation = choice(
        "attestation", flag: "attestation", parameter: "attestation", AuthenticatorConfiguration.Attestation.self,
        default: "batch",
        help: "Attestation certificate: batch (the one every Latchkey shares; the default) or installation (this "
            + "store's own, remade by a reset: for rigs testing attestation chains; it identifies the store).") {
        $0.attestation = $1
    }

    public static let algorithms = KeyOption(
        "algorithms", flag: "algorithms", parameter: "algorithms", shape: .list, valueName: "ALG,ALG,…",
        default: COSEAlgorithm.defaultCredentialAlgorithms.map(\.name).joined(separator: ","),
        help: "The credential algorithms the key makes, in its order of preference (default: "
            + COSEAlgorithm.defaultCredentialAlgorithms.map(\.name).joined(separator: ",") + "): names or COSE numbers, "
            + "e.g. ES256,EdDSA to emulate a YubiKey 5 before firmware 5.7. RS256 and PS256 only when named: no "
            + "credential ID carries an RSA key, so every RSA credential takes a slot in the store. ML-DSA-44, ML-DSA-65 "
            + "and ML-DSA-87 (post-quantum, FIPS 204) only when named: no browser takes them yet."
    ) { specification, value throws(KeyOptionRefusal) in
        do {
            specification.algorithms = try COSEAlgorithm.credentialAlgorithms(named: try value.list())
        } catch let error as KeyOptionRefusal {
            throw error
        } catch {
            throw KeyOptionRefusal("\(error)")
        }
    }

    public static let credentialKeys = choice(
        "credentialKeys", flag: "keys", KeySpecification.CredentialKeys.self, default: "software",
        help: "Where credential keys are made and kept: software (the default) or tpm (inside this machine's TPM 2.0, "
            + "reached as the store's seal reaches it: TSS2_TCTI, else /dev/tpmrm0; ES256 only; each credential's key "
            + "signs only in this TPM, so a copied store or backup signs nothing elsewhere). Credentials made before "
            + "keep their keys where they are.") { $0.credentialKeys = $1 }

    public static let enterpriseRPIDs = KeyOption(
        "enterpriseRPIDs", flag: "enterprise-rp", shape: .list, valueName: "RPID,RPID,…", default: "none",
        help: "RP IDs given a vendor-facilitated enterprise attestation (the store's own certificate chain, which "
            + "identifies this installation) once it is enabled with authenticatorConfig enableEnterpriseAttestation "
            + "(e.g. python-fido2's Config.enable_enterprise_attestation)."
    ) { specification, value throws(KeyOptionRefusal) in
        let rpIDs = try value.list()
        if let bad = rpIDs.first(where: { $0.isEmpty || $0.contains(where: { $0.isWhitespace || $0.isUppercase }) }) {
            throw KeyOptionRefusal("'\(bad)' is not an RP ID (a lowercase domain, e.g. example.com)")
        }
        specification.enterpriseRPIDs = rpIDs
    }

    public static let counter = choice(
        "counter", flag: "counter", KeySpecification.CounterMode.self, default: "counting",
        help: "The signature counter of the credentials made: counting (a counter that only goes up, as a hardware "
            + "key's; the default) or zero (always 0, as a synced passkey's: such credentials can leave in `latchkey "
            + "export`). Credentials made before keep theirs.") { $0.counter = $1 }

    public static let accountChoice = choice(
        "accountChoice", flag: "account-choice", parameter: "accountChoice", AccountChooser.Policy.self, default: "recent",
        help: "With presence given automatically, when a site has several passkeys on the key and asks for any: recent "
            + "(the key picks the one used last, as a key with a display lets its user pick, so headless browsers show "
            + "no account chooser; the default) or client (the key returns them all and the browser asks).") {
        $0.accountChoice = $1
    }

    public static let protocolVersion = choice(
        "protocolVersion", parameter: "protocol", KeySpecification.ProtocolVersion.self, default: "ctap2_1",
        help: "ctap2_1 (CTAP 2.1 and later, with U2F), ctap2 (a CTAP 2.0 key's persona) or u2f (a CTAP1-only key).") {
        $0.protocolVersion = $1
    }

    public static let hasResidentKey = boolean(
        "hasResidentKey", parameter: "hasResidentKey", default: true,
        help: "false: a key that stores no discoverable credentials (getInfo rk false).") { $0.hasResidentKey = $1 }

    public static let keepsNonResidentCredentials = boolean(
        "keepsNonResidentCredentials", parameter: "keepsNonResidentCredentials", default: false,
        help: "true: the non-resident credentials the key makes are kept in its store (each takes a slot) instead of "
            + "wrapped in their IDs, so getCredentials lists them, as WebDriver's virtual authenticators do.") {
        $0.keepsNonResidentCredentials = $1
    }

    public static let hasUserVerification = boolean(
        "hasUserVerification", parameter: "hasUserVerification", default: false,
        help: "Built-in user verification (getInfo uv), answered by isUserVerified.") { $0.hasUserVerification = $1 }

    public static let isUserVerified = boolean(
        "isUserVerified", parameter: "isUserVerified", default: false,
        help: "Whether a built-in verification succeeds (false: a failed attempt; uvRetries count down).") {
        $0.isUserVerified = $1
    }

    public static let automaticUserVerification = boolean(
        "automaticUserVerification", parameter: "automaticUserVerification", default: true,
        help: "false: each verification waits for answerUserVerification (only with hasUserVerification).") {
        $0.automaticUserVerification = $1
    }

    public static let isUserConsenting = boolean(
        "isUserConsenting", parameter: "isUserConsenting", default: true,
        help: "The answer to a presence check while automaticPresenceSimulation is on.") { $0.isUserConsenting = $1 }

    public static let automaticPresenceSimulation = boolean(
        "automaticPresenceSimulation", parameter: "automaticPresenceSimulation", default: true,
        help: "false: each presence check waits for answerPresence.") { $0.automaticPresenceSimulation = $1 }

    public static let seed = KeyOption(
        "seed", parameter: "seed", shape: .text, default: "none",
        help: "Reproducible keys for fixtures (1 to 256 bytes of text; a fresh store only; no RSA)."
    ) { specification, value throws(KeyOptionRefusal) in
        let seed = try value.text()
        guard !seed.isEmpty, seed.utf8.count <= 256 else { throw KeyOptionRefusal("give 1 to 256 bytes of text") }
        specification.seed = seed
    }

    public static let extensions = KeyOption(
        "extensions", parameter: "extensions", shape: .list, default: "all",
        help: "The CTAP extensions the key offers, by WebAuthn's or CTAP's names."
    ) { specification, value throws(KeyOptionRefusal) in
        var set: ExtensionSet = []
        for name in try value.list() {
            switch name {
            case "credProtect": set.insert(.credProtect)
            case "credBlob": set.insert(.credBlob)
            case "largeBlob", "largeBlobKey": set.insert(.largeBlobKey)
            case "prf", "hmac-secret", "hmacCreateSecret": set.insert(.hmacSecret)
            case "minPinLength": set.insert(.minPinLength)
            case "payment", "thirdPartyPayment": set.insert(.thirdPartyPayment)
            case "sign", "previewSign": set.insert(.previewSign)
            case "credProps": break   // the client's alone: it needs nothing of the key
            default:
                throw KeyOptionRefusal("unknown extension '\(name)' (known: credProtect, credBlob, largeBlob, prf or "
                                       + "hmac-secret, minPinLength, payment or thirdPartyPayment, sign or previewSign, credProps)")
            }
        }
        specification.extensions = set
    }

    public static let defaultBackupEligibility = boolean(
        "defaultBackupEligibility", parameter: "defaultBackupEligibility", default: false,
        help: "The BE flag of the credentials the key makes.") { $0.defaultBackupEligibility = $1 }

    public static let defaultBackupState = boolean(
        "defaultBackupState", parameter: "defaultBackupState", default: false,
        help: "The BS flag of the credentials the key makes.") { $0.defaultBackupState = $1 }
}

extension KeySpecification {
    /// The key `values` give, starting from `base`: each value checked by its declaration, then
    /// the combination by the rules below; a refusal names the options in `dialect`.
    public static func make(_ values: [(option: KeyOption, value: KeyOptionValue)], dialect: KeyOptionDialect,
                            base: KeySpecification = KeySpecification()) throws(KeyOptionError) -> KeySpecification {
        var specification = base
        var given: [String: KeyOptionValue] = [:]
        for (option, value) in values {
            do {
                try option.apply(&specification, value)
            } catch {
                throw KeyOptionError(message: dialect.message("invalid \(dialect.name(option)) \(dialect.render(value)): \(error.reason)"))
            }
            given[option.id] = value
        }
        try specification.checkCombination(given: given, dialect: dialect)
        return specification
    }

    /// The rules between options, worded once.
    private mutating func checkCombination(given: [String: KeyOptionValue], dialect: KeyOptionDialect) throws(KeyOptionError) {
        func name(_ option: KeyOption) -> String { dialect.name(option) }
        func refuse(_ message: String) -> KeyOptionError { KeyOptionError(message: dialect.message(message)) }
        // A TPM makes P-256 keys: naming other algorithms as well would promise what it cannot make.
        if credentialKeys == .tpm {
            if given[KeyOption.algorithms.id] != nil, algorithms != [.es256] {
                throw refuse("\(name(.credentialKeys)) tpm makes ES256 keys only: drop \(name(.algorithms)) or give "
                             + "\(name(.algorithms)) ES256")
            }
            algorithms = [.es256]
        }
        // A seeded key derives every key from its seed; RSA primes cannot be drawn that way.
        if seed != nil, given[KeyOption.algorithms.id] != nil, let rsa = algorithms.first(where: { $0.rsaPadding != nil }) {
            throw refuse("\(name(.algorithms)): \(rsa.name) keys cannot be derived from \(name(.seed)) (RSA primes are searched for)")
        }
        if isU2F {
            if given[KeyOption.hasResidentKey.id] == .boolean(true) {
                throw refuse("a u2f key has no resident credentials (\(name(.hasResidentKey)))")
            }
            if hasUserVerification || userVerification != nil {
                let option: KeyOption = given[KeyOption.hasUserVerification.id] != nil ? .hasUserVerification : .userVerification
                throw refuse("a u2f key has no user verification (\(name(option)))")
            }
            if let named = given[KeyOption.extensions.id], named != .list([]) {
                throw refuse("a u2f key has no extensions (\(name(.extensions)) must be empty)")
            }
            if defaultBackupEligibility || defaultBackupState {
                throw refuse("a u2f key has no backup flags (\(name(.defaultBackupEligibility)), \(name(.defaultBackupState))): "
                             + "U2F signs no authData flags but UP")
            }
            hasResidentKey = false
        }
        if given[KeyOption.automaticUserVerification.id] != nil, !hasUserVerification {
            throw refuse("\(name(.automaticUserVerification)) needs \(name(.hasUserVerification)) true")
        }
    }
}
