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
    static func rows() -> [(String, Floor)] {
        var rows: [(String, Floor)] = []
        for entry in OptionDraws.catalog {
            if entry.kind == .control {
                // Wave controls are drawn per wave (12 %), the others per load.
                let perWave = OptionDraws.waveControls.contains { $0.rawValue == entry.name }
                rows.append((entry.id, Floor(column: .drawn, per100Programs: perWave ? 10 : 40)))
                rows.append((entry.id, Floor(column: .reached, per100Programs: controlReached[entry.name] ?? 2)))
            } else {
                rows.append((entry.id, Floor(column: .drawn, per100Programs: 40)))
                rows.append((entry.id, Floor(column: .decided, per100Programs: 15)))
            }
        }
        rows.append(("flag progressiveLoad", Floor(column: .previews, per100Programs: previews)))
        rows.append(("flag refreshCached", Floor(column: .notModified, per100Programs: 7)))
        // 8.6–12.5 revalidations answered 304 per 100 programs (two 300 s runs, 11-30): a fifth of the lower.
        rows.append(("flag refreshStale", Floor(column: .notModified, per100Programs: 2)))
        rows.append(("decodeOption convertToSRGB", Floor(column: .successes, per100Programs: 24)))
        rows.append(("(plain)", Floor(column: .successes, per100Programs: 290)))
        rows.append(("(data load)", Floor(column: .successes, per100Programs: dataLoads)))
        return rows
    }

    /// Previews progressive loads get per 100 programs.
    static let previews = 4

    /// Data loads that got their bytes per 100 programs.
    static let dataLoads = 110

    /// What each control must reach per 100 programs: loads it cancelled (its own load's cancel, `cancelAll`'s
    /// running loads), downloads a loader's cancel ended, loads whose priority changed while they waited, memory
    /// entries evicted, disk entries removed, loads waiting for admission when the bound changed, failed URLs
    /// removed, hit promotion switched on.
    static let controlReached: [String: Int] = [
        "cancelLoad": 10, "priority": 13, "cancelAllLoads": 30, "cancelAllDownloads": 14, "cancelDownloadsForURL": 3,
        "memoryLimits": 29, "diskLimits": 12, "downloadsAheadOfDecoding": 2, "removeFailedURLs": 1,
        "cacheHitPromotion": 1,
    ]

    static func cases(fleet: Bool) -> [(String, Int)] {
        var cases: [(String, Int)] = [
            ("restart", 10), ("origin 404 answer", 11), ("origin 500 answer", 28), ("origin truncated answer", 10),
            ("origin no-store answer", 13), ("origin slow answer", 11), ("revalidation answered 304", 11),
            ("revalidation answered 200 with new bytes", 7), ("revalidation answered 500", 1),
            ("request rewritten by a modifier", 23), ("body decrypted by a decryptor", 9),
            ("body trickled in (previews possible)", 110), ("load through an ImageTarget", 100),
            ("success of a file with a colour profile", 380), ("colour conversion with lcms2", 8),
            ("colour file from a cache", 250), ("transfer refused by the header check", 4),
            // How many loads outlast their timeout depends on the machine's speed as much as on the draws: CI runs
            // reached 9–11 in 141–177 programs, an idle run 5 in 186 (2.7 per 100), so the floor is a fifth of the
            // usual rate, as the others are.
            ("load ended by its load timeout", 1),
            // 54 programs and 1,482 refused stores in 274 programs (an idle 100 s run, 12-01): a fifth of each.
            ("program on a failing disk", 4), ("store refused by a failing disk", 100),
        ]
        if fleet { cases += [("fleet program", 5), ("load on the second replica", 150)] }
        return cases
    }
}
