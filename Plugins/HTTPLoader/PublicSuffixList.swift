import Foundation

/// The public suffixes (`com`, `co.uk`, `github.io` …) under which nobody may set a cookie for all sites.
///
/// ``system`` reads Debian's `publicsuffix` package (`/usr/share/publicsuffix/public_suffix_list.dat`, installed
/// by `scripts/install-deps.sh`) on first use; when the file is missing it falls back to a small bundled list
/// (every top-level domain, as the list's default rule `*` says, plus common multi-label suffixes) and logs
/// nothing: a cookie the fallback does not know to refuse stays limited by the jar's per-domain bound. Rules in
/// the file are matched as written (IDN rules in Unicode; hosts in punycode then only meet the default rule).
/// Immutable and thread-safe once built.
public struct PublicSuffixList: Sendable {
    private let rules: Set<String>
    private let wildcards: Set<String>
    private let exceptions: Set<String>

    /// Where Debian and Ubuntu install the list.
    public static let systemPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// The system list, else the bundled fallback; loaded once, on first use.
    public static let system: PublicSuffixList = {
        if let text = try? String(contentsOfFile: systemPath, encoding: .utf8) {
            let list = PublicSuffixList(listText: text)
            if !list.rules.isEmpty { return list }
        }
        return bundled
    }()

    /// The small list used when the system's is missing.
    public static let bundled = PublicSuffixList(
        listText: """
            co.uk
            org.uk
            ac.uk
            gov.uk
            com.au
            net.au
            org.au
            co.jp
            ne.jp
            or.jp
            com.br
            com.cn
            co.in
            co.nz
            co.za
            com.mx
            com.tr
            github.io
            gitlab.io
            herokuapp.com
            appspot.com
            cloudfront.net
            azurewebsites.net
            blogspot.com
            netlify.app
            vercel.app
            pages.dev
            workers.dev
            s3.amazonaws.com
            """)

    /// Parses the list's format: one rule a line, `//` comments, `*.` wildcards, `!` exceptions.
    public init(listText: String) {
        var rules = Set<String>()
        var wildcards = Set<String>()
        var exceptions = Set<String>()
        for line in listText.split(whereSeparator: \.isNewline) {
            guard let rule = line.split(whereSeparator: \.isWhitespace).first, !rule.hasPrefix("//") else { continue }
            let lowered = rule.lowercased()
            if lowered.hasPrefix("!") {
                exceptions.insert(String(lowered.dropFirst()))
            } else if lowered.hasPrefix("*.") {
                wildcards.insert(String(lowered.dropFirst(2)))
            } else {
                rules.insert(lowered)
            }
        }
        self.rules = rules
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// The public suffix of `host` (lowercased, no trailing dot): the longest matching rule, `*` by default.
    public func publicSuffix(of host: String) -> String {
        let labels = host.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count > 1 else { return host.lowercased() }
        for start in labels.indices {
            let candidate = labels[start...].joined(separator: ".")
            if exceptions.contains(candidate) { return labels[(start + 1)...].joined(separator: ".") }
            if rules.contains(candidate) { return candidate }
            if start + 1 < labels.count, wildcards.contains(labels[(start + 1)...].joined(separator: ".")) {
                return candidate
            }
        }
        return String(labels[labels.count - 1])
    }

    /// True when `domain` is itself a public suffix (a cookie for it would reach every site under it).
    public func isPublicSuffix(_ domain: String) -> Bool {
        publicSuffix(of: domain) == domain.lowercased()
    }

    /// The registrable domain (public suffix plus one label) of `host`, or `host` itself when it is a suffix.
    public func registrableDomain(of host: String) -> String {
        let lowered = host.lowercased()
        let suffix = publicSuffix(of: lowered)
        guard lowered.count > suffix.count else { return lowered }
        let head = lowered.dropLast(suffix.count + 1)
        let label = head.split(separator: ".").last.map(String.init) ?? String(head)
        return label + "." + suffix
    }
}
