import Audio
import Detect
import Foundation
import Testing

@Suite struct GapTests {
    /// Noise with impacts at known samples, as the synthetic source draws them.
    static func recording(rate: Int, seconds: Double, onsets: [Int]) -> [Float] {
        var state: UInt64 = 42
        func unit() -> Float {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Float(Double(state >> 11) / Double(1 << 53) * 2 - 1)
        }
        var x = (0..<Int(seconds * Double(rate))).map { _ in unit() * 0.003 }
        for o in onsets { for d in 0..<2300 { x[o + d] += 0.25 * expf(-Float(d) / 192) * (d == 0 ? 1 : unit()) } }
        return x
    }

    /// An overrun in the middle: the detector is told the samples it did not get, and the impact after the gap is found
    /// on its own sample number, not shifted by the gap; none is made of the restart.
    @Test func theDetectorSkipsLostSamplesAndLaterOnsetsKeepTheirNumbers() {
        let rate = 48_000
        let onsets = [48_000, 192_000]
        let x = Self.recording(rate: rate, seconds: 5, onsets: onsets)
        let detector = ImpactDetector(ImpactDetector.Settings(sampleRate: rate))
        var found: [Int64] = []
        let lostFrom = 96_000
        let lostTo = 120_000  // half a second lost between the impacts
        x.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                if i == lostFrom {
                    detector.skip(Int64(lostTo - lostFrom))
                    i = lostTo
                    continue
                }
                let n = min(240, all.count - i, i < lostFrom ? lostFrom - i : all.count)
                detector.process(UnsafeBufferPointer(rebasing: all[i..<(i + n)])) { found.append($0.onsetSample) }
                i += n
            }
        }
        #expect(found.count == 2, "\(found)")
        for (f, o) in zip(found, onsets) { #expect(abs(f - Int64(o)) <= 4, "onset \(f), true \(o)") }
        // The same error before and after the gap: the numbering did not slip.
        if found.count == 2 { #expect(abs((found[1] - found[0]) - Int64(onsets[1] - onsets[0])) <= 1) }
    }

    @Test func historyHoldsLostSamplesAsSilenceSoWindowsKeepTheirNumbers() {
        let h = AudioHistory(sampleRate: 100, seconds: 2)
        let ones = [Float](repeating: 1, count: 50)
        ones.withUnsafeBufferPointer { h.append($0) }
        h.skip(30)
        ones.withUnsafeBufferPointer { h.append($0) }
        #expect(h.written == 130)
        let w = h.window(first: 40, count: 60)
        #expect(w.missing == 0)
        #expect(Array(w.samples[0..<10]) == [Float](repeating: 1, count: 10))
        #expect(Array(w.samples[10..<40]) == [Float](repeating: 0, count: 30))
        #expect(Array(w.samples[40..<60]) == [Float](repeating: 1, count: 20))
        // A gap longer than the history: numbering still advances by all of it.
        h.skip(10_000)
        #expect(h.written == 10_130)
    }
}
