import COpenSSL

/// FIDO packed-attestation certificates (WebAuthn §8.2.1 "Packed Attestation
/// Statement Certificate Requirements"): a self-signed P-256 CA and batch leaf
/// certificates it issues. All certificates are ECDSA-with-SHA256, X.509 v3,
/// valid from one day before creation for 20 years.
public enum AttestationCertificate {
    /// id-fido-gen-ce-aaguid.
    static let aaguidExtensionOID: StaticString = "1.3.6.1.4.1.45724.1.1.4"
    /// The subject OU WebAuthn requires on attestation leaves.
    static let attestationOrganizationalUnit = "Authenticator Attestation"
    static let backdateSeconds = 24 * 60 * 60
    static let validityDays = 20 * 365 + 5   // 20 years including leap days

    /// Self-signed CA: v3; subject = issuer = C, O, CN; basicConstraints
    /// CA:TRUE (critical); keyUsage keyCertSign + cRLSign (critical); SKI;
    /// random positive 16-byte serial. Returns DER.
    public static func makeCA(key: P256.Signing.PrivateKey, country: String, organization: String,
                              commonName: String) throws(CryptoError) -> [UInt8] {
        let name = try makeName([("C", country), ("O", organization), ("CN", commonName)])
        let certificate = try makeCertificate(subject: name.pointer, issuer: name.pointer, publicKey: key.publicKey)
        try addExtension(to: certificate, issuer: certificate, NID_basic_constraints, "critical,CA:TRUE")
        try addExtension(to: certificate, issuer: certificate, NID_key_usage, "critical,keyCertSign,cRLSign")
        try addExtension(to: certificate, issuer: certificate, NID_subject_key_identifier, "hash")
        return try signAndEncode(certificate, with: key)
    }

    /// Batch leaf issued by the CA: v3; subject C, O, OU = "Authenticator
    /// Attestation", CN; basicConstraints CA:FALSE (critical); the FIDO AAGUID
    /// extension (non-critical, extnValue = 04 10 ‖ aaguid); SKI and AKI.
    /// `issuerKey` must be the key of `issuerCertificate`. Returns DER.
    public static func makeLeaf(subjectKey: P256.Signing.PublicKey, aaguid: [UInt8], country: String,
                                organization: String, commonName: String, issuerCertificate: [UInt8],
                                issuerKey: P256.Signing.PrivateKey) throws(CryptoError) -> [UInt8] {
        guard aaguid.count == 16 else { throw .invalidLength }
        let issuer = try X509Certificate(derEncoded: issuerCertificate)
        guard issuer.publicKeyX963 == issuerKey.publicKey.x963Representation else {
            throw .certificate("issuer key does not match the issuer certificate")
        }
        let subject = try makeName([("C", country), ("O", organization),
                                    ("OU", attestationOrganizationalUnit), ("CN", commonName)])
        let certificate = try makeCertificate(subject: subject.pointer,
                                              issuer: X509_get_subject_name(issuer.handle.pointer),
                                              publicKey: subjectKey)
        try addExtension(to: certificate, issuer: issuer.handle, NID_basic_constraints, "critical,CA:FALSE")
        try addExtension(to: certificate, issuer: issuer.handle, NID_subject_key_identifier, "hash")
        try addExtension(to: certificate, issuer: issuer.handle, NID_authority_key_identifier, "keyid:always")
        try addAAGUIDExtension(to: certificate, aaguid: aaguid)
        return try signAndEncode(certificate, with: issuerKey)
    }

    // MARK: Building blocks

