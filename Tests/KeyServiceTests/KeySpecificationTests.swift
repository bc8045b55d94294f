import Authenticator
import CTAP
import Foundation
import KeyService
import XCTest

/// Each key option is declared once (KeyOption.all); serve and the rig both read it, in their
/// own dialects, with one wording.
final class KeySpecificationTests: XCTestCase {
    private func make(_ values: [(KeyOption, KeyOptionValue)], _ dialect: KeyOptionDialect) throws -> KeySpecification {
        try KeySpecification.make(values.map { (option: $0.0, value: $0.1) }, dialect: dialect)
    }

    private func refusal(_ values: [(KeyOption, KeyOptionValue)], _ dialect: KeyOptionDialect,
                         file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try make(values, dialect)
            XCTFail("accepted", file: file, line: line)
            return ""
        } catch let error as KeyOptionError {
            return error.message
        } catch {
            XCTFail("\(error)", file: file, line: line)
            return ""
        }
    }

    func testEachOptionHasOneFlagOneParameterAndHelp() {
        var ids = Set<String>(), flags = Set<String>(), parameters = Set<String>()
        for option in KeyOption.all {
            XCTAssertTrue(ids.insert(option.id).inserted, "\(option.id) declared twice")
            XCTAssertTrue(option.flag != nil || option.parameter != nil, "\(option.id) can be given no way")
            if let flag = option.flag { XCTAssertTrue(flags.insert(flag).inserted, "--\(flag) declared twice") }
            if let parameter = option.parameter {
                XCTAssertTrue(parameters.insert(parameter).inserted, "\(parameter) declared twice")
            }
            XCTAssertFalse(option.help.isEmpty, option.id)
            XCTAssertTrue(option.help.hasSuffix("."), "\(option.id)'s help is not a sentence")
        }
    }

    /// What the same value does does not depend on how it was given.
    func testTheCommandLineAndTheRigMakeTheSameKey() throws {
        let fromFlags = try make([(.attestation, .text("installation")), (.algorithms, .text("ES384,-7")),
                                  (.accountChoice, .text("client"))], .commandLine)
        let fromParams = try make([(.attestation, .text("installation")), (.algorithms, .list(["ES384", "-7"])),
                                   (.accountChoice, .text("client"))], .rig)
        XCTAssertEqual(fromFlags, fromParams)
        XCTAssertEqual(fromFlags.algorithms, [.es384, .es256])
        XCTAssertEqual(fromFlags.authenticatorConfiguration.attestation, .installation)
        XCTAssertEqual(fromFlags.accountChoice, .client)
        XCTAssertEqual(try make([], .rig), KeySpecification())
    }

    /// One reason, each dialect naming the option and the value its own way.
    func testARefusalIsWordedOnceAndNamedInTheCallersDialect() {
        XCTAssertEqual(refusal([(.attestation, .text("self"))], .commandLine),
                       "invalid --attestation 'self': use batch or installation")
        XCTAssertEqual(refusal([(.attestation, .text("self"))], .rig),
                       "invalid params.attestation \"self\": use batch or installation")
        XCTAssertEqual(refusal([(.protocolVersion, .text("ctap3"))], .rig),
                       "invalid params.protocol \"ctap3\": use ctap2_1, ctap2 or u2f")
        XCTAssertEqual(refusal([(.algorithms, .list(["ES256", "ES256"]))], .rig),
                       "invalid params.algorithms [\"ES256\",\"ES256\"]: ES256 is named twice")
        XCTAssertEqual(refusal([(.algorithms, .text("ES256,ES256"))], .commandLine),
                       "invalid --algorithms 'ES256,ES256': ES256 is named twice")
        XCTAssertEqual(refusal([(.seed, .text(""))], .rig), "invalid params.seed \"\": give 1 to 256 bytes of text")
        XCTAssertTrue(refusal([(.extensions, .list(["teleport"]))], .rig).hasPrefix(
                       "invalid params.extensions [\"teleport\"]: unknown extension '"))
        // What the rig is sent is shown as JSON, control characters escaped.
        XCTAssertEqual(refusal([(.accountChoice, .text("a\"\u{1B}"))], .rig),
                       "invalid params.accountChoice \"a\\\"\\u001b\": use recent or client")
    }

    /// A refused value is said back bounded, and to the rig with nothing a terminal would act on.
    func testARefusalIsBoundedAndTerminalSafe() {
        let long = refusal([(.seed, .text(String(repeating: "\u{7F}", count: 300_000)))], .rig)
        XCTAssertLessThanOrEqual(long.count, 1025, "the whole value came back")
        XCTAssertTrue(long.hasPrefix("invalid params.seed \"\\u007f"), long.prefix(40).description)
        XCTAssertFalse(long.unicodeScalars.contains("\u{7F}"))
        let names = refusal([(.extensions, .list(["\u{202E}moc.elpmaxe", String(repeating: "x", count: 5000)]))], .rig)
        XCTAssertLessThanOrEqual(names.count, 1025)
        XCTAssertFalse(names.unicodeScalars.contains("\u{202E}"), "a bidi override reached the message")
        XCTAssertTrue(names.contains("\\u{202E}moc.elpmaxe"), names)
        let flag = refusal([(.algorithms, .text(String(repeating: "A", count: 2000)))], .commandLine)
        XCTAssertLessThanOrEqual(flag.count, 1025)
        XCTAssertTrue(flag.hasPrefix("invalid --algorithms '" + String(repeating: "A", count: 63) + "…: unknown algorithm"), flag)
    }

    func testTheRulesBetweenOptions() throws {
        XCTAssertEqual(refusal([(.credentialKeys, .text("tpm")), (.algorithms, .text("ES256,EdDSA"))], .commandLine),
                       "--keys tpm makes ES256 keys only: drop --algorithms or give --algorithms ES256")
        XCTAssertEqual(try make([(.credentialKeys, .text("tpm"))], .commandLine).algorithms, [.es256])
        XCTAssertEqual(refusal([(.seed, .text("s")), (.algorithms, .list(["ES256", "PS256"]))], .rig),
                       "params.algorithms: PS256 keys cannot be derived from params.seed (RSA primes are searched for)")
        XCTAssertEqual(refusal([(.protocolVersion, .text("u2f")), (.hasResidentKey, .boolean(true))], .rig),
                       "a u2f key has no resident credentials (params.hasResidentKey)")
        XCTAssertEqual(refusal([(.protocolVersion, .text("u2f")), (.hasUserVerification, .boolean(true))], .rig),
                       "a u2f key has no user verification (params.hasUserVerification)")
        XCTAssertEqual(refusal([(.protocolVersion, .text("u2f")), (.extensions, .list(["credProps"]))], .rig),
                       "a u2f key has no extensions (params.extensions must be empty)")
        XCTAssertEqual(refusal([(.protocolVersion, .text("u2f")), (.defaultBackupState, .boolean(true))], .rig),
                       "a u2f key has no backup flags (params.defaultBackupEligibility, params.defaultBackupState): "
                           + "U2F signs no authData flags but UP")
        XCTAssertEqual(refusal([(.automaticUserVerification, .boolean(false))], .rig),
                       "params.automaticUserVerification needs params.hasUserVerification true")
        // A u2f key keeps no resident credentials whatever the default; an empty list is no extension.
        let u2f = try make([(.protocolVersion, .text("u2f")), (.extensions, .list([]))], .rig)
        XCTAssertFalse(u2f.hasResidentKey)
        XCTAssertFalse(u2f.authenticatorConfiguration.supportsResidentKeys)
        XCTAssertEqual(u2f.extensionIdentifiers, [])
        XCTAssertEqual(u2f.hidConfiguration().capabilities & 0x04, 0, "a u2f key reports CBOR")
        XCTAssertEqual(KeySpecification().hidConfiguration().capabilities & 0x04, 0x04)
    }

    /// The specification is what the authenticator runs with: each option reaches its configuration.
    func testTheAuthenticatorConfigurationComesFromTheSpecification() throws {
        let key = try make([(.protocolVersion, .text("ctap2")), (.hasResidentKey, .boolean(false)),
                            (.extensions, .list(["prf", "credBlob"])), (.defaultBackupEligibility, .boolean(true)),
                            (.seed, .text("fixture"))], .rig)
        let configuration = key.authenticatorConfiguration
        XCTAssertEqual(configuration.protocolLevel, .ctap20)
        XCTAssertFalse(configuration.supportsResidentKeys)
        XCTAssertEqual(configuration.extensions, [.hmacSecret, .credBlob])
        XCTAssertEqual(configuration.defaultBackupFlags, .backupEligible)
        XCTAssertTrue(key.random.derivesKeys)
        let counting = try make([(.counter, .text("zero")), (.enterpriseRPIDs, .text("a.example,b.example"))], .commandLine)
        XCTAssertTrue(counting.authenticatorConfiguration.countersZero)
        XCTAssertEqual(counting.authenticatorConfiguration.enterpriseAttestationRPIDs, ["a.example", "b.example"])
    }

    /// docs/rig-protocol.md's table is the declarations' (run this test to see the table to paste).
    func testTheRigProtocolPageListsTheDeclaredParameters() throws {
        let page = try String(contentsOfFile: Self.repositoryRoot + "/docs/rig-protocol.md", encoding: .utf8)
        let begin = "<!-- key options: made from KeyOption.all (KeySpecificationTests checks it) -->\n"
        let end = "<!-- end of key options -->"
        guard let start = page.range(of: begin), let stop = page.range(of: end, range: start.upperBound..<page.endIndex) else {
            return XCTFail("docs/rig-protocol.md has no key options table between \(begin) and \(end)")
        }
        XCTAssertEqual(String(page[start.upperBound..<stop.lowerBound]), KeyOption.rigParameterTable,
                       "docs/rig-protocol.md's table is not the declarations'; it should read:\n" + KeyOption.rigParameterTable)
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
}
