import SignalBridge
import XCTest

/// The origin / RP ID rule (WebAuthn §5.1.3 as the Signal API applies it), the Public Suffix
/// List's algorithm, and IDN names in their ASCII form.
final class SignalOriginTests: XCTestCase {
    /// A few rules of each kind, as the list writes them (a Unicode one included).
    let suffixes = PublicSuffixList(rules: """
        // ===BEGIN ICANN DOMAINS===
        com
        uk
        co.uk
        *.ck
        !www.ck
        jp
        *.kawasaki.jp
        !city.kawasaki.jp
        公司.cn
        cn
        // ===BEGIN PRIVATE DOMAINS===
        github.io
        """)

    func testPunycodeMatchesRFC3492() {
        XCTAssertEqual(DomainName.ascii("bücher.example"), "xn--bcher-kva.example")
        XCTAssertEqual(DomainName.ascii("München.DE"), "xn--mnchen-3ya.de", "ASCII letters are lowercased first")
        XCTAssertEqual(DomainName.ascii("公司.cn"), "xn--55qx5d.cn")
        XCTAssertEqual(DomainName.ascii("Example.COM"), "example.com")
        XCTAssertNil(DomainName.ascii(""))
    }

    func testPublicSuffixAlgorithm() {
        XCTAssertEqual(suffixes.publicSuffix(of: "example.com"), "com")
        XCTAssertEqual(suffixes.publicSuffix(of: "a.b.example.co.uk"), "co.uk", "the longest rule wins")
        XCTAssertEqual(suffixes.publicSuffix(of: "foo.ck"), "foo.ck", "a wildcard takes one label")
        XCTAssertEqual(suffixes.publicSuffix(of: "www.ck"), "ck", "an exception cuts its first label")
        XCTAssertEqual(suffixes.publicSuffix(of: "a.city.kawasaki.jp"), "kawasaki.jp")
        XCTAssertEqual(suffixes.publicSuffix(of: "example.unknowntld"), "unknowntld", "no rule: the last label")
        XCTAssertEqual(suffixes.publicSuffix(of: "shop.xn--55qx5d.cn"), "xn--55qx5d.cn", "Unicode rules in ASCII")
        for suffix in ["com", "co.uk", "foo.ck", "github.io", "unknowntld", "xn--55qx5d.cn"] {
            XCTAssertTrue(suffixes.isPublicSuffix(suffix), suffix)
        }
        for domain in ["example.com", "www.ck", "user.github.io", "city.kawasaki.jp"] {
            XCTAssertFalse(suffixes.isPublicSuffix(domain), domain)
        }
        XCTAssertTrue(suffixes.asciiRules.contains("*.ck"))
        XCTAssertTrue(suffixes.asciiRules.contains("!www.ck"))
    }

