import XCTest
import Foundation
import FIDOCrypto

final class AttestationCertificateTests: XCTestCase {
    let aaguid = [UInt8](hex: "f8a011f38c0a4d15800617111f9edc7d")

    func makeChain() throws -> (caKey: P256.Signing.PrivateKey, ca: [UInt8],
                                leafKey: P256.Signing.PrivateKey, leaf: [UInt8]) {
        let caKey = try P256.Signing.PrivateKey()
        let ca = try AttestationCertificate.makeCA(key: caKey, country: "US", organization: "Latchkey",
                                                   commonName: "Latchkey Attestation Root")
        let leafKey = try P256.Signing.PrivateKey()
        let leaf = try AttestationCertificate.makeLeaf(subjectKey: leafKey.publicKey, aaguid: aaguid, country: "US",
                                                       organization: "Latchkey", commonName: "Latchkey Batch 1",
                                                       issuerCertificate: ca, issuerKey: caKey)
        return (caKey, ca, leafKey, leaf)
    }

    func testCAFields() throws {
        let chain = try makeChain()
        let ca = try X509Certificate(derEncoded: chain.ca)
        XCTAssertEqual(ca.version, 3)
        XCTAssertEqual(ca.subject, ["C": "US", "O": "Latchkey", "CN": "Latchkey Attestation Root"])
        XCTAssertEqual(ca.issuer, ca.subject)
        XCTAssertTrue(ca.isCA)
        XCTAssertTrue(ca.basicConstraintsCritical)
        XCTAssertEqual(ca.publicKeyX963, chain.caKey.publicKey.x963Representation)
        XCTAssertTrue(ca.isSigned(by: ca), "CA is self-signed")
        XCTAssertNotNil(ca.extensionValue(oid: "2.5.29.14"), "subjectKeyIdentifier")
        // keyUsage: BIT STRING with keyCertSign (bit 5) and cRLSign (bit 6) → 03 02 01 06.
        XCTAssertEqual(ca.extensionValue(oid: "2.5.29.15"), [0x03, 0x02, 0x01, 0x06])
        XCTAssertNil(ca.extensionValue(oid: "1.3.6.1.4.1.45724.1.1.4"))
        assertValidity(ca)
    }

    func testLeafFields() throws {
        let chain = try makeChain()
        let ca = try X509Certificate(derEncoded: chain.ca)
        let leaf = try X509Certificate(derEncoded: chain.leaf)
        XCTAssertEqual(leaf.version, 3)
        XCTAssertEqual(leaf.subject, ["C": "US", "O": "Latchkey", "OU": "Authenticator Attestation",
                                      "CN": "Latchkey Batch 1"])
        XCTAssertEqual(leaf.subject["OU"], "Authenticator Attestation")
        XCTAssertEqual(leaf.issuer, ca.subject)
        XCTAssertFalse(leaf.isCA)
        XCTAssertTrue(leaf.basicConstraintsCritical)
        XCTAssertEqual(leaf.extensionValue(oid: "1.3.6.1.4.1.45724.1.1.4"), [0x04, 0x10] + aaguid)
        XCTAssertEqual(leaf.publicKeyX963, chain.leafKey.publicKey.x963Representation)
        XCTAssertTrue(leaf.isSigned(by: ca), "leaf is signed by the CA")
        XCTAssertFalse(leaf.isSigned(by: leaf), "leaf is not self-signed")
        XCTAssertFalse(ca.isSigned(by: leaf))
        // AKI keyIdentifier equals the CA's SKI.
        let ski = try XCTUnwrap(ca.extensionValue(oid: "2.5.29.14"))        // 04 14 ‖ keyid
        let aki = try XCTUnwrap(leaf.extensionValue(oid: "2.5.29.35"))      // 30 16 80 14 ‖ keyid
        XCTAssertEqual(Array(aki.suffix(20)), Array(ski.suffix(20)))
        assertValidity(leaf)

        // The AAGUID extension must not be critical: check in the raw DER, where
        // the extension appears as 30 … 06 0b <oid> 04 12 04 10 <aaguid> (no BOOLEAN).
        let oid: [UInt8] = [0x06, 0x0b, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xe5, 0x1c, 0x01, 0x01, 0x04]
        let expected = oid + [0x04, 0x12, 0x04, 0x10] + aaguid
        XCTAssertNotNil(chain.leaf.firstRange(of: expected), "AAGUID extension encoded without a critical flag")
    }

