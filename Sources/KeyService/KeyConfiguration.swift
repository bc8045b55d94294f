import Authenticator
import CTAP
import SystemIO
/// What `latchkey serve` runs: where the key appears, its store and name, how presence is
/// given, logging and tracing. The CLI builds it from the command line (`ServeCommand`);
/// `KeyHost` runs it.
public struct KeyConfiguration: Equatable, Sendable {
    /// Where the key makes and keeps its credentials' private keys.
    public enum CredentialKeys: String, Equatable, Sendable {
        /// In this process, sealed in the credential ID or the store (every algorithm).
        case software
        /// Inside this machine's TPM 2.0 (TSS2_TCTI, else /dev/tpmrm0): ES256 only; the store
        /// keeps the TPM's blob, which signs nothing on another TPM.
        case tpm
    }

    public enum Transport: Equatable, Sendable {
        case uhid(path: String)
        case socket(path: String)

        /// "uhid" or "socket:PATH", as the trace header and `--transport` spell it.
        public var name: String {
            switch self {
            case .uhid: "uhid"
            case let .socket(path): "socket:\(path)"
            }
        }
    }

    /// How a touch is given (`--presence`).
    public enum PresenceMode: String, CaseIterable, Equatable, Sendable {
        /// Approve everything (test rigs only).
        case auto
        /// Refuse everything that needs a touch.
        case deny
        /// Ask on the controlling terminal (the default).
        case prompt
        /// A desktop notification with Approve and Deny.
        case notify
        /// Wait for `latchkey approve` / `latchkey deny` on the control socket.
        case control
    }

    /// Built-in user verification (`--uv`); none by default.
    public enum VerificationMode: String, CaseIterable, Equatable, Sendable {
        /// Every verification succeeds (test rigs only).
        case auto
        /// Every verification fails (the retry and lockout paths).
        case deny
        /// The desktop's polkit agent asks for the user's password (action org.latchkey.verify-user).
        case polkit
        /// A finger on the reader, through fprintd (`fprintd-verify`).
        case fprintd
    }

    public var transport: Transport = .uhid(path: "/dev/uhid")
    public var storeDirectory: String
    public var name = "default"
    public var presence: PresenceMode = .prompt
    /// `--uv`: nil, the key has no built-in user verification (getInfo has no `uv`).
    public var userVerification: VerificationMode?
    /// `--attestation`: the shared batch certificate (default) or the store's own.
    public var attestation: AuthenticatorConfiguration.Attestation = .batch
    /// `--algorithms`: the credential algorithms the key makes, in its order of preference.
    public var algorithms = COSEAlgorithm.defaultCredentialAlgorithms
    /// `--enterprise-rp`: the RP IDs given a vendor-facilitated enterprise attestation.
    public var enterpriseRPIDs: [String] = []
    /// `--counter zero`: the credentials made are counterless (exportable in CXF).
    public var countersZero = false
    /// `--keys`: where new credential keys are made and kept.
    public var keys: CredentialKeys = .software
    /// `--account-choice`: with several accounts at an RP, whether a key whose presence answers
    /// for its user picks one (`recent`) or lets the platform ask (`client`).
    public var accountChoice: AccountChooser.Policy = .recent
    public var logLevel: Logger.Level = .info
    /// `--trace FILE`.
    public var tracePath: String?
    /// The control socket (`--presence control` only): `--control PATH` or the default.
    public var controlPath: String?
    /// Whether `controlPath` is the default one, whose directory the key creates private.
    public var controlPathIsDefault = false

    public init(storeDirectory: String) {
        self.storeDirectory = storeDirectory
    }
}
