import Foundation
import Testing

@testable import Measure

@Suite struct ShaftFinderTests {
    /// A frame like synthetic.video's: noisy background, a 3-pixel bright line from a grip at a known angle.
    static func frame(width: Int, height: Int, degrees: Double, seed: UInt64 = 1) -> [UInt8] {
        var state = seed
        var y = [UInt8](repeating: 0, count: width * height)
        for i in y.indices {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            y[i] = 28 &+ UInt8(truncatingIfNeeded: (state >> 33) % 46)
        }
        let r = degrees * .pi / 180
        let gx = Double(width / 2)
        let gy = Double(height) * 0.3
        for s in 0...Int(Double(height) * 0.5) {
            let x = Int(gx + sin(r) * Double(s))
            let yy = Int(gy + cos(r) * Double(s))
            if x >= 1, x < width - 1, yy >= 0, yy < height { for dx in -1...1 { y[yy * width + x + dx] = 220 } }
        }
        return y
    }

    @Test(arguments: [-40.0, -12.5, 0, 7.25, 33])
    func findsTheShaftsAngleWithinAFractionOfADegree(degrees: Double) throws {
        let f = Self.frame(width: 640, height: 360, degrees: degrees)
        let shaft = try #require(
            f.withUnsafeBytes { ShaftFinder().find(luma: $0, width: 640, height: 360, stride: 640) })
        #expect(abs(shaft.degrees - degrees) < 0.5, "found \(shaft.degrees)°, drawn \(degrees)°")
        #expect(shaft.pixels > 100)
    }

    @Test func aFrameWithoutAShaftHasNone() {
        let blank = [UInt8](repeating: 40, count: 320 * 180)
        #expect(blank.withUnsafeBytes { ShaftFinder().find(luma: $0, width: 320, height: 180, stride: 320) } == nil)
    }

    @Test func theSweepComparesFrameByFrameAndPicksTheLowestBitrateWithinBound() {
        let r: [ShaftFinder.Shaft?] = [
            .init(degrees: 10, centreX: 100, centreY: 50, pixels: 50),
            .init(degrees: 20, centreX: 110, centreY: 50, pixels: 50),
        ]
        let same = BitrateSweep.compare(r, to: r)
        #expect(same.angle == 0 && same.position == 0 && same.missing == 0)
        let off: [ShaftFinder.Shaft?] = [.init(degrees: 11, centreX: 100, centreY: 50, pixels: 50), nil]
        let c = BitrateSweep.compare(off, to: r)
        #expect(c.angle == 1 && c.missing == 1)
        let points = [
            SweepPoint(
                bitrateBps: 1_000_000, frames: 2, angleRMSEDegrees: 0.9, positionRMSEPixels: 0.4,
                angleRMSEVsTruthDegrees: nil, bytesPerSecond: 1, missing: 0),
            SweepPoint(
                bitrateBps: 5_000_000, frames: 2, angleRMSEDegrees: 0.2, positionRMSEPixels: 0.3,
                angleRMSEVsTruthDegrees: nil, bytesPerSecond: 1, missing: 0),
            SweepPoint(
                bitrateBps: 2_000_000, frames: 2, angleRMSEDegrees: 0.2, positionRMSEPixels: 0.3,
                angleRMSEVsTruthDegrees: nil, bytesPerSecond: 1, missing: 1),
        ]
        #expect(
            BitrateSweep.lowestWithin(points, angleBound: 0.25, positionBound: 0.5)?.bitrateBps == 5_000_000,
            "a bitrate that lost the shaft in a frame is not within bound")
        #expect(BitrateSweep.svg(points, angleBound: 0.25, chosen: points[1], title: "t").contains("<polyline"))
    }
}
