import Foundation
import Testing

@testable import Detect
@testable import Synthetic

@Suite("Detect probe (diagnostic)")
struct DetectProbe {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_TRACE"] != nil))
    func decayOfKnownImpacts() {
        for tauMs in [0.7, 2.0, 4.0] {
            for level in [-40.0, -20.0] {
                var rng = ImpactCorpus.RNG(seed: 5)
                var x = [Float](repeating: 0, count: 48_000)
                for i in 0..<x.count { x[i] = ImpactCorpus.amp(-75) * rng.gauss() }
                let a = ImpactCorpus.amp(level)
                for d in 0..<Int(tauMs * 48 * 10) { x[24_000 + d] += a * Float(exp(-Double(d) / (tauMs * 48))) * (d == 0 ? 1 : rng.signedUnitFloat()) }
                let det = ImpactDetector(.init(sampleRate: 48_000))
                det.trace = { t, f, r in print("tau \(tauMs) ms level \(level): trigger \(t - 24_000) \(r ?? "accepted") snr \(Int(f.snrDb)) rise \(f.riseBlocks) decay \(String(format: "%.1f", f.decayDb)) bb \(String(format: "%.2f", f.broadband))") }
                x.withUnsafeBufferPointer { det.process($0) { _ in } }
            }
        }
    }
}

extension DetectProbe {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_TRACE"] != nil))
    func clean9() {
        let s = ImpactCorpus.session(.clean, seed: 9, seconds: 20)
        let t = 704960
        print("events near:", s.events.filter { abs(Int($0.sample) - t) < 48_000 })
        var hp = Biquad(highPassAt: 2000, sampleRate: 48_000)
        var y = [Float](repeating: 0, count: s.samples.count)
        for i in 0..<s.samples.count { y[i] = hp.step(s.samples[i]) }
        var line = ""
        for b in -4..<24 {
            let start = t + b * 32
            let e = (0..<32).reduce(0.0) { $0 + Double(y[start + $1] * y[start + $1]) } / 32
            line += String(format: "%d:%.1f ", b, 10 * log10(e))
        }
        print("blocks (dB):", line)
        print("raw around onset:", (t - 3...t + 5).map { String(format: "%.4f", s.samples[$0]) })
    }
}
