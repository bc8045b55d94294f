import Glibc

/// A website's origin as browsers serialize it (`https://site.example`, `http://localhost:8080`),
/// and the rule that decides which RP IDs it may name in a signal. The extension's background
/// script applies the same rule (extension/rpid.js); the host checks again, never trusting it.
public struct SignalOrigin: Equatable, Sendable {
    public let scheme: String
    /// Lowercase ASCII, as browsers give hosts in origins (IDN as `xn--`).
    public let host: String
    public let port: Int?

    /// Parses a serialized origin as browsers write it — exactly what `new URL(origin).origin`
    /// gives back, nothing else: scheme `https` or `http` in lowercase, a lowercase ASCII host
    /// (labels of letters, digits, `-` and `_`, none empty; an IPv4 address in dotted decimal; an
    /// IPv6 address in its canonical bracketed form), and a port only when it is not the
    /// scheme's default, in decimal without sign or leading zero. No path, user info, query or
    /// trailing slash. The journal records what this accepted, so it accepts one spelling of
    /// each origin (issue 34: `https://..example.com`, `HTTPS://…`, `:+443` and `:0443` were taken).
    public init(_ text: String) throws(SignalFailure) {
        func refuse(_ why: String) -> SignalFailure { .security("origin '\(text.prefix(200))' \(why)") }
        guard text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw refuse("is not an ASCII serialized origin")
        }
        let parts = text.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw refuse("has no scheme") }
        guard parts[0] == "https" || parts[0] == "http" else {
            throw refuse(parts[0].lowercased() == "https" || parts[0].lowercased() == "http"
                         ? "is not serialized (the scheme is lowercase in an origin)" : "is not a web origin (https or http)")
        }
        scheme = String(parts[0])
        var authority = Substring(parts[1])
        guard !authority.contains(where: { "/?#@\\%".contains($0) }) else {
            throw refuse("is not an origin (it has a path, query, user info or an escape)")
        }
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw refuse("has an unclosed IPv6 literal") }
            let rest = authority[authority.index(after: close)...]
            if rest.hasPrefix(":") { portText = rest.dropFirst() } else if !rest.isEmpty { throw refuse("has a bad port") }
            authority = authority[...close]
            guard Self.isCanonicalIPv6(authority.dropFirst().dropLast()) else {
                throw refuse("has an IPv6 address not in the form browsers serialize")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            portText = authority[authority.index(after: colon)...]
            authority = authority[..<colon]
        }
        var port: Int?
        if let portText {
            guard let first = portText.first, first != "0", portText.allSatisfy({ $0 >= "0" && $0 <= "9" }), portText.count <= 5,
                  let value = Int(portText), (1...65535).contains(value) else {
                throw refuse("has a bad port (1 to 65535, in decimal)")
            }
            guard value != (scheme == "https" ? 443 : 80) else {
                throw refuse("is not serialized (an origin leaves out the scheme's default port \(value))")
            }
            port = value
        }
        guard !authority.isEmpty else { throw refuse("has no host") }
        if !authority.hasPrefix("[") {
            let labels = authority.split(separator: ".", omittingEmptySubsequences: false)
            guard authority.utf8.count <= 253, labels.allSatisfy({ label in
                (1...63).contains(label.utf8.count)
                    && label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
            }) else {
                throw refuse("has a host that is not a serialized one (lowercase letters, digits, '-' and '_' in labels, none empty)")
            }
            if let last = labels.last, last.allSatisfy({ $0 >= "0" && $0 <= "9" }) || last.hasPrefix("0x") {
                // Ends in a number: an IPv4 address to the URL parser, which writes it as a dotted quad.
                guard labels.count == 4, labels.allSatisfy({ label in
                    label.allSatisfy({ $0 >= "0" && $0 <= "9" }) && (label == "0" || label.first != "0") && Int(label).map { $0 <= 255 } == true
                }) else { throw refuse("has an IPv4 address not in dotted decimal") }
            }
        }
        host = String(authority)
        self.port = port
    }

    /// `address` (between the brackets) as inet_ntop writes it back: lowercase, `::` for the
    /// longest run of zero groups, no leading zeros — the URL standard's IPv6 serializer, for the
    /// addresses without an embedded IPv4 part (which it writes in hex).
    static func isCanonicalIPv6(_ address: Substring) -> Bool {
        guard !address.contains("."), address.utf8.count < 46 else { return false }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, String(address), &bytes) == 1 else { return false }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &bytes, &buffer, socklen_t(buffer.count)) != nil else { return false }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == address
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
