/// A website's origin as browsers serialize it (`https://site.example`, `http://localhost:8080`),
/// and the rule that decides which RP IDs it may name in a signal. The extension's background
/// script applies the same rule (extension/rpid.js); the host checks again, never trusting it.
public struct SignalOrigin: Equatable, Sendable {
    public let scheme: String
    /// Lowercase ASCII, as browsers give hosts in origins (IDN as `xn--`).
    public let host: String
    public let port: Int?

    /// Parses a serialized origin: scheme `https` or `http`, a host, an optional port, nothing
    /// else (no path, user info, query or trailing slash).
    public init(_ text: String) throws(SignalFailure) {
        func refuse(_ why: String) -> SignalFailure { .security("origin '\(text.prefix(200))' \(why)") }
        guard text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw refuse("is not an ASCII serialized origin")
        }
        let parts = text.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw refuse("has no scheme") }
        scheme = parts[0].lowercased()
        guard scheme == "https" || scheme == "http" else { throw refuse("is not a web origin (https or http)") }
        var authority = Substring(parts[1])
        guard !authority.contains(where: { "/?#@\\".contains($0) }) else {
            throw refuse("is not an origin (it has a path, query or user info)")
        }
        var port: Int?
        if authority.hasPrefix("[") {
            // An IPv6 literal; refused by `isSecure`'s domain rule below, but parsed for the message.
            guard let close = authority.firstIndex(of: "]") else { throw refuse("has an unclosed IPv6 literal") }
            let rest = authority[authority.index(after: close)...]
            if rest.hasPrefix(":") { port = Int(rest.dropFirst()) } else if !rest.isEmpty { throw refuse("has a bad port") }
            authority = authority[...close]
        } else if let colon = authority.lastIndex(of: ":") {
            guard let value = Int(authority[authority.index(after: colon)...]), (1...65535).contains(value) else {
                throw refuse("has a bad port")
            }
            port = value
            authority = authority[..<colon]
        }
        guard !authority.isEmpty else { throw refuse("has no host") }
        host = authority.lowercased()
        self.port = port
    }

    /// An IPv4 or IPv6 literal host: no RP ID can be a domain suffix of it. A host whose last
    /// label is a number (decimal, or `0x` hex) is an IPv4 address to the URL standard's host
    /// parser ("ends in a number"), whatever its other labels are.
    public var hostIsIPAddress: Bool {
        if host.hasPrefix("[") { return true }
        guard let last = host.split(separator: ".", omittingEmptySubsequences: false).last, !last.isEmpty else { return false }
        if last.allSatisfy({ $0 >= "0" && $0 <= "9" }) { return true }
        return last.hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit)
    }

    /// `localhost` or a name under it (RFC 6761: it never leaves the machine).
    public var isLocalhost: Bool { host == "localhost" || host.hasSuffix(".localhost") }

    /// Signals are taken from https pages, and from http only on localhost (where browsers run
    /// WebAuthn for development). `http://127.0.0.1` is a secure context to a browser, but its
    /// host is an address, and an RP ID is a domain: refused.
    public var isSecure: Bool {
        (scheme == "https" || (scheme == "http" && isLocalhost)) && !hostIsIPAddress
    }

    /// The serialized form, as the journal records it.
    public var serialized: String { scheme + "://" + host + (port.map { ":\($0)" } ?? "") }

    /// Checks that this origin may send a signal naming `rpID`, and returns the RP ID as the
    /// store keys it (ASCII, lowercase). WebAuthn §5.1.3 (the RP ID of `create()`/`get()`), as
    /// the Signal API applies it: a secure origin, and HTML's "is a registrable domain suffix of
    /// or is equal to" — the host itself (even one that is a public suffix, like `localhost`), or
    /// a suffix of it at a label boundary that is neither a public suffix nor a suffix of the
    /// host's public suffix (`kawasaki.jp` is not a public suffix, but for `a.b.kawasaki.jp`,
    /// whose public suffix is `b.kawasaki.jp` under `*.kawasaki.jp`, it spans registrations).
    public func relyingPartyID(_ rpID: String, publicSuffixes: PublicSuffixList) throws(SignalFailure) -> String {
        guard isSecure else {
            throw .security("signals are taken from https origins and http://localhost only, not \(serialized)")
        }
        guard let ascii = DomainName.ascii(rpID), Self.isValidDomain(ascii) else {
            throw .security("rpId '\(rpID.prefix(100))' is not a valid domain")
        }
        guard ascii != host else { return ascii }
        guard host.hasSuffix("." + ascii) else {
            throw .security("rpId '\(ascii)' is not \(host) or a registrable suffix of it")
        }
        guard !publicSuffixes.isPublicSuffix(ascii),
              !publicSuffixes.publicSuffix(of: host).hasSuffix("." + ascii) else {
            throw .security("rpId '\(ascii)' is a public suffix (or above \(host)'s): no site may claim it")
        }
        return ascii
    }

    /// ASCII domain syntax: labels of 1–63 letters, digits and hyphens, not starting or ending
    /// with a hyphen, at most 253 characters, no empty label (so no trailing dot).
    static func isValidDomain(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        }
    }
}
