import Foundation

/// The Public Suffix List (https://publicsuffix.org/list/), read from Debian's `publicsuffix`
/// package. A signal's RP ID must not be a public suffix: a page on `evil.github.io` may not
/// name `github.io`, nor one on `x.co.uk` name `co.uk` (WebAuthn §5.1.3 and §13.4.2 leave the
/// registrable-domain rule to the browser; Chromium consults this list, ICANN and private
/// sections both, and so does Latchkey).
public struct PublicSuffixList: Sendable {
    /// Where Debian's `publicsuffix` package puts the list.
    public static let debianPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// Rules in ASCII (Unicode rules converted with `DomainName.ascii`), without the `!` and
    /// `*.` markers, in three sets.
    private let plain: Set<String>
    private let wildcards: Set<String>   // "*.ck" stored as "ck"
    private let exceptions: Set<String>  // "!www.ck" stored as "www.ck"

    /// The rules, one per line in the list's own syntax; `//` comments and blank lines are
    /// skipped, and a rule ends at the first whitespace.
    public init(rules text: String) {
        var plain = Set<String>(), wildcards = Set<String>(), exceptions = Set<String>()
        for line in text.split(whereSeparator: \.isNewline) {
            guard let token = line.split(whereSeparator: \.isWhitespace).first,
                  !token.hasPrefix("//") else { continue }
            var rule = Substring(token)
            let isException = rule.hasPrefix("!")
            if isException { rule = rule.dropFirst() }
            let isWildcard = rule.hasPrefix("*.")
            if isWildcard { rule = rule.dropFirst(2) }
            guard let ascii = DomainName.ascii(String(rule)) else { continue }
            if isException { exceptions.insert(ascii) } else if isWildcard { wildcards.insert(ascii) } else { plain.insert(ascii) }
        }
        self.plain = plain
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// Reads the list from `path`; a missing or unreadable file is an error that names the
    /// Debian package.
    public static func load(path: String = debianPath) throws(SignalFailure) -> PublicSuffixList {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else {
            throw .internal("the public suffix list \(path) cannot be read: install Debian's publicsuffix package "
                + "(sudo apt-get install publicsuffix)")
        }
        return PublicSuffixList(rules: String(decoding: data, as: UTF8.self))
    }

    public var ruleCount: Int { plain.count + wildcards.count + exceptions.count }

    /// The rules in the list's syntax, ASCII, sorted (for the extension, which has no file access).
    public var asciiRules: [String] {
        (plain.map { $0 } + wildcards.map { "*." + $0 } + exceptions.map { "!" + $0 }).sorted()
    }

    /// The public suffix of an ASCII, lowercase `domain` by the list's algorithm: an exception
    /// rule wins (its suffix is the rule minus its first label); else the longest matching rule
    /// (a wildcard matches exactly one label); no match means the last label (the `*` rule).
    public func publicSuffix(of domain: String) -> String {
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var longest = labels.count >= 1 ? 1 : 0
        for start in 0..<labels.count {
            let suffix = labels[start...].joined(separator: ".")
            let count = labels.count - start
            if exceptions.contains(suffix) { return labels[(start + 1)...].joined(separator: ".") }
            if plain.contains(suffix) { longest = max(longest, count) }
            if start > 0, wildcards.contains(suffix) { longest = max(longest, count + 1) }
        }
        return labels[(labels.count - longest)...].joined(separator: ".")
    }

    /// True when `domain` is itself a public suffix (nothing can be registered as it).
    public func isPublicSuffix(_ domain: String) -> Bool {
        publicSuffix(of: domain) == domain
    }
}
