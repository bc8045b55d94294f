import XCTest
@testable import FIDOCrypto

final class MLDSATests: XCTestCase {
    /// SHA-256 of the public key of seed 00 01 … 1f, as the `cryptography` package (50.0.2, its
    /// own OpenSSL 3.5) computes it: `MLDSA44PrivateKey.from_seed_bytes(bytes(range(32)))`.
    func testPublicKeyOfASeedMatchesAnIndependentImplementation() throws {
        let expected: [MLDSA.ParameterSet: String] = [
            .mlDSA44: "9f107644c1084526af3bc8098680b05499a2325a644e388fb4f970e058d19d46",
            .mlDSA65: "d666806e11cee19a7c989f7445f90dd419cf4d2d51db8c0fdb4c0f0a542238c9",
            .mlDSA87: "91dc389cfaa01470b7f66eee45a4ae9026d154817c754dfe22298b3fa241ffcd",
        ]
        for (parameterSet, digest) in expected {
            let key = try MLDSA.PrivateKey(parameterSet: parameterSet, seed: SecretBytes(Array(0..<32)))
            XCTAssertEqual(key.publicKey.rawRepresentation.count, parameterSet.publicKeyByteCount)
            XCTAssertEqual(SHA256.hash(key.publicKey.rawRepresentation).hex, digest, "\(parameterSet)")
        }
    }

    func testSignaturesVerifyAndAnyChangeFails() throws {
        for parameterSet in MLDSA.ParameterSet.allCases {
            let key = MLDSA.PrivateKey(parameterSet: parameterSet)
            let message = Array("a WebAuthn assertion's signed data".utf8)
            let signature = try key.signature(for: message)
            XCTAssertEqual(signature.count, parameterSet.signatureByteCount, "\(parameterSet)")
            XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message), "\(parameterSet)")
            XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message + [0]), "\(parameterSet)")
            XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message, context: [1]), "\(parameterSet)")
            var flipped = signature
            flipped[5] ^= 1
            XCTAssertFalse(key.publicKey.isValidSignature(flipped, for: message), "\(parameterSet)")
            XCTAssertFalse(key.publicKey.isValidSignature(Array(signature.dropLast()), for: message), "\(parameterSet)")
            XCTAssertNotEqual(try key.signature(for: message), signature, "hedged: fresh randomness each time")
        }
    }
}

extension MLDSATests {
    struct VectorFile: Decodable {
        struct Vector: Decodable {
            let parameterSet, seed, publicKeySHA256, message, context, signature: String
        }
        let vectors: [Vector]
    }

    static func vectors(_ name: String) throws -> VectorFile {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors/\(name)")
        return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url))
    }

    static func parameterSet(_ name: String) -> MLDSA.ParameterSet? {
        MLDSA.ParameterSet.allCases.first { $0.description == name }
    }

    /// Signatures the `cryptography` package made (Vectors/mldsa-cryptography.json: seeds, messages,
    /// contexts and its hedged signatures): Latchkey derives the same public key from each seed and
    /// accepts each signature, and refuses it under another context or message.
    func testSignaturesOfAnIndependentImplementationVerify() throws {
        let file = try Self.vectors("mldsa-cryptography.json")
        XCTAssertEqual(file.vectors.count, 9)
        for vector in file.vectors {
            let parameterSet = try XCTUnwrap(Self.parameterSet(vector.parameterSet))
            let key = try MLDSA.PrivateKey(parameterSet: parameterSet, seed: SecretBytes([UInt8](hex: vector.seed)))
            XCTAssertEqual(SHA256.hash(key.publicKey.rawRepresentation).hex, vector.publicKeySHA256)
            let message = [UInt8](hex: vector.message), context = [UInt8](hex: vector.context)
            let signature = [UInt8](hex: vector.signature)
            XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message, context: context), vector.parameterSet)
            XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message, context: context + [0]), vector.parameterSet)
            XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message + [1], context: context), vector.parameterSet)
        }
    }

    /// HintBitUnpack's checks (FIPS 204 Algorithm 21): a signature whose hint positions are not
    /// strictly increasing, whose counts decrease or exceed ω, or whose unused bytes are not zero
    /// is malformed, whatever the rest says.
    func testMalformedHintsAreRefused() throws {
        let parameterSet = MLDSA.ParameterSet.mlDSA44
        let key = MLDSA.PrivateKey(parameterSet: parameterSet)
        let message = Array("hints".utf8)
        let signature = try key.signature(for: message)
        let hintStart = signature.count - parameterSet.omega - parameterSet.k
        var counts = Array(signature[(hintStart + parameterSet.omega)...])
        XCTAssertEqual(counts, counts.sorted(), "counts are cumulative")
        var tampered = signature
        tampered[signature.count - 1] = UInt8(parameterSet.omega + 1)   // a count above ω
        XCTAssertNil(MLDSAEncoding.decodeSignature(tampered, parameterSet))
        if counts.last! < parameterSet.omega {
            tampered = signature
            tampered[hintStart + parameterSet.omega - 1] = 1          // a nonzero unused position
            XCTAssertNil(MLDSAEncoding.decodeSignature(tampered, parameterSet))
        }
        if counts[0] >= 2 {
            tampered = signature
            tampered.swapAt(hintStart, hintStart + 1)                 // positions out of order
            XCTAssertNil(MLDSAEncoding.decodeSignature(tampered, parameterSet))
        }
        counts = []
        XCTAssertNotNil(MLDSAEncoding.decodeSignature(signature, parameterSet))
    }

    func testSeedsOfTheWrongLengthAndContextsOver255BytesAreRefused() throws {
        XCTAssertThrowsError(try MLDSA.PrivateKey(parameterSet: .mlDSA65, seed: SecretBytes([UInt8](repeating: 1, count: 31))))
        let key = MLDSA.PrivateKey(parameterSet: .mlDSA65)
        XCTAssertThrowsError(try key.signature(for: [1], context: [UInt8](repeating: 0, count: 256)))
        XCTAssertThrowsError(try MLDSA.PublicKey(parameterSet: .mlDSA65, rawRepresentation: [UInt8](repeating: 0, count: 1312)))
    }

    /// The deterministic variant (zero randomness) signs a message the same way twice; the hedged
    /// one differs each time (testSignaturesVerifyAndAnyChangeFails).
    func testDeterministicSigningIsReproducible() throws {
        let key = try MLDSA.PrivateKey(parameterSet: .mlDSA87, seed: SecretBytes(Array(0..<32)))
        let zero = [UInt8](repeating: 0, count: 32)
        let first = try key.signature(for: [1, 2, 3], context: [], randomness: zero)
        XCTAssertEqual(try key.signature(for: [1, 2, 3], context: [], randomness: zero), first)
        XCTAssertTrue(key.publicKey.isValidSignature(first, for: [1, 2, 3]))
    }
}

