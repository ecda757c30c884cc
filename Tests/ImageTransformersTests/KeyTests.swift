import ImageCore
import ImageTransformers
import Testing

@Suite("Transformer keys")
struct KeyTests {
    @Test("documented key formats")
    func formats() {
        #expect(ResizeTransformer(width: 256, height: 256).transformerKey == "resize(256x256,aspectFit,lanczos3)")
        #expect(
            ResizeTransformer(width: 10, height: 20, mode: .aspectFill, filter: .catmullRom).transformerKey
                == "resize(10x20,aspectFill,catmullRom)")
        #expect(
            ResizeTransformer(width: 3, height: 4, mode: .fill, filter: .box).transformerKey == "resize(3x4,fill,box)")
        #expect(CropTransformer(x: 10, y: 10, width: 100, height: 100).transformerKey == "crop(10,10,100,100)")
        #expect(CropTransformer(x: -5, y: 0, width: 1, height: 2).transformerKey == "crop(-5,0,1,2)")
        #expect(BlurTransformer(radius: 4).transformerKey == "blur(r=4.00)")
        #expect(BlurTransformer(radius: 0.125).transformerKey == "blur(r=0.13)")
        #expect(FlipTransformer(horizontal: true).transformerKey == "flip(h)")
        #expect(FlipTransformer(vertical: true).transformerKey == "flip(v)")
        #expect(FlipTransformer(horizontal: true, vertical: true).transformerKey == "flip(hv)")
        #expect(FlipTransformer().transformerKey == "flip(none)")
        #expect(RotateTransformer(angle: 90).transformerKey == "rotate(90.00)")
        #expect(RotateTransformer(angle: -90).transformerKey == "rotate(270.00)")
        #expect(RotateTransformer(angle: 450).transformerKey == "rotate(90.00)")
        #expect(RotateTransformer(angle: 30).transformerKey == "rotate(30.00,fit)")
        #expect(RotateTransformer(angle: 30, fitSize: false).transformerKey == "rotate(30.00,crop)")
        #expect(RotateTransformer(angle: -0.5).transformerKey == "rotate(359.50,fit)")
        #expect(
            TintTransformer(color: RGBAColor(red: 255, green: 0, blue: 0, alpha: 128), amount: 0.5).transformerKey
                == "tint(#FF000080,0.500)")
        #expect(RoundCornerTransformer(radius: 8).transformerKey == "roundCorners(r=8.00,all)")
        #expect(
            RoundCornerTransformer(
                radius: 12, corners: [.topLeft, .bottomRight], borderWidth: 2,
                borderColor: RGBAColor(red: 255, green: 0, blue: 16)
            ).transformerKey == "roundCorners(r=12.00,tl+br,border=2.00,#FF0010FF)")
        #expect(RoundCornerTransformer(radius: 3, corners: []).transformerKey == "roundCorners(r=3.00,none)")
    }

    @Test("pipeline key joins the parts in order")
    func pipelineKey() {
        let a = ResizeTransformer(width: 64, height: 64, mode: .aspectFill)
        let b = RoundCornerTransformer(radius: 16)
        #expect(
            PipelineTransformer(a, b).transformerKey == "resize(64x64,aspectFill,lanczos3)|roundCorners(r=16.00,all)")
        #expect(
            PipelineTransformer(b, a).transformerKey == "roundCorners(r=16.00,all)|resize(64x64,aspectFill,lanczos3)")
        #expect(PipelineTransformer([]).transformerKey == "pipeline()")
    }

    /// Builds every transformer from a parameter index; equal indices must give equal keys, different ones
    /// different keys.
    static func variants() -> [any Transformer] {
        var list: [any Transformer] = []
        for mode in ResizeTransformer.Mode.allCases {
            for filter in ResizeFilter.allCases {
                list.append(ResizeTransformer(width: 100, height: 50, mode: mode, filter: filter))
                list.append(ResizeTransformer(width: 50, height: 100, mode: mode, filter: filter))
            }
        }
        list += [
            CropTransformer(x: 1, y: 2, width: 3, height: 4), CropTransformer(x: 2, y: 1, width: 3, height: 4),
            CropTransformer(x: 1, y: 2, width: 4, height: 3), CropTransformer(x: 12, y: 3, width: 4, height: 5),
            CropTransformer(x: 1, y: 23, width: 4, height: 5),
            BlurTransformer(radius: 1), BlurTransformer(radius: 1.01), BlurTransformer(radius: 10),
            FlipTransformer(horizontal: true), FlipTransformer(vertical: true),
            FlipTransformer(horizontal: true, vertical: true), FlipTransformer(),
            RotateTransformer(angle: 90), RotateTransformer(angle: 180), RotateTransformer(angle: 270),
            RotateTransformer(angle: 45), RotateTransformer(angle: 45, fitSize: false), RotateTransformer(angle: 45.01),
            TintTransformer(color: .white, amount: 0.5), TintTransformer(color: .black, amount: 0.5),
            TintTransformer(color: .white, amount: 0.25),
            RoundCornerTransformer(radius: 4), RoundCornerTransformer(radius: 5),
            RoundCornerTransformer(radius: 4, corners: .topLeft),
            RoundCornerTransformer(radius: 4, borderWidth: 1, borderColor: .white),
            RoundCornerTransformer(radius: 4, borderWidth: 2, borderColor: .white),
            RoundCornerTransformer(radius: 4, borderWidth: 1, borderColor: .black),
            PipelineTransformer(BlurTransformer(radius: 1), FlipTransformer(horizontal: true)),
            PipelineTransformer(FlipTransformer(horizontal: true), BlurTransformer(radius: 1)),
        ]
        return list
    }

    @Test("equal parameters give equal keys, different parameters different keys")
    func determinismAndDistinctness() throws {
        let first = Self.variants().map(\.transformerKey)
        let second = Self.variants().map(\.transformerKey)
        #expect(first == second)
        #expect(Set(first).count == first.count, "duplicate keys: \(first)")
        let address = try Regex("0x[0-9a-fA-F]{6,}")
        for key in first {
            #expect(key.firstMatch(of: address) == nil, "key looks like it contains an address: \(key)")
        }
    }

    @Test("parameters are stored at key precision, so equal keys mean equal parameters")
    func quantization() {
        #expect(BlurTransformer(radius: 2.004).radius == BlurTransformer(radius: 2.0).radius)
        #expect(BlurTransformer(radius: 2.004).transformerKey == BlurTransformer(radius: 2).transformerKey)
        #expect(RotateTransformer(angle: 30.001).angle == 30)
        #expect(TintTransformer(color: .white, amount: 2).amount == 1)
        #expect(RoundCornerTransformer(radius: 1.996).radius == 2)
    }
}
