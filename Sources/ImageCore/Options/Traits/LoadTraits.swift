import Foundation

/// The declarations a load's options make active, and the rule each seam of the main line takes from them: the one
/// place where "what an option changes" becomes "what a stage does".
///
/// An option is active when it is set away from its default (a flag set, a context key holding a value, a decode
/// option that differs from ``ImageDecodeOptions``' default and has an effect there), and, for an option declared
/// to act only with a flag (``OptionTraits/actsOnlyWith``), when the load sets that flag too. Built once per load that
/// misses the memory level (a memory hit needs only its key, which the key builder makes from the same
/// declarations: ``OptionTraits/KeyRule``).
///
/// | seam | rule |
/// |---|---|
/// | failed-URL list | a status verdict (404, 410) blocks only when no active option changes the bytes fetched; a verdict on the bytes (undecodable, too large, no coder) only when none changes the bytes, the pixels or a budget |
/// | decoded original | serves only when every active pixel option applies to a decoded image |
/// | download | an option with `.isolates` gives the load its own download; `.field` options are fields of the download's key |
/// | previews | get the whole decode: the same decode options and the same steps after the coder as the final image |
/// | miss outcome | a key whose product was refused by a budget or a transform is `notStored`; a key left by a cancel is `abandoned` |
struct LoadTraits: Sendable {
    /// Every active option's name and traits (for diagnostics and tests).
    let active: [(name: String, traits: OptionTraits)]
    /// The union of the active options' effects.
    let effects: OptionEffect
    /// True when an active option changes the bytes fetched.
    let changesBytesFetched: Bool
    /// True when an active option changes the bytes, the pixels or a budget, so a verdict on the bytes is this
    /// load's own.
    let changesVerdictOnBytes: Bool
    /// True when every active pixel option can be applied to an image decoded with the default options.
    let decodedImageServes: Bool
    /// True when an active option gives the load a download of its own.
    let isolatesDownload: Bool
    /// The download-key fields of active options (``OptionTraits/DownloadRule/field(_:)``), in a fixed order.
    let downloadFields: [String]
    /// Active plugin keys whose download rule is a field: their names, so the key can hold their values.
    let pluginDownloadKeys: [ImageContextOption]

    init(options: ImageOptions, context: ImageContext, decodeOptions: ImageDecodeOptions) {
        var active: [(name: String, traits: OptionTraits)] = []
        for flag in options.flags { active.append((flag.description, flag.traits)) }
        var plugins: [ImageContextOption] = []
        for slot in ContextSlot.allCases where context.hasValue(slot) {
            switch slot {
            // Folded into the decode options, declared field by field below.
            case .imageDecodeOptions, .imageThumbnailPixelSize, .imagePreserveAspectRatio, .imageScaleDownLimitBytes,
                .imageScaleFactor:
                continue
            default: if slot.traits.acts(with: options) { active.append((slot.name, slot.traits)) }
            }
        }
        for key in context.storage.others.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            let traits = key.traits
            guard traits.acts(with: options) else { continue }  // it tunes a flag this load does not set
            active.append((key.rawValue, traits))
            if case .field = traits.download { plugins.append(key) }
        }
        for (field, traits) in decodeOptions.activeFields() where traits != .scheduling {
            active.append(("imageDecodeOptions.\(field)", traits))
        }
        self.init(active: active, pluginDownloadKeys: plugins)
    }

    init(active: [(name: String, traits: OptionTraits)], pluginDownloadKeys: [ImageContextOption] = []) {
        self.active = active
        var effects: OptionEffect = []
        var decodedImageServes = true
        var isolates = false
        var fields: [String] = []
        for (_, traits) in active {
            effects.formUnion(traits.effects)
            if traits.effects.contains(.pixels), !traits.appliesToDecodedImage { decodedImageServes = false }
            switch traits.download {
            case .shared: break
            case .isolates: isolates = true
            case .field(let name): if !fields.contains(name) { fields.append(name) }
            }
        }
        self.effects = effects
        changesBytesFetched = effects.contains(.bytesFetched)
        changesVerdictOnBytes = !effects.isDisjoint(with: [.bytesFetched, .pixels, .budget])
        self.decodedImageServes = decodedImageServes
        isolatesDownload = isolates
        downloadFields = fields.sorted()
        self.pluginDownloadKeys = pluginDownloadKeys
    }

    /// True when `error`, met by this load, is a verdict every load of the URL would reach, so it may go on the
    /// failed-URL list (which the loader's or the delegate's policy then decides).
    func isUniversalVerdict(_ error: ImageError) -> Bool {
        switch error.code {
        case .imageTooLarge, .badImageData, .noCoder: !changesVerdictOnBytes
        default: !changesBytesFetched
        }
    }

    /// The active options' names, for messages.
    var activeNames: [String] { active.map(\.name) }
}
