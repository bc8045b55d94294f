import CTAP

/// The pinUvAuthToken state machine (CTAP 2.1 §6.5.2.1, "pinUvAuthToken state"): whether the
/// current token is in use, what it may do, for which RP, and its user present / user verified
/// flags. Time is a parameter; the token bytes themselves live in `ClientPIN`.
struct PinUvAuthTokenState {
    /// What an in-use token carries.
    struct Grant: Equatable {
        var permissions: PinUvAuthPermissions
        /// The permissions RP ID; nil until bound (mc/ga bind on first use).
        var rpID: String?
        /// When beginUsingPinUvAuthToken ran.
        var beganAt: UInt64
        /// Whether the token was used since, which lets it outlive the initial usage time limit.
        var hasBeenUsed: Bool
        var isUserPresent: Bool
        var isUserVerified: Bool
    }

    enum State: Equatable {
        case notInUse
        case inUse(Grant)
    }

    /// CTAP 2.1 §6.5.2.1: a token not used within this time after it was obtained stops.
    let initialUsageTimeLimit: UInt64
    /// …and even a token in use stops after this long.
    let maxUsageTimePeriod: UInt64
    private(set) var state: State = .notInUse

    init(initialUsageTimeLimit: UInt64, maxUsageTimePeriod: UInt64) {
        self.initialUsageTimeLimit = initialUsageTimeLimit
        self.maxUsageTimePeriod = maxUsageTimePeriod
    }

    /// beginUsingPinUvAuthToken(userIsPresent), with the permissions and RP ID just granted.
    mutating func begin(permissions: PinUvAuthPermissions, rpID: String?, userIsPresent: Bool, now: UInt64) {
        state = .inUse(Grant(permissions: permissions, rpID: rpID, beganAt: now, hasBeenUsed: false,
                             isUserPresent: userIsPresent, isUserVerified: true))
    }

    /// stopUsingPinUvAuthToken().
    mutating func stop() { state = .notInUse }

    /// The grant if the token is in use at `now`; the usage timer observer runs first.
    mutating func grant(now: UInt64) -> Grant? {
        guard case let .inUse(grant) = state else { return nil }
        let age = now &- grant.beganAt
        if age > maxUsageTimePeriod || (age > initialUsageTimeLimit && !grant.hasBeenUsed) {
            state = .notInUse
            return nil
        }
        return grant
    }

    /// Record a use of the token, binding it to `rpID` if it was not bound yet.
    mutating func markUsed(bindingTo rpID: String?) {
        guard case var .inUse(grant) = state else { return }
        grant.hasBeenUsed = true
        if grant.rpID == nil { grant.rpID = rpID }
        state = .inUse(grant)
    }

    /// clearUserPresentFlag(), clearUserVerifiedFlag() and
    /// clearPinUvAuthTokenPermissionsExceptLbw(): what makeCredential and getAssertion do once
    /// they collected user presence (CTAP 2.1 §6.1.2 step 14, §6.2.2 step 9).
    mutating func consumeAfterPresence() {
        guard case var .inUse(grant) = state else { return }
        grant.isUserPresent = false
        grant.isUserVerified = false
        grant.permissions.formIntersection(.largeBlobWrite)
        state = .inUse(grant)
    }
}
