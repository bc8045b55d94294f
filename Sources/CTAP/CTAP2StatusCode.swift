import CBOR

/// CTAP2 status codes (CTAP 2.1 §8.2), the first byte of every CTAP2 response.
public enum CTAP2StatusCode: UInt8, Error, Sendable, CaseIterable {
    case success = 0x00
    case invalidCommand = 0x01
    case invalidParameter = 0x02
    case invalidLength = 0x03
    case invalidSequence = 0x04
    case timeout = 0x05
    case channelBusy = 0x06
    case lockRequired = 0x0A
    case invalidChannel = 0x0B
    case cborUnexpectedType = 0x11
    case invalidCBOR = 0x12
    case missingParameter = 0x14
    case limitExceeded = 0x15
    case fpDatabaseFull = 0x17
    case largeBlobStorageFull = 0x18
    case credentialExcluded = 0x19
    case processing = 0x21
    case invalidCredential = 0x22
    case userActionPending = 0x23
    case operationPending = 0x24
    case noOperations = 0x25
    case unsupportedAlgorithm = 0x26
    case operationDenied = 0x27
    case keyStoreFull = 0x28
    case unsupportedOption = 0x2B
    case invalidOption = 0x2C
    case keepaliveCancel = 0x2D
    case noCredentials = 0x2E
    case userActionTimeout = 0x2F
    case notAllowed = 0x30
    case pinInvalid = 0x31
    case pinBlocked = 0x32
    case pinAuthInvalid = 0x33
    case pinAuthBlocked = 0x34
    case pinNotSet = 0x35
    case puatRequired = 0x36
    case pinPolicyViolation = 0x37
    case requestTooLarge = 0x39
    case actionTimeout = 0x3A
    case upRequired = 0x3B
    case uvBlocked = 0x3C
    case integrityFailure = 0x3D
    case invalidSubcommand = 0x3E
    case uvInvalid = 0x3F
    case unauthorizedPermission = 0x40
    case other = 0x7F

    /// The spec name (CTAP1_ERR_… / CTAP2_ERR_…), for logs and traces.
    public var specName: String {
        switch self {
        case .success: "CTAP2_OK"
        case .invalidCommand: "CTAP1_ERR_INVALID_COMMAND"
        case .invalidParameter: "CTAP1_ERR_INVALID_PARAMETER"
        case .invalidLength: "CTAP1_ERR_INVALID_LENGTH"
        case .invalidSequence: "CTAP1_ERR_INVALID_SEQ"
        case .timeout: "CTAP1_ERR_TIMEOUT"
        case .channelBusy: "CTAP1_ERR_CHANNEL_BUSY"
        case .lockRequired: "CTAP1_ERR_LOCK_REQUIRED"
        case .invalidChannel: "CTAP1_ERR_INVALID_CHANNEL"
        case .cborUnexpectedType: "CTAP2_ERR_CBOR_UNEXPECTED_TYPE"
        case .invalidCBOR: "CTAP2_ERR_INVALID_CBOR"
        case .missingParameter: "CTAP2_ERR_MISSING_PARAMETER"
        case .limitExceeded: "CTAP2_ERR_LIMIT_EXCEEDED"
        case .fpDatabaseFull: "CTAP2_ERR_FP_DATABASE_FULL"
        case .largeBlobStorageFull: "CTAP2_ERR_LARGE_BLOB_STORAGE_FULL"
        case .credentialExcluded: "CTAP2_ERR_CREDENTIAL_EXCLUDED"
        case .processing: "CTAP2_ERR_PROCESSING"
        case .invalidCredential: "CTAP2_ERR_INVALID_CREDENTIAL"
        case .userActionPending: "CTAP2_ERR_USER_ACTION_PENDING"
        case .operationPending: "CTAP2_ERR_OPERATION_PENDING"
        case .noOperations: "CTAP2_ERR_NO_OPERATIONS"
        case .unsupportedAlgorithm: "CTAP2_ERR_UNSUPPORTED_ALGORITHM"
        case .operationDenied: "CTAP2_ERR_OPERATION_DENIED"
        case .keyStoreFull: "CTAP2_ERR_KEY_STORE_FULL"
        case .unsupportedOption: "CTAP2_ERR_UNSUPPORTED_OPTION"
        case .invalidOption: "CTAP2_ERR_INVALID_OPTION"
        case .keepaliveCancel: "CTAP2_ERR_KEEPALIVE_CANCEL"
        case .noCredentials: "CTAP2_ERR_NO_CREDENTIALS"
        case .userActionTimeout: "CTAP2_ERR_USER_ACTION_TIMEOUT"
        case .notAllowed: "CTAP2_ERR_NOT_ALLOWED"
        case .pinInvalid: "CTAP2_ERR_PIN_INVALID"
        case .pinBlocked: "CTAP2_ERR_PIN_BLOCKED"
        case .pinAuthInvalid: "CTAP2_ERR_PIN_AUTH_INVALID"
        case .pinAuthBlocked: "CTAP2_ERR_PIN_AUTH_BLOCKED"
        case .pinNotSet: "CTAP2_ERR_PIN_NOT_SET"
        case .puatRequired: "CTAP2_ERR_PUAT_REQUIRED"
        case .pinPolicyViolation: "CTAP2_ERR_PIN_POLICY_VIOLATION"
        case .requestTooLarge: "CTAP2_ERR_REQUEST_TOO_LARGE"
        case .actionTimeout: "CTAP2_ERR_ACTION_TIMEOUT"
        case .upRequired: "CTAP2_ERR_UP_REQUIRED"
        case .uvBlocked: "CTAP2_ERR_UV_BLOCKED"
        case .integrityFailure: "CTAP2_ERR_INTEGRITY_FAILURE"
        case .invalidSubcommand: "CTAP2_ERR_INVALID_SUBCOMMAND"
        case .uvInvalid: "CTAP2_ERR_UV_INVALID"
        case .unauthorizedPermission: "CTAP2_ERR_UNAUTHORIZED_PERMISSION"
        case .other: "CTAP1_ERR_OTHER"
        }
    }
}

extension CTAP2StatusCode {
    /// The one mapping from CBOR decoding failures to the wire (CTAP 2.1 §8: malformed or
    /// non-canonical CBOR is CTAP2_ERR_INVALID_CBOR; nesting beyond the supported depth too).
    public init(_ error: CBORDecodingError) {
        self = .invalidCBOR
    }
}
