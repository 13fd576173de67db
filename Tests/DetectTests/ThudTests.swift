import Detect
import Foundation
import Testing

/// Issue 17's finding on an independent corpus: false positives followed loud low-frequency thuds (40–100 Hz, ~10 ms
/// attack). Whether clipping makes a thud broadband enough to pass as an impact is asked here directly: thuds from
/// −6 dBFS to +12 dBFS (clipped at full scale, as a converter does) in quiet room noise.
@Suite struct ThudTests {
    static func thuds(levelDb: Double, clip: Bool, rate: Int = 48_000) -> [Float] {
        var state: UInt64 = 0x1234_5678
        func unit() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53) * 2 - 1
        }
        var x = (0..<(rate * 6)).map { _ in unit() * pow(10, -55 / 20) }
        for (k, t) in [1.0, 2.5, 4.0].enumerated() {
            let f = [40.0, 70, 100][k]
            let onset = Int(t * Double(rate))
            let a = pow(10, levelDb / 20)
            for d in 0..<Int(0.3 * Double(rate)) {
                let tt = Double(d) / Double(rate)
                let env = min(1, tt / 0.010) * exp(-max(0, tt - 0.010) / 0.06)
                x[onset + d] += a * env * sin(2 * .pi * f * tt)
            }
        }
        return x.map { Float(clip ? max(-1, min(1, $0)) : $0) }
    }

    @Test(arguments: [(-6.0, false), (0.0, false), (6.0, true), (12.0, true)])
    func aLowFrequencyThudIsNotAnImpactEvenWhenItClips(levelDb: Double, clip: Bool) {
        let found = ImpactDetector(ImpactDetector.Settings(sampleRate: 48_000)).detect(
            in: Self.thuds(levelDb: levelDb, clip: clip))
        #expect(
            found.isEmpty,
            "a \(levelDb) dBFS thud\(clip ? ", clipped," : "") was taken for an impact at \(found.map(\.onsetSample))")
    }
}
