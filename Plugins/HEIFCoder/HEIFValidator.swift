import ImageCore

/// Fixed bounds on the work a HEIF container may ask for, whatever its size.
enum HEIFLimits {
    /// `iloc` extents over all items.
    static let maxExtents = 1 << 20
    /// Levels of derived images (`iden` of a `grid` of coded tiles is 2).
    static let maxDerivationDepth = 4
    /// Items reachable from the primary image through `dimg` (a 256 × 256 grid is 65,536 tiles).
    static let maxDerivedItems = 65_536
}

/// What the coder needs to know about the primary image once its item graph passed validation.
struct HEIFPrimaryImage {
    var id: UInt32
    var itemType: String
    /// The `ispe` size: stored, before `clap`, `irot` and `imir`.
    var storedSize: PixelSize
    /// `irot` and `imir` as the EXIF orientation that shows the stored pixels upright.
    var orientation: ImageOrientation
    /// Whether `clap` crops.
    var hasCrop: Bool
    /// The size shown once the transforms are applied (the crop as libheif rounds it).
    var displayedSize: PixelSize
    /// Coded items the decode will run (tiles, alpha included).
    var codedItemCount: Int
    /// Pixels of every coded item the decode will run.
    var codedPixelCount: Int
}

/// Checks a parsed ``HEIFItemGraph`` before libheif 1.15 sees it, so that libheif only ever meets a graph it
/// handles: the primary item exists and is a kind libheif decodes; no `dimg` reference cycle anywhere; every
/// reference names existing items; every `ipma` index names a property; every grid has exactly rows × columns
/// tiles, each present with data inside the file and a size that covers the grid; every coded item has an
/// `ispe`; `clap` has no zero denominator; and the work is bounded (derivation depth, item count, and the pixels
/// of every tile against the pixel budget). Any failure is a `badImageData` (or `imageTooLarge`) naming the cause.
struct HEIFValidator {
    let graph: HEIFItemGraph
    let reader: HEIFBoxReader
    /// The pixel budget: the primary's size, every grid's output, and (twice it) the pixels of all coded items.
    let maxPixelCount: Int

    /// Item types libheif 1.15 decodes (coded, and derived from other items).
    static let codedTypes: Set<String> = ["hvc1", "av01"]
    static let derivedTypes: Set<String> = ["grid", "iden", "iovl"]

    /// Validates the graph and describes the primary image.
    func validate() throws(ImageError) -> HEIFPrimaryImage {
        try checkPropertyIndices()
        try checkReferenceTargets()
        try checkNoDerivationCycle()
        guard let primary = graph.primaryID else { throw HEIFContainerError.malformed("no primary item ('pitm')") }
        guard let item = graph.items[primary] else {
            throw HEIFContainerError.malformed("the primary item \(primary) does not exist")
        }
        guard Self.codedTypes.contains(item.type) || Self.derivedTypes.contains(item.type) else {
            throw HEIFContainerError.malformed("the primary item is '\(item.type)', which libheif 1.15 cannot decode")
        }
        var visited = 0
        var pixels = 0
        var coded = 0
        let size = try checkImage(primary, depth: 0, visited: &visited, pixels: &pixels, coded: &coded)
        for alpha in graph.alphaItems(of: primary).prefix(1) {
            _ = try checkImage(alpha, depth: 0, visited: &visited, pixels: &pixels, coded: &coded)
        }
        let (overflow, over) = maxPixelCount.multipliedReportingOverflow(by: 2)
        if !over, pixels > overflow {
            throw ImageError(
                .imageTooLarge, stage: .decode,
                message: "HEIF: its coded items hold \(pixels) pixels, over the budget of \(maxPixelCount)")
        }
        let transforms = try HEIFTransforms(graph: graph, item: primary, storedSize: size)
        return HEIFPrimaryImage(
            id: primary, itemType: item.type, storedSize: size, orientation: transforms.orientation,
            hasCrop: transforms.crop != nil, displayedSize: transforms.displayedSize, codedItemCount: coded,
            codedPixelCount: pixels)
    }

    // MARK: Whole-graph checks

    private func checkPropertyIndices() throws(ImageError) {
        for (item, indices) in graph.associations {
            if let bad = indices.first(where: { $0 > graph.properties.count }) {
                throw HEIFContainerError.malformed(
                    "'ipma' gives item \(item) property \(bad), but 'ipco' has \(graph.properties.count)")
            }
        }
    }

    /// Derivation, alpha and thumbnail references must join existing items, and never an item to itself.
    private func checkReferenceTargets() throws(ImageError) {
        for (from, types) in graph.references {
            for type in ["dimg", "auxl", "thmb"] {
                guard let targets = types[type], !targets.isEmpty else { continue }
                guard graph.items[from] != nil else {
                    throw HEIFContainerError.malformed("a '\(type)' reference starts at missing item \(from)")
                }
                for target in targets {
                    guard graph.items[target] != nil else {
                        throw HEIFContainerError.malformed(
                            "item \(from) has a '\(type)' reference to missing item \(target)")
                    }
                    guard target != from else {
                        throw HEIFContainerError.malformed("item \(from) has a '\(type)' reference to itself")
                    }
                }
            }
        }
    }

