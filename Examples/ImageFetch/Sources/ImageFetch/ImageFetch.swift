import ArgumentParser
import Foundation
import WebImage

@main
struct ImageFetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image-fetch",
        abstract: "Download images through the WebImage SDK, optionally resize and re-encode them.",
        discussion: """
            Every URL goes through the SDK's ImageManager: the memory and disk caches first, then the HTTP \
            loader, so a second run over the same URLs is served from the disk cache. http, https, file and \
            data URLs work. Without --max-size and --format the downloaded bytes are written as they are.

            Examples:
              image-fetch https://example.com/a.jpg https://example.com/b.png
              image-fetch -i urls.txt --max-size 256x256 --format webp --quality 80 -o out
            """)

    @Argument(help: "Image URLs to fetch.")
    var urls: [String] = []

    @Option(
        name: .shortAndLong, help: "A file with one URL per line (blank lines and lines starting with # are skipped).")
    var input: String?

    @Option(name: .shortAndLong, help: "The folder to write images to (created if missing).")
    var output = "."

    @Option(help: ArgumentHelp("Shrink images to fit inside this size; never enlarges.", valueName: "WxH"))
    var maxSize: PixelSize?

    @Option(help: "Re-encode to this format (default: keep the source format).")
    var format: OutputFormat?

    @Option(help: ArgumentHelp("Quality for lossy formats (jpeg, webp, avif).", valueName: "1-100"))
    var quality = 85

    @Option(help: "Downloads and encodes running at once.")
    var concurrency = 4

    @Option(help: "The disk cache folder (default: ~/.cache/image-fetch, or under $XDG_CACHE_HOME).")
    var cacheDir: String?

    @Option(help: "When to draw a progress bar on stderr (auto: on a terminal, for more than one URL).")
    var progress: ProgressMode = .auto

    func validate() throws {
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be between 1 and 100.") }
        guard concurrency > 0 else { throw ValidationError("--concurrency must be at least 1.") }
        guard !urls.isEmpty || input != nil else { throw ValidationError("Give at least one URL or --input FILE.") }
    }

    func run() async throws {
        let list = try readURLs()
        let outputDirectory = URL(fileURLWithPath: output, isDirectory: true)
        try FileManager.default.createDirectory(at: outputDirectory, withIntermediateDirectories: true)

        let diskConfiguration =
            cacheDir.map { DiskCacheConfiguration(directory: URL(fileURLWithPath: $0, isDirectory: true)) }
            ?? DiskCacheConfiguration(namespace: "image-fetch")
        let plugins = registerDefaultPlugins(diskCache: DiskCache(configuration: diskConfiguration))
        // Local files are opt-in (a server must never read its own disk for a user's URL); a command-line tool
        // reads the files its user names.
        LoadersManager.shared.addLoader(FileLoader(rootDirectory: URL(fileURLWithPath: "/")))

        let fetcher = Fetcher(
            manager: .shared, outputDirectory: outputDirectory, maxSize: maxSize, format: format?.imageFormat,
            encodeOptions: ImageEncodeOptions(quality: Double(quality) / 100))
        let showBar = progress == .always || (progress == .auto && list.count > 1 && isatty(STDERR_FILENO) != 0)
        let bar = showBar ? ProgressBar(total: list.count) : nil

        let clock = ContinuousClock()
        let start = clock.now
        var outcomes: [Result<Fetcher.Outcome, any Error>?] = Array(repeating: nil, count: list.count)
        let names = Fetcher.uniqueBaseNames(for: list.map(\.url))
        await withTaskGroup(of: (Int, Result<Fetcher.Outcome, any Error>).self) { group in
            var next = 0
            func startNext() {
                guard next < list.count else { return }
                let index = next
                next += 1
                group.addTask {
                    do {
                        return (index, .success(try await fetcher.fetch(list[index].url, baseName: names[index])))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            for _ in 0..<min(concurrency, list.count) { startNext() }
            while let (index, outcome) = await group.next() {
                outcomes[index] = outcome
                bar?.advance(bytes: (try? outcome.get().bytes) ?? 0)
                startNext()
            }
        }
        bar?.finish()
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18

        var failures = 0
        for (entry, outcome) in zip(list, outcomes) {
            switch outcome {
            case .success(let done):
                print("ok    \(entry.text) -> \(done.file.path) (\(done.summary))")
            case .failure(let error):
                failures += 1
                FileHandle.standardError.write(Data("error \(entry.text): \(error)\n".utf8))
            case nil:
                break
            }
        }
        let sources = outcomes.compactMap { try? $0?.get().source }
        let count = { (source: String) in sources.filter { $0 == source }.count }
        print(
            "fetched \(sources.count) of \(list.count) in \(String(format: "%.2f", seconds)) s:"
                + " \(count("network")) from the network, \(count("memory")) from memory, \(count("disk")) from disk")
        print("memory cache: \(plugins.memoryCache.count) images, \(formatBytes(plugins.memoryCache.totalCost))")
        print(
            "disk cache: \(plugins.diskCache.totalCount()) files, \(formatBytes(plugins.diskCache.totalSize()))"
                + " in \(plugins.diskCache.directory.path)")
        if failures > 0 { throw ExitCode(1) }
    }

    /// The URLs from the arguments, then from `--input`, with the text they were given as.
    private func readURLs() throws -> [(text: String, url: URL)] {
        var texts = urls
        if let input {
            let contents = try String(contentsOfFile: input, encoding: .utf8)
            texts += contents.split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        guard !texts.isEmpty else { throw ValidationError("No URLs to fetch.") }
        return try texts.map { text in
            guard let url = URL(string: text), url.scheme != nil else {
                throw ValidationError("Not a URL: \(text)")
            }
            return (text, url)
        }
    }
}