/// NIST's ACVP known-answer values (Vectors/mldsa-acvp.json names the files and commits).
final class MLDSAKnownAnswerTests: XCTestCase {
    struct File: Decodable {
        struct KeyGen: Decodable { let parameterSet: String; let tcId: Int; let seed, pk, sk: String }
        struct SigGen: Decodable { let parameterSet: String; let tcId: Int; let sk, message, signature: String }
        let keyGen: [KeyGen]
        let sigGen: [SigGen]
    }

    func file() throws -> File {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors/mldsa-acvp.json")
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
    }

    /// KeyGen from ξ gives the published public key and expanded private key byte for byte (the
    /// private key's encoding covers s1, s2 and t0, which the public key does not show).
    func testKeyGenMatchesACVP() throws {
        let vectors = try file().keyGen
        XCTAssertEqual(vectors.count, 6)
        for vector in vectors {
            let parameterSet = try XCTUnwrap(MLDSATests.parameterSet(vector.parameterSet))
            let seed = SecretBytes([UInt8](hex: vector.seed))
            let key = try MLDSA.PrivateKey(parameterSet: parameterSet, seed: seed)
            XCTAssertEqual(key.publicKey.rawRepresentation.hex, vector.pk.lowercased(), "tcId \(vector.tcId)")
            let expanded = MLDSAExpandedKey(seed: seed, parameterSet, encodingPrivateKey: true)
            XCTAssertEqual(expanded.encodedPrivateKey?.hex, vector.sk.lowercased(), "tcId \(vector.tcId)")
            // skDecode reads the published key back to the same signing key.
            let decoded = try XCTUnwrap(MLDSAExpandedKey.decodingPrivateKey([UInt8](hex: vector.sk), parameterSet))
            let message = Array("tcId \(vector.tcId)".utf8)
            let signature = try decoded.sign(formattedMessage: try MLDSA.formatted(message, context: []),
                                             randomness: [UInt8](repeating: 0, count: 32))
            XCTAssertEqual(signature, try key.signature(for: message, context: [], randomness: [UInt8](repeating: 0, count: 32)))
        }
    }

    /// Deterministic Sign_internal (zero randomness) over the message as given reproduces the
    /// published signatures.
    func testDeterministicSigningMatchesACVP() throws {
        let vectors = try file().sigGen
        XCTAssertEqual(vectors.count, 2)
        for vector in vectors {
            let parameterSet = try XCTUnwrap(MLDSATests.parameterSet(vector.parameterSet))
            let key = try XCTUnwrap(MLDSAExpandedKey.decodingPrivateKey([UInt8](hex: vector.sk), parameterSet))
            let signature = try key.sign(formattedMessage: [UInt8](hex: vector.message), randomness: [UInt8](repeating: 0, count: 32))
            XCTAssertEqual(signature.hex, vector.signature.lowercased(), "tcId \(vector.tcId)")
        }
    }
}
