/// The three parameter sets (FIPS 204 Table 1) and their COSE algorithm numbers.
public enum MLDSAParameterSet: Int, Sendable, CaseIterable, CustomStringConvertible {
    case mlDSA44 = -48, mlDSA65 = -49, mlDSA87 = -50

    public var description: String {
        switch self {
        case .mlDSA44: "ML-DSA-44"
        case .mlDSA65: "ML-DSA-65"
        case .mlDSA87: "ML-DSA-87"
        }
    }

    /// Rows and columns of the matrix A.
    var k: Int { [4, 6, 8][index] }
    var l: Int { [4, 5, 7][index] }
    var eta: Int32 { [2, 4, 2][index] }
    var tau: Int { [39, 49, 60][index] }
    /// c̃'s length in bytes: λ/4.
    var commitmentHashByteCount: Int { [32, 48, 64][index] }
    var gamma1: Int32 { [1 << 17, 1 << 19, 1 << 19][index] }
    var gamma2: Int32 { [(MLDSAField.q - 1) / 88, (MLDSAField.q - 1) / 32, (MLDSAField.q - 1) / 32][index] }
    var omega: Int { [80, 55, 75][index] }
    var beta: Int32 { Int32(tau) * eta }
    /// Bits of one coefficient of z (1 + bitlen(γ1 − 1)), of s1/s2 (bitlen(2η)), of w1.
    var gamma1Bits: Int { gamma1 == 1 << 17 ? 18 : 20 }
    var etaBits: Int { eta == 2 ? 3 : 4 }
    var w1Bits: Int { gamma2 == (MLDSAField.q - 1) / 88 ? 6 : 4 }

    private var index: Int {
        switch self {
        case .mlDSA44: 0
        case .mlDSA65: 1
        case .mlDSA87: 2
        }
    }

    /// 1,312, 1,952 or 2,592 bytes.
    public var publicKeyByteCount: Int { 32 + 320 * k }
    /// 2,420, 3,309 or 4,627 bytes.
    public var signatureByteCount: Int { commitmentHashByteCount + l * 32 * gamma1Bits + omega + k }
    /// The expanded private key's encoding (FIPS 204 skEncode): 2,560, 4,032 or 4,896 bytes.
    var expandedPrivateKeyByteCount: Int { 128 + 32 * (k + l) * etaBits + 32 * 13 * k }
}