    private static func makeName(_ attributes: [(field: String, value: String)]) throws(CryptoError) -> X509NameHandle {
        for (field, value) in attributes {
            let length = value.unicodeScalars.count
            if field == "C" {
                guard length == 2, value.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("a"..."z").contains($0) }) else {
                    throw .certificate("country must be a two-letter ISO 3166 code")
                }
            } else {
                guard (1...64).contains(length) else {
                    throw .certificate("\(field) must be 1 to 64 characters")
                }
            }
        }
        let name = try X509NameHandle()
        for (field, value) in attributes {
            let bytes = Array(value.utf8)
            try bytes.withBytes { (buffer) throws(CryptoError) in
                try check("X509_NAME_add_entry_by_txt",
                          X509_NAME_add_entry_by_txt(name.pointer, field, MBSTRING_UTF8, buffer.uint8Pointer,
                                                     Int32(buffer.count), -1, 0))
            }
        }
        return name
    }

    private static func makeCertificate(subject: OpaquePointer?, issuer: OpaquePointer?,
                                        publicKey: P256.Signing.PublicKey) throws(CryptoError) -> X509Handle {
        let certificate = X509Handle(try checkNotNull("X509_new", X509_new()))
        try check("X509_set_version", X509_set_version(certificate.pointer, 2))   // 2 = v3

        var serial = SecureRandom.bytes(count: 16)
        serial[0] = (serial[0] & 0x7F) | 0x40          // positive, and exactly 16 bytes long
        let serialNumber = try serial.withBytes { (bytes) throws(CryptoError) -> BigNumber in
            BigNumber(try checkNotNull("BN_bin2bn", BN_bin2bn(bytes.uint8Pointer, Int32(bytes.count), nil)))
        }
        let serialInteger = ASN1StringHandle(try checkNotNull("BN_to_ASN1_INTEGER",
                                                              BN_to_ASN1_INTEGER(serialNumber.pointer, nil)))
        try check("X509_set_serialNumber", X509_set_serialNumber(certificate.pointer, serialInteger.pointer))

        try check("X509_set_subject_name", X509_set_subject_name(certificate.pointer, subject))
        try check("X509_set_issuer_name", X509_set_issuer_name(certificate.pointer, issuer))

        _ = try checkNotNull("X509_gmtime_adj",
                             X509_gmtime_adj(X509_getm_notBefore(certificate.pointer), -backdateSeconds))
        _ = try checkNotNull("X509_time_adj_ex",
                             X509_time_adj_ex(X509_getm_notAfter(certificate.pointer), Int32(validityDays), 0, nil))

        let key = try ECCurve.p256.makePublicKey(x963: publicKey.x963Representation)
        try check("X509_set_pubkey", X509_set_pubkey(certificate.pointer, key.pointer))
        return certificate
    }

    /// Adds an extension from its OpenSSL config-string form (as in openssl.cnf).
    private static func addExtension(to certificate: X509Handle, issuer: X509Handle, _ nid: Int32,
                                     _ value: String) throws(CryptoError) {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer.pointer, certificate.pointer, nil, nil, 0)
        let fieldExtension = X509ExtensionHandle(try checkNotNull("X509V3_EXT_nconf_nid",
                                                                  X509V3_EXT_nconf_nid(nil, &context, nid, value)))
        try check("X509_add_ext", X509_add_ext(certificate.pointer, fieldExtension.pointer, -1))
    }

    private static func addAAGUIDExtension(to certificate: X509Handle, aaguid: [UInt8]) throws(CryptoError) {
        let object = ASN1ObjectHandle(try checkNotNull("OBJ_txt2obj", OBJ_txt2obj(aaguidExtensionOID.cString, 1)))
        let octets = ASN1StringHandle(try checkNotNull("ASN1_OCTET_STRING_new", ASN1_OCTET_STRING_new()))
        // extnValue contains the DER of an OCTET STRING wrapping the 16 AAGUID bytes.
        let value: [UInt8] = [0x04, 0x10] + aaguid
        try value.withBytes { (bytes) throws(CryptoError) in
            try check("ASN1_OCTET_STRING_set",
                      ASN1_OCTET_STRING_set(octets.pointer, bytes.uint8Pointer, Int32(bytes.count)))
        }
        let fieldExtension = X509ExtensionHandle(try checkNotNull("X509_EXTENSION_create_by_OBJ",
                                                                  X509_EXTENSION_create_by_OBJ(nil, object.pointer, 0,
                                                                                               octets.pointer)))
        try check("X509_add_ext", X509_add_ext(certificate.pointer, fieldExtension.pointer, -1))
    }

    private static func signAndEncode(_ certificate: X509Handle,
                                      with key: P256.Signing.PrivateKey) throws(CryptoError) -> [UInt8] {
        try check("X509_sign", X509_sign(certificate.pointer, key.key.pointer, SHA256.digest.pointer),
                  success: { $0 > 0 })
        let length = i2d_X509(certificate.pointer, nil)
        try check("i2d_X509", length, success: { $0 > 0 })
        return try makeBytes(count: Int(length)) { (output) throws(CryptoError) -> Int in
            var cursor = output.uint8Pointer
            let written = i2d_X509(certificate.pointer, &cursor)
            try check("i2d_X509", written, success: { $0 == length })
            return Int(written)
        }
    }
}