    /// No cycle through `dimg` references anywhere in the file (libheif walks every top-level item).
    private func checkNoDerivationCycle() throws(ImageError) {
        // Iterative three-colour depth-first search: linear in items and references, no recursion.
        var state: [UInt32: UInt8] = [:]  // 1 on the stack, 2 done
        for start in graph.references.keys.sorted() where state[start] == nil {
            var stack: [(item: UInt32, next: Int)] = [(start, 0)]
            state[start] = 1
            while let top = stack.last {
                let targets = graph.references("dimg", from: top.item)
                if top.next < targets.count {
                    stack[stack.count - 1].next += 1
                    let target = targets[top.next]
                    switch state[target] {
                    case 1: throw HEIFContainerError.malformed("a 'dimg' reference cycle through item \(target)")
                    case 2: continue
                    default:
                        state[target] = 1
                        stack.append((target, 0))
                    }
                } else {
                    state[top.item] = 2
                    stack.removeLast()
                }
            }
        }
    }

    // MARK: One image

    /// Checks `item` and what it derives from; returns its size.
    private func checkImage(
        _ item: UInt32, depth: Int, visited: inout Int, pixels: inout Int, coded: inout Int
    ) throws(ImageError) -> PixelSize {
        guard depth <= HEIFLimits.maxDerivationDepth else {
            throw HEIFContainerError.malformed("derived images nest deeper than \(HEIFLimits.maxDerivationDepth)")
        }
        visited += 1
        guard visited <= HEIFLimits.maxDerivedItems else {
            throw HEIFContainerError.malformed("more than \(HEIFLimits.maxDerivedItems) items make the image")
        }
        guard let type = graph.items[item]?.type else { throw HEIFContainerError.malformed("item \(item) is missing") }
        switch type {
        case "hvc1", "av01":
            guard let size = graph.imageSize(of: item) else {
                throw HEIFContainerError.malformed("coded item \(item) has no 'ispe' size")
            }
            try checkPositive(size, item)
            try checkBudget(size, item)
            guard graph.property(type == "hvc1" ? "hvcC" : "av1C", of: item) != nil else {
                throw HEIFContainerError.malformed("coded item \(item) has no decoder configuration")
            }
            _ = try data(of: item)
            let (area, overflow) = size.width.multipliedReportingOverflow(by: size.height)
            let (sum, overflow2) = pixels.addingReportingOverflow(area)
            guard !overflow, !overflow2 else {
                throw ImageError(.imageTooLarge, stage: .decode, message: "HEIF: item sizes overflow")
            }
            pixels = sum
            coded += 1
            return size
        case "grid":
            return try checkGrid(item, depth: depth, visited: &visited, pixels: &pixels, coded: &coded)
        case "iden":
            let inputs = graph.references("dimg", from: item)
            guard inputs.count == 1 else {
                throw HEIFContainerError.malformed("'iden' item \(item) derives from \(inputs.count) images, not 1")
            }
            let size = try checkImage(inputs[0], depth: depth + 1, visited: &visited, pixels: &pixels, coded: &coded)
            return graph.imageSize(of: item) ?? size
        case "iovl":
            let inputs = graph.references("dimg", from: item)
            guard !inputs.isEmpty else { throw HEIFContainerError.malformed("'iovl' item \(item) has no inputs") }
            for input in inputs {
                _ = try checkImage(input, depth: depth + 1, visited: &visited, pixels: &pixels, coded: &coded)
            }
            let size = try overlaySize(item)
            try checkPositive(size, item)
            return size
        default:
            throw HEIFContainerError.malformed("item \(item) is '\(type)', which libheif 1.15 cannot decode")
        }
    }

