import Foundation
import WebImage

/// How often the model drew each catalog entry and what it reached, and how often the cases it claims to check
/// happened; printed as a table at the end of a run, with a floor per row that a CI-length run must reach.
struct ModelCoverage: CustomStringConvertible {
    /// One catalog entry's (or control's) draws and what the loads that drew it ended with.
    struct Row {
        var drawn = 0
        var downloaded = 0
        var memory = 0
        var disk = 0
        var failures: [String: Int] = [:]
        var cancelled = 0
        var previews = 0
        var notModified = 0
        /// For a control: what it reached (downloads cancelled, entries evicted, loads it moved or ended…).
        var reached = 0

        var successes: Int { downloaded + memory + disk }
        /// Loads that ended with a result the option could shape: a success or a failure other than a cancel.
        var decided: Int { successes + failures.values.reduce(0, +) }

        static func += (lhs: inout Row, rhs: Row) {
            lhs.drawn += rhs.drawn
            lhs.downloaded += rhs.downloaded
            lhs.memory += rhs.memory
            lhs.disk += rhs.disk
            lhs.failures.merge(rhs.failures, uniquingKeysWith: +)
            lhs.cancelled += rhs.cancelled
            lhs.previews += rhs.previews
            lhs.notModified += rhs.notModified
            lhs.reached += rhs.reached
        }
    }

    var rows: [String: Row] = [:]
    /// Program-wide cases (origin answers, restarts, fleet programs…).
    var cases: [String: Int] = [:]

    mutating func count(_ spec: LoadSpec, _ record: LoadRecord) {
        let (result, _, _, _) = record.summary
        var ids = spec.drawn
        if spec.isPlain { ids.append("(plain)") }
        // A data load counts on a row of its own: what its options shape is an image's.
        if spec.dataOnly { ids = ["(data load)"] }
        for id in ids {
            var row = rows[id] ?? Row()
            row.drawn += 1
            if let data = record.data {
                if data.isNotModified { row.notModified += 1 }
                switch data.cacheType {
                case .none: row.downloaded += 1
                case .memory: row.memory += 1
                default: row.disk += 1
                }
            }
            row.previews += record.previews.count
            switch result {
            case .success(let loaded)?:
                if loaded.isNotModified { row.notModified += 1 }
                if loaded.cacheType == .memory {
                    row.memory += 1
                } else if loaded.cacheType == .none {
                    row.downloaded += 1
                } else {
                    row.disk += 1
                }
            case .failure(let error)?:
                if error.code == .cancelled {
                    row.cancelled += 1
                } else {
                    row.failures["\(error.code)", default: 0] += 1
                }
            case nil: break
            }
            rows[id] = row
        }
    }

    /// Counts a control used on a wave and what it reached.
    mutating func count(_ control: LoadControl, reached: Int) {
        rows["control \(control)", default: Row()].drawn += 1
        rows["control \(control)", default: Row()].reached += reached
    }

    mutating func reach(_ control: LoadControl, _ count: Int = 1) {
        rows["control \(control)", default: Row()].reached += count
    }

    mutating func note(_ name: String, _ count: Int = 1) { cases[name, default: 0] += count }

    static func += (lhs: inout ModelCoverage, rhs: ModelCoverage) {
        for (id, row) in rhs.rows { lhs.rows[id, default: Row()] += row }
        for (name, count) in rhs.cases {
            // A case named "  largest …" is a maximum, the others are counts.
            lhs.cases[name] =
                name.hasPrefix("  largest") ? max(lhs.cases[name] ?? 0, count) : (lhs.cases[name] ?? 0) + count
        }
    }

    /// The table: one line per catalog entry in catalog order, then the program-wide cases.
    var description: String {
        var lines = [
            "entry | drawn | downloaded | memory | disk | failed (by code) | cancelled | previews | 304 | reached",
            "---|---|---|---|---|---|---|---|---|---",
        ]
        let ids = OptionDraws.catalog.map(\.id) + ["(plain)", "(data load)"]
        for id in ids {
            let row = rows[id] ?? Row()
            let failures = row.failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                separator: ", ")
            lines.append(
                "\(id) | \(row.drawn) | \(row.downloaded) | \(row.memory) | \(row.disk) | \(failures.isEmpty ? "-" : failures)"
                    + " | \(row.cancelled) | \(row.previews) | \(row.notModified) | \(row.reached)")
        }
        lines.append("")
        lines.append("case | count")
        lines.append("---|---")
        for (name, count) in cases.sorted(by: { $0.key < $1.key }) { lines.append("\(name) | \(count)") }
        return lines.joined(separator: "\n")
    }
}
