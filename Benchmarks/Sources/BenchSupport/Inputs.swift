import Foundation

/// The images every suite and run.sh share, built once per process from the 12 MP corpus photo.
public enum Inputs {
    /// The 12 MP camera JPEG as stored in the corpus.
    public static let photo12MPJPEG: Data = Corpus.photo(Corpus.photo12MPName)
    /// Its pixels, RGB, decoded with TurboJPEG at full size.
    public static let photo12MP: Pixels = Pixels.decodeJPEG(photo12MPJPEG, channels: 3)
    /// A 1920x1080 (2.07 MP) centre crop of the photo.
    public static let photo2MP: Pixels = photo12MP.centerCrop(width: 1920, height: 1080)
    /// A 256x256 centre crop: the "small image".
    public static let photoSmall: Pixels = photo12MP.centerCrop(width: 256, height: 256)

    /// The three sizes of the coder benchmarks, in order.
    public static var coderSizes: [(label: String, pixels: Pixels)] {
        [("12MP", photo12MP), ("2MP", photo2MP), ("small", photoSmall)]
    }

    /// Side of the small images served over HTTP.
    public static let httpSmallSide = 128
    /// Number of small images served over HTTP.
    public static let httpSmallCount = 1000
    /// Number of 2 MP images served over HTTP.
    public static let httpLargeCount = 100

    /// The HTTP path of small image `index` (relative to the server root).
    public static func httpSmallPath(_ index: Int) -> String { "small/\(String(format: "%04d", index)).jpg" }
    /// The HTTP path of 2 MP image `index`.
    public static func httpLargePath(_ index: Int) -> String { "large/\(String(format: "%03d", index)).jpg" }

    /// Number of camera-like photos served over HTTP (13–231 KB, median 71 KB; 172 of them within 30–200 KB).
    public static let httpPhotoCount = 200
    /// The HTTP path of photo `index`.
    public static func httpPhotoPath(_ index: Int) -> String { "photo/\(String(format: "%03d", index)).jpg" }

    /// Distinct camera-like photos, mostly 30–200 KB, as a thumbnail or link-preview service fetches them: regions of
    /// the 12 MP camera photo scaled down 2:1 (as cameras and CMSs make web sizes) to 640x480 … 1280x960, quality
    /// 80–92, taken all over the frame.
    public static func httpPhotoImage(_ index: Int) -> Data {
        let sizes = [(640, 480), (800, 600), (1024, 768), (1280, 960)]
        let (width, height) = sizes[index % sizes.count]
        let quality = [80, 85, 90, 92][(index / sizes.count) % 4]
        let cell = index / sizes.count  // 50 positions on a 10x5 grid
        let x = (cell % 10) * ((photo12MP.width - 2 * width) / 9)
        let y = (cell / 10 % 5) * ((photo12MP.height - 2 * height) / 4)
        let region = photo12MP.crop(x: x, y: y, width: 2 * width, height: 2 * height)
        return CEncode.jpeg(region.halved(), quality: quality)
    }

    /// Distinct small JPEGs: 128x128 crops of the photo on a grid, quality 80.
    public static func httpSmallImage(_ index: Int) -> Data {
        let columns = 40
        let x = (index % columns) * ((photo12MP.width - httpSmallSide) / columns)
        let y = (index / columns) * ((photo12MP.height - httpSmallSide) / (httpSmallCount / columns))
        return CEncode.jpeg(photo12MP.crop(x: x, y: y, width: httpSmallSide, height: httpSmallSide), quality: 80)
    }

    /// Distinct 2 MP JPEGs: 1920x1080 crops of the photo on a 10x10 grid, quality 85.
    public static func httpLargeImage(_ index: Int) -> Data {
        let x = (index % 10) * ((photo12MP.width - 1920) / 9)
        let y = (index / 10) * ((photo12MP.height - 1080) / 9)
        return CEncode.jpeg(photo12MP.crop(x: x, y: y, width: 1920, height: 1080), quality: 85)
    }
}