    private func checkGrid(
        _ item: UInt32, depth: Int, visited: inout Int, pixels: inout Int, coded: inout Int
    ) throws(ImageError) -> PixelSize {
        let descriptor = try data(of: item)
        guard descriptor.count >= 8 else { throw HEIFContainerError.malformed("grid \(item) descriptor is too short") }
        let wide = descriptor[1] & 1 != 0
        let rows = Int(descriptor[2]) + 1
        let columns = Int(descriptor[3]) + 1
        guard descriptor.count >= (wide ? 12 : 8) else {
            throw HEIFContainerError.malformed("grid \(item) descriptor is too short")
        }
        func field(_ at: Int) -> Int {
            wide
                ? Int(descriptor[at]) << 24 | Int(descriptor[at + 1]) << 16 | Int(descriptor[at + 2]) << 8
                    | Int(descriptor[at + 3])
                : Int(descriptor[at]) << 8 | Int(descriptor[at + 1])
        }
        let output = PixelSize(width: field(4), height: field(wide ? 8 : 6))
        try checkPositive(output, item)
        try checkBudget(output, item)
        let tiles = graph.references("dimg", from: item)
        guard tiles.count == rows * columns else {
            throw HEIFContainerError.malformed(
                "grid \(item) is \(columns)x\(rows) = \(rows * columns) tiles, but \(tiles.count) tile(s) are referenced"
            )
        }
        var tileSize: PixelSize?
        for tile in tiles {
            guard let type = graph.items[tile]?.type, Self.codedTypes.contains(type) else {
                throw HEIFContainerError.malformed("tile \(tile) of grid \(item) is not a coded image")
            }
            let size = try checkImage(tile, depth: depth + 1, visited: &visited, pixels: &pixels, coded: &coded)
            if let tileSize, tileSize != size {
                throw HEIFContainerError.malformed("the tiles of grid \(item) differ in size")
            }
            tileSize = size
        }
        if let tileSize, tileSize.width * columns < output.width || tileSize.height * rows < output.height {
            throw HEIFContainerError.malformed(
                "grid \(item)'s \(columns)x\(rows) tiles of \(tileSize) do not cover its \(output) output")
        }
        try checkBudget(output, item)
        // The grid's own 'ispe' is its size as files and the corpus state it (libheif sizes by the descriptor).
        let size = graph.imageSize(of: item) ?? output
        try checkBudget(size, item)
        return size
    }

    private func overlaySize(_ item: UInt32) throws(ImageError) -> PixelSize {
        let bytes = try data(of: item)
        guard bytes.count >= 2 else { throw HEIFContainerError.malformed("overlay \(item) descriptor is too short") }
        let wide = bytes[1] & 1 != 0
        let at = 2 + 8
        guard bytes.count >= at + (wide ? 8 : 4) else {
            throw HEIFContainerError.malformed("overlay \(item) descriptor is too short")
        }
        func field(_ offset: Int) -> Int {
            wide
                ? Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                    | Int(bytes[offset + 3])
                : Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        }
        return PixelSize(width: field(at), height: field(at + (wide ? 4 : 2)))
    }

    /// Refuses, before any tile is looked at, an image over the pixel budget.
    private func checkBudget(_ size: PixelSize, _ item: UInt32) throws(ImageError) {
        let (area, overflow) = size.width.multipliedReportingOverflow(by: size.height)
        guard !overflow, area <= maxPixelCount else {
            throw ImageError(
                .imageTooLarge, stage: .decode,
                message: "HEIF: item \(item) is \(size), over the budget of \(maxPixelCount) pixels")
        }
    }

    private func checkPositive(_ size: PixelSize, _ item: UInt32) throws(ImageError) {
        guard size.width > 0, size.height > 0 else {
            throw HEIFContainerError.malformed("item \(item) declares size \(size)")
        }
    }

    /// The bytes of `item` (every extent inside the file or `idat`), copied when small; the check alone for
    /// large coded data (at most 64 bytes are returned for those, which is all a descriptor needs).
    private func data(of item: UInt32) throws(ImageError) -> [UInt8] {
        guard let location = graph.locations[item] else {
            throw HEIFContainerError.malformed("item \(item) has no data location (a missing tile or image)")
        }
        guard location.dataReferenceIndex == 0 else {
            throw HEIFContainerError.malformed("item \(item)'s data is in another file")
        }
        guard !location.extents.isEmpty else { throw HEIFContainerError.malformed("item \(item) has no extents") }
        let container: Range<Int>
        switch location.constructionMethod {
        case 0: container = 0..<graph.fileLength
        case 1:
            guard let idat = graph.idat else {
                throw HEIFContainerError.malformed("item \(item) is in a missing 'idat'")
            }
            container = idat
        default:
            throw HEIFContainerError.malformed("item \(item) uses construction method \(location.constructionMethod)")
        }
        var bytes: [UInt8] = []
        for extent in location.extents {
            let size = UInt64(container.count)
            guard extent.offset <= size else {
                throw HEIFContainerError.malformed("item \(item)'s data starts past the end of the file (truncated)")
            }
            let length = extent.length == 0 ? size - extent.offset : extent.length
            guard length <= size - extent.offset else {
                throw HEIFContainerError.malformed("item \(item)'s data runs past the end of the file (truncated)")
            }
            guard length > 0 else { throw HEIFContainerError.malformed("item \(item) has an empty extent") }
            if bytes.count < 64 {
                let start = container.lowerBound + Int(extent.offset)
                let take = min(Int(length), 64 - bytes.count)
                bytes += UnsafeRawBufferPointer(rebasing: reader.bytes[start..<start + take])
            }
        }
        return bytes
    }
}
