import COpenSSL
import CShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A parsed X.509 certificate, for tests, diagnostics and attestation checks.
/// Read-only: every accessor inspects the decoded `X509` object.
public final class X509Certificate: @unchecked Sendable {
    let handle: X509Handle

    /// Parses exactly one DER certificate; trailing bytes are rejected.
    public init(derEncoded: [UInt8]) throws(CryptoError) {
        guard !derEncoded.isEmpty else { throw .certificate("empty certificate") }
        handle = try derEncoded.withBytes { (bytes) throws(CryptoError) -> X509Handle in
            var cursor: UnsafePointer<UInt8>? = bytes.uint8Pointer
            guard let certificate = d2i_X509(nil, &cursor, bytes.count) else {
                discardOpenSSLErrors()
                throw .certificate("not a DER-encoded X.509 certificate")
            }
            let owned = X509Handle(certificate)
            guard let end = cursor, end == bytes.uint8Pointer! + bytes.count else {
                throw .certificate("trailing data after the certificate")
            }
            return owned
        }
    }

    /// 1, 2 or 3 (the encoded version field + 1).
    public var version: Int { Int(X509_get_version(handle.pointer)) + 1 }

    /// Subject attributes by short name ("C", "O", "OU", "CN", …); attributes
    /// without a short name use their dotted OID. A repeated attribute keeps its last value.
    public var subject: [String: String] { Self.attributes(of: X509_get_subject_name(handle.pointer)) }

    /// Issuer attributes, keyed like `subject`.
    public var issuer: [String: String] { Self.attributes(of: X509_get_issuer_name(handle.pointer)) }

    /// The basicConstraints cA flag (false when the extension is absent).
    public var isCA: Bool { basicConstraints?.isCA ?? false }

    /// Whether basicConstraints is present and marked critical.
    public var basicConstraintsCritical: Bool { basicConstraints?.isCritical ?? false }

    /// The contents of the extnValue OCTET STRING of the first extension with
    /// `oid` (dotted form), i.e. the DER of the extension's value; nil if absent.
    public func extensionValue(oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            discardOpenSSLErrors()
            return nil
        }
        let ownedObject = ASN1ObjectHandle(object)
        let index = X509_get_ext_by_OBJ(handle.pointer, ownedObject.pointer, -1)
        guard index >= 0, let fieldExtension = X509_get_ext(handle.pointer, index),
              let data = X509_EXTENSION_get_data(fieldExtension) else { return nil }
        let length = Int(ASN1_STRING_length(data))
        guard length > 0, let start = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: start, count: length))
    }

    /// The subject public key as 0x04 ‖ x ‖ y if it is a P-256 key, else nil.
    public var publicKeyX963: [UInt8]? {
        guard let key = X509_get_pubkey(handle.pointer) else {
            discardOpenSSLErrors()
            return nil
        }
        let owned = EVPPKey(key)
        guard EVP_PKEY_is_a(owned.pointer, ("EC" as StaticString).cString) == 1 else { return nil }
        var name = [CChar](repeating: 0, count: 64)
        var nameLength = 0
        let gotName = name.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_utf8_string_param(owned.pointer, ("group" as StaticString).cString,
                                           $0.baseAddress, $0.count, &nameLength)
        }
        guard gotName == 1 else {
            discardOpenSSLErrors()
            return nil
        }
        let group = String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard group == "prime256v1" || group == "P-256" else { return nil }
        do {
            return try ECCurve.p256.exportPublicKey(owned)
        } catch {
            return nil
        }
    }

    /// Whether this certificate's signature verifies under `issuer`'s public key.
    public func isSigned(by issuer: X509Certificate) -> Bool {
        guard let key = X509_get_pubkey(issuer.handle.pointer) else {
            discardOpenSSLErrors()
            return false
        }
        let owned = EVPPKey(key)
        let result = X509_verify(handle.pointer, owned.pointer)
        if result != 1 { discardOpenSSLErrors() }
        return result == 1
    }

    /// Start of validity, seconds since 1970-01-01 UTC (NaN if unreadable).
    public var notBefore: Double { Self.seconds(X509_get0_notBefore(handle.pointer)) }

    /// End of validity, seconds since 1970-01-01 UTC (NaN if unreadable).
    public var notAfter: Double { Self.seconds(X509_get0_notAfter(handle.pointer)) }

    // MARK: Helpers

    private var basicConstraints: (isCA: Bool, isCritical: Bool)? {
        var critical: Int32 = -1
        guard let decoded = X509_get_ext_d2i(handle.pointer, NID_basic_constraints, &critical, nil) else {
            discardOpenSSLErrors()
            return nil
        }
        let owned = BasicConstraintsHandle(decoded.assumingMemoryBound(to: BASIC_CONSTRAINTS.self))
        return (owned.pointer.pointee.ca != 0, critical == 1)
    }

    private static func attributes(of name: OpaquePointer?) -> [String: String] {
        guard let name else { return [:] }
        var result: [String: String] = [:]
        for index in 0..<X509_NAME_entry_count(name) {
            guard let entry = X509_NAME_get_entry(name, index),
                  let object = X509_NAME_ENTRY_get_object(entry),
                  let data = X509_NAME_ENTRY_get_data(entry) else { continue }
            let key: String
            let nid = OBJ_obj2nid(object)
            if nid != NID_undef, let shortName = OBJ_nid2sn(nid) {
                key = String(cString: shortName)
            } else {
                var text = [CChar](repeating: 0, count: 128)
                let length = text.withUnsafeMutableBufferPointer { OBJ_obj2txt($0.baseAddress, Int32($0.count), object, 1) }
                guard length > 0 else { continue }
                key = String(decoding: text.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            var utf8: UnsafeMutablePointer<UInt8>? = nil
            let length = ASN1_STRING_to_UTF8(&utf8, data)
            guard length >= 0, let utf8 else {
                discardOpenSSLErrors()
                continue
            }
            result[key] = String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
            lk_openssl_free(utf8)
        }
        return result
    }

    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Double {
        guard let time else { return .nan }
        var broken = tm()
        guard ASN1_TIME_to_tm(time, &broken) == 1 else {
            discardOpenSSLErrors()
            return .nan
        }
        return Double(timegm(&broken))
    }
}
