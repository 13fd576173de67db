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
                for d in 0..<Int(tauMs * 48 * 10) {
                    x[24_000 + d] += a * Float(exp(-Double(d) / (tauMs * 48))) * (d == 0 ? 1 : rng.signedUnitFloat())
                }
                let det = ImpactDetector(.init(sampleRate: 48_000))
                det.trace = { t, f, r in
                    print(
                        "tau \(tauMs) ms level \(level): trigger \(t - 24_000) \(r ?? "accepted") snr \(Int(f.snrDb)) rise \(f.riseBlocks) decay \(String(format: "%.1f", f.decayDb)) bb \(String(format: "%.2f", f.broadband))"
                    )
                }
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

extension DetectProbe {
    /// Block energies (2 kHz band, dB) around each impact of one RoomCorpus tuning session (PPC_DETECT_ROOM=kind-seed).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_ROOM"] != nil))
    func roomBlocks() {
        let spec = ProcessInfo.processInfo.environment["PPC_DETECT_ROOM"]!.split(separator: "-")
        let s = RoomCorpus.session(RoomCorpus.Kind(rawValue: String(spec[0]))!, seed: UInt64(spec[1])!)
        var hp = Biquad(highPassAt: 2000, sampleRate: 48_000)
        var y = [Float](repeating: 0, count: s.samples.count)
        for i in 0..<s.samples.count { y[i] = hp.step(s.samples[i]) }
        for t in s.impacts.prefix(8) {
            let e = s.events.first { $0.sample == t }!
            var line = ""
            for b in -6..<40 {
                let start = Int(t) + b * 32
                let en = (0..<32).reduce(0.0) { $0 + Double(y[start + $1] * y[start + $1]) } / 32
                line += String(format: "%.0f ", 10 * log10(max(en, 1e-20)))
            }
            print("\(e.kind) \(Int(e.levelDbfs)) dBFS at \(t): \(line)")
        }
    }
}

extension DetectProbe {
    /// The detector's state just before given samples of a RoomCorpus tuning session (PPC_DETECT_STATE=kind-seed:s1,s2).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_STATE"] != nil))
    func roomState() {
        let spec = ProcessInfo.processInfo.environment["PPC_DETECT_STATE"]!.split(separator: ":")
        let ks = spec[0].split(separator: "-")
        let s = RoomCorpus.session(RoomCorpus.Kind(rawValue: String(ks[0]))!, seed: UInt64(ks[1])!)
        for t in spec[1].split(separator: ",").map({ Int($0)! }) {
            let d = ImpactDetector(.init(sampleRate: 48_000))
            s.samples.withUnsafeBufferPointer { d.process(UnsafeBufferPointer(rebasing: $0[0..<(t - 64)])) { _ in } }
            print(
                "at \(t): floor \(10 * log10(d.floor)) dB open \(d.eventOpen) trigger \(d.eventTriggerBlockStart - Int64(t)) peak \(10 * log10(max(d.eventPeak, 1e-20))) refractory until \(d.refractoryUntil - Int64(t)) blocksSeen \(d.blocksSeen)"
            )
            print(
                "   events within 1 s before:",
                s.events.filter { $0.sample < t && $0.sample > t - 48_000 }.map {
                    "\($0.kind) \(Int($0.levelDbfs)) at \($0.sample - Int64(t))"
                })
        }
    }
}
