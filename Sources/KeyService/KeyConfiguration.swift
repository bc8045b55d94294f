import Authenticator
import CTAP
import SystemIO
/// What `latchkey serve` runs: the key (`KeySpecification`) and where it is hosted — where it
/// appears, its store and name, logging, tracing and its control socket. The CLI builds it from
/// the command line (`ServeCommand`); `KeyHost` runs it.
public struct KeyConfiguration: Equatable, Sendable {
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

    /// The key itself: every option `KeyOption.all` declares.
    public var key = KeySpecification()
    public var transport: Transport = .uhid(path: "/dev/uhid")
    public var storeDirectory: String
    public var name = "default"
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