    func testTheRealDebianList() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: PublicSuffixList.debianPath),
                          "Debian's publicsuffix package is not installed")
        let list = try PublicSuffixList.load()
        XCTAssertGreaterThan(list.ruleCount, 5000)
        XCTAssertTrue(list.isPublicSuffix("co.uk"))
        XCTAssertTrue(list.isPublicSuffix("github.io"))
        XCTAssertFalse(list.isPublicSuffix("example.co.uk"))
    }

    func testAMissingListNamesThePackage() {
        XCTAssertThrowsError(try PublicSuffixList.load(path: "/nonexistent/list.dat")) { error in
            XCTAssertTrue((error as? SignalFailure)?.message.contains("publicsuffix") ?? false, "\(error)")
        }
    }

    private func rpID(_ rpID: String, from origin: String) -> Result<String, SignalFailure> {
        do throws(SignalFailure) {
            return .success(try SignalOrigin(origin).relyingPartyID(rpID, publicSuffixes: suffixes))
        } catch {
            return .failure(error)
        }
    }

    private func assertRefused(_ rp: String, from origin: String, line: UInt = #line) {
        guard case .failure(let error) = rpID(rp, from: origin) else {
            return XCTFail("\(rp) from \(origin) was accepted", line: line)
        }
        XCTAssertEqual(error.name, "SecurityError", "\(error)", line: line)
    }

    func testTheHostOrARegistrableSuffixOfIt() {
        XCTAssertEqual(try rpID("example.com", from: "https://example.com").get(), "example.com")
        XCTAssertEqual(try rpID("example.com", from: "https://login.example.com").get(), "example.com")
        XCTAssertEqual(try rpID("login.example.com", from: "https://login.example.com:8443").get(), "login.example.com",
                       "a port does not matter")
        XCTAssertEqual(try rpID("Example.COM", from: "https://example.com").get(), "example.com")
        XCTAssertEqual(try rpID("localhost", from: "http://localhost:8765").get(), "localhost")
        XCTAssertEqual(try rpID("user.github.io", from: "https://user.github.io").get(), "user.github.io")
        XCTAssertEqual(try rpID("github.io", from: "https://github.io").get(), "github.io", "the host itself, suffix or not")
        assertRefused("kawasaki.jp", from: "https://a.b.kawasaki.jp")         // above the host's public suffix b.kawasaki.jp
        XCTAssertEqual(try rpID("city.kawasaki.jp", from: "https://www.city.kawasaki.jp").get(), "city.kawasaki.jp")
        assertRefused("other.com", from: "https://example.com")
        assertRefused("ample.com", from: "https://example.com")               // a suffix, but not at a label boundary
        assertRefused("login.example.com", from: "https://example.com")       // more specific than the host
        assertRefused("com", from: "https://example.com")                     // a public suffix
        assertRefused("co.uk", from: "https://shop.example.co.uk")
        assertRefused("github.io", from: "https://user.github.io")            // a private-section suffix
        assertRefused("example.com.", from: "https://example.com")            // not a valid domain
        assertRefused("exa mple.com", from: "https://example.com")
        assertRefused("", from: "https://example.com")
    }

    func testInsecureOriginsAndAddressesAreRefused() {
        assertRefused("example.com", from: "http://example.com")
        assertRefused("localhost", from: "http://127.0.0.1:8765")              // the e2e negative: an address, not a domain
        assertRefused("127.0.0.1", from: "http://127.0.0.1")
        assertRefused("127.0.0.1", from: "https://127.0.0.1")
        assertRefused("1", from: "https://[::1]:8443")
        assertRefused("example.com", from: "https://0x7f.example.com.0x1")    // ends in a number: an IPv4 host
        assertRefused("localhost", from: "ftp://localhost")
        assertRefused("localhost", from: "chrome-extension://abc")
        XCTAssertEqual(try rpID("app.localhost", from: "http://app.localhost:8080").get(), "app.localhost")
        assertRefused("localhost", from: "http://app.localhost")               // a TLD to the list's default rule
    }

    func testOriginsAreSerializedOriginsOnly() {
        for text in ["https://example.com/", "https://example.com/path", "https://user@example.com", "https://example.com:0",
                     "https://example.com:99999", "https://example.com:x", "example.com", "https://", "https://exämple.com",
                     "https://example.com?q", "https://[::1"] {
            XCTAssertThrowsError(try SignalOrigin(text), text)
        }
        // Issue 34: only the spelling a browser serializes (`new URL(o).origin` gives it back unchanged).
        for text in ["https://..example.com", "https://.example.com", "https://example..com", "https://example.com.",
                     "HTTPS://x.example.com", "https://X.example.com", "https://x.example.com:+443", "https://x.example.com:0443",
                     "https://x.example.com:443", "http://localhost:80", "https://x.example.com:", "https://%78.example.com",
                     "https://a b.example.com", "http://127.1", "http://0x7f.0.0.1", "http://127.000.0.1", "http://[::FFFF:1]",
                     "http://[0:0::1]", "http://[::127.0.0.1]", "https://x.example.com:8443:1"] {
            XCTAssertThrowsError(try SignalOrigin(text), text) {
                guard case .security = $0 as? SignalFailure else { return XCTFail("\(text): \($0)") }
            }
        }
        for text in ["https://example.com", "https://a_b.example.com:8443", "http://localhost:8080", "http://127.0.0.1",
                     "http://[::1]:8080", "https://xn--bcher-kva.example", "https://1.2.3.4:1"] {
            XCTAssertEqual(try SignalOrigin(text).serialized, text)
        }
    }

    func testIDNRelyingPartyIDs() {
        XCTAssertEqual(try rpID("bücher.example", from: "https://xn--bcher-kva.example").get(), "xn--bcher-kva.example")
        XCTAssertEqual(try rpID("xn--bcher-kva.example", from: "https://shop.xn--bcher-kva.example").get(), "xn--bcher-kva.example")
        assertRefused("公司.cn", from: "https://shop.xn--55qx5d.cn")              // a Unicode public suffix
        assertRefused("bucher.example", from: "https://xn--bcher-kva.example")
    }
}
