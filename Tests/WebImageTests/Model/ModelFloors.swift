import WebImage

/// The least a CI-length run of the model must reach, per 100 programs: for every catalog entry how often it was
/// drawn and what it reached, and for the program-wide cases how often they happened. The floors are about a fifth of
/// what a 100 s run on the loaded 2-core CI machine reaches (the table it prints), so a run that stops reaching
/// something fails rather than passing quietly.
enum ModelFloors {
    /// Which column of a row a floor is on.
    enum Column: String, CustomStringConvertible {
        case drawn, decided, successes, previews, notModified, reached

        func value(_ row: ModelCoverage.Row) -> Int {
            switch self {
            case .drawn: row.drawn
            case .decided: row.decided
            case .successes: row.successes
            case .previews: row.previews
            case .notModified: row.notModified
            case .reached: row.reached
            }
        }

        var description: String { rawValue }
    }

    struct Floor {
        let column: Column
        let per100Programs: Int
    }

    /// Every entry: drawn, and decided (options: a success or a failure other than a cancel) or reached (controls);
    /// some entries also on the column that shows they did what they are for.
    static func rows(fleet: Bool) -> [(String, Floor)] {
        var rows: [(String, Floor)] = []
        for entry in OptionDraws.catalog {
            rows.append((entry.id, Floor(column: .drawn, per100Programs: 20)))
            if entry.kind == .control {
                rows.append((entry.id, Floor(column: .reached, per100Programs: controlReached[entry.name] ?? 2)))
            } else {
                rows.append((entry.id, Floor(column: .decided, per100Programs: 10)))
            }
        }
        rows.append(("flag progressiveLoad", Floor(column: .previews, per100Programs: 3)))
        rows.append(("flag refreshCached", Floor(column: .notModified, per100Programs: 1)))
        rows.append(("decodeOption convertToSRGB", Floor(column: .successes, per100Programs: 5)))
        rows.append(("(plain)", Floor(column: .successes, per100Programs: 300)))
        return rows
    }

    /// What each control must reach per 100 programs (downloads cancelled, entries evicted, loads moved …).
    static let controlReached: [String: Int] = [
        "cancelLoad": 10, "priority": 2, "cancelAllLoads": 5, "cancelAllDownloads": 2, "cancelDownloadsForURL": 1,
        "memoryLimits": 2, "diskLimits": 1, "downloadsAheadOfDecoding": 1, "removeFailedURLs": 1,
    ]

    static func cases(fleet: Bool) -> [(String, Int)] {
        var cases: [(String, Int)] = [
            ("restart", 10), ("origin 404 answer", 15), ("origin 500 answer", 15), ("origin truncated answer", 12),
            ("origin no-store answer", 15), ("revalidation answered 304", 2),
            ("revalidation answered 200 with new bytes", 1), ("revalidation answered 404/500/truncated", 1),
            ("request rewritten by a modifier", 5), ("body decrypted by a decryptor", 5),
            ("body trickled in (previews possible)", 20), ("load through an ImageTarget", 20),
            ("success of a file with a colour profile", 100), ("colour conversion with lcms2", 5),
            ("colour file from a cache", 20),
        ]
        if fleet { cases += [("fleet program", 10), ("load on the second replica", 100)] }
        return cases
    }
}
