import CBOR

/// One authenticator command as a key reads it from a CTAPHID_CBOR message (command byte ‖ CBOR
/// parameters), decoded once: the Authenticator answers it, and a handler around it (the rig's)
/// reads the same value rather than parsing the bytes again.
public enum CTAP2Request: Sendable {
    case makeCredential(MakeCredentialRequest)
    case getAssertion(GetAssertionRequest)
    case getInfo
    case clientPIN(ClientPINRequest)
    case reset
    case getNextAssertion
    /// 0x0A, or 0x41 when `preview` (the CTAP 2.1 preview's number for the same command).
    case credentialManagement(CredentialManagementRequest, preview: Bool)
    case selection
    case largeBlobs(LargeBlobsRequest)
    case config(AuthenticatorConfigRequest)

    /// The request `command` carries, from its decoded `parameters` (nil: none were sent).
    /// CTAP 2.1 §6: a command that needs parameters without them is CTAP2_ERR_MISSING_PARAMETER;
    /// bioEnrollment, which a key without a fingerprint sensor does not offer, is
    /// CTAP1_ERR_INVALID_COMMAND (§8).
    public init(command: CTAPCommand, parameters: CBORValue?) throws(CTAP2StatusCode) {
        func required() throws(CTAP2StatusCode) -> CBORValue {
            guard let parameters else { throw .missingParameter }
            return parameters
        }
        switch command {
        case .makeCredential: self = .makeCredential(try MakeCredentialRequest(cbor: try required()))
        case .getAssertion: self = .getAssertion(try GetAssertionRequest(cbor: try required()))
        case .getInfo: self = .getInfo
        case .clientPIN: self = .clientPIN(try ClientPINRequest(cbor: try required()))
        case .reset: self = .reset
        case .getNextAssertion: self = .getNextAssertion
        case .bioEnrollment: throw .invalidCommand
        case .credentialManagement, .credentialManagementPreview:
            self = .credentialManagement(try CredentialManagementRequest(cbor: try required()),
                                         preview: command == .credentialManagementPreview)
        case .selection: self = .selection
        case .largeBlobs: self = .largeBlobs(try LargeBlobsRequest(cbor: try required()))
        case .config: self = .config(try AuthenticatorConfigRequest(cbor: try required()))
        }
    }

    public var command: CTAPCommand {
        switch self {
        case .makeCredential: .makeCredential
        case .getAssertion: .getAssertion
        case .getInfo: .getInfo
        case .clientPIN: .clientPIN
        case .reset: .reset
        case .getNextAssertion: .getNextAssertion
        case let .credentialManagement(_, preview): preview ? .credentialManagementPreview : .credentialManagement
        case .selection: .selection
        case .largeBlobs: .largeBlobs
        case .config: .config
        }
    }
}

/// An authenticator command's successful answer, typed until it is encoded (`encodedBody`, the
/// one place a response becomes bytes).
public enum CTAP2Response: Sendable, Equatable {
    case info(AuthenticatorInfo)
    case credential(MakeCredentialResponse)
    /// getAssertion and getNextAssertion.
    case assertion(GetAssertionResponse)
    case clientPIN(ClientPINResponse)
    case credentialManagement(CredentialManagementResponse)
    case largeBlobs(LargeBlobsResponse)
    /// Success with no body: setPIN, changePIN, deleteCredential, reset, selection, config …
    case empty

    /// The response's CBOR (nothing for `.empty`). An assertion is written member by member
    /// (GetAssertionResponse.encoded(): the hot path builds no map).
    public func encodedBody() -> [UInt8] {
        switch self {
        case let .info(info): info.cborValue.encoded()
        case let .credential(response): response.encoded()
        case let .assertion(response): response.encoded()
        case let .clientPIN(response): response.cborValue.encoded()
        case let .credentialManagement(response): response.cborValue.encoded()
        case let .largeBlobs(response): response.cborValue.encoded()
        case .empty: []
        }
    }
}

extension Result where Success == CTAP2Response, Failure == CTAP2StatusCode {
    /// What goes back in the CTAPHID_CBOR reply: the status byte, then the body on success.
    public func encoded() -> [UInt8] {
        switch self {
        // An assertion, the reply sent most, is written after its status byte in one buffer.
        case let .success(.assertion(response)): response.encoded(status: CTAP2StatusCode.success.rawValue)
        case let .success(.credential(response)): response.encoded(status: CTAP2StatusCode.success.rawValue)
        case let .success(response): [CTAP2StatusCode.success.rawValue] + response.encodedBody()
        case let .failure(status): [status.rawValue]
        }
    }
}