    func testChainFromImportedKeys() throws {
        // Keys rebuilt from raw scalars carry no public point inside OpenSSL;
        // certificate creation must still produce a correct chain.
        let caKey = try P256.Signing.PrivateKey(rawRepresentation: P256.Signing.PrivateKey().rawRepresentation.copyBytes())
        let leafKey = try P256.Signing.PrivateKey(rawRepresentation: P256.Signing.PrivateKey().rawRepresentation.copyBytes())
        let caDER = try AttestationCertificate.makeCA(key: caKey, country: "GB", organization: "Imported",
                                                      commonName: "Imported Root")
        let leafDER = try AttestationCertificate.makeLeaf(subjectKey: leafKey.publicKey, aaguid: aaguid, country: "GB",
                                                          organization: "Imported", commonName: "Imported Leaf",
                                                          issuerCertificate: caDER, issuerKey: caKey)
        let ca = try X509Certificate(derEncoded: caDER)
        let leaf = try X509Certificate(derEncoded: leafDER)
        XCTAssertTrue(ca.isSigned(by: ca))
        XCTAssertTrue(leaf.isSigned(by: ca))
        XCTAssertEqual(ca.publicKeyX963, caKey.publicKey.x963Representation)
        XCTAssertEqual(leaf.publicKeyX963, leafKey.publicKey.x963Representation)
    }

    func testSerialNumbersDiffer() throws {
        let key = try P256.Signing.PrivateKey()
        let first = try AttestationCertificate.makeCA(key: key, country: "DE", organization: "O", commonName: "CN")
        let second = try AttestationCertificate.makeCA(key: key, country: "DE", organization: "O", commonName: "CN")
        XCTAssertNotEqual(first, second)
    }

    func testInputValidation() throws {
        let chain = try makeChain()
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) {
            try AttestationCertificate.makeLeaf(subjectKey: chain.leafKey.publicKey, aaguid: [1, 2, 3], country: "US",
                                                organization: "O", commonName: "CN", issuerCertificate: chain.ca,
                                                issuerKey: chain.caKey)
        }
        XCTAssertThrowsCryptoError(.anyCertificateError) {
            try AttestationCertificate.makeLeaf(subjectKey: chain.leafKey.publicKey, aaguid: self.aaguid,
                                                country: "US", organization: "O", commonName: "CN",
                                                issuerCertificate: chain.ca, issuerKey: chain.leafKey)
        }
        XCTAssertThrowsCryptoError(.anyCertificateError) {
            try AttestationCertificate.makeCA(key: chain.caKey, country: "USA", organization: "O", commonName: "CN")
        }
        XCTAssertThrowsCryptoError(.anyCertificateError) {
            try AttestationCertificate.makeCA(key: chain.caKey, country: "US", organization: "", commonName: "CN")
        }
        XCTAssertThrowsCryptoError(.anyCertificateError) { try X509Certificate(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        XCTAssertThrowsCryptoError(.anyCertificateError) { try X509Certificate(derEncoded: chain.leaf + [0]) }
        XCTAssertThrowsCryptoError(.anyCertificateError) { try X509Certificate(derEncoded: []) }
    }

    func testOpenSSLCommandLineReadsLeaf() throws {
        let tool = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: tool) else { throw XCTSkip("no \(tool)") }
        let chain = try makeChain()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["x509", "-inform", "DER", "-noout", "-text"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(chain.leaf))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertTrue(text.contains("CA:FALSE"), text)
        XCTAssertTrue(text.contains("1.3.6.1.4.1.45724.1.1.4"), text)
        XCTAssertTrue(text.contains("OU = Authenticator Attestation"), text)
        XCTAssertTrue(text.contains("Version: 3"), text)
        XCTAssertTrue(text.contains("ecdsa-with-SHA256"), text)
        XCTAssertTrue(text.contains("NIST CURVE: P-256") || text.contains("prime256v1"), text)
    }

    private func assertValidity(_ certificate: X509Certificate, file: StaticString = #filePath, line: UInt = #line) {
        let now = Date().timeIntervalSince1970
        XCTAssertEqual(certificate.notBefore, now - 86_400, accuracy: 120, file: file, line: line)
        let twentyYears = 20 * 365.25 * 86_400
        XCTAssertEqual(certificate.notAfter, now + twentyYears, accuracy: 3 * 86_400, file: file, line: line)
        XCTAssertLessThan(certificate.notBefore, now, file: file, line: line)
    }
}
