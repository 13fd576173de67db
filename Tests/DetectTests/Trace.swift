import Testing

@testable import Detect
@testable import Synthetic

/// Not a test of behaviour: prints what the detector decided around each missed impact, when PPC_DETECT_TRACE is set.
@Suite("Detect trace (diagnostic)")
struct DetectTrace {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_TRACE"] != nil), arguments: ImpactCorpus.Kind.allCases)
    func traceMisses(kind: ImpactCorpus.Kind) {
        let first = UInt64(ProcessInfo.processInfo.environment["PPC_DETECT_SEED"] ?? "1") ?? 1
        for seed in first..<(first + 20) {
            let s = ImpactCorpus.session(kind, seed: seed, seconds: 20)
            let d = ImpactDetector(.init(sampleRate: s.sampleRate))
            var events: [(Int64, Candidate.Features, String?)] = []
            d.trace = { events.append(($0, $1, $2)) }
            var found: [Candidate] = []
            s.samples.withUnsafeBufferPointer { d.process($0) { found.append($0) } }
            for t in s.impacts where !found.contains(where: { abs($0.onsetSample - t) < 2400 }) {
                let near = events.filter { abs($0.0 - t) < 4800 }
                let level = s.events.first { $0.sample == t }?.levelDbfs ?? 0
                print("\(s.name) miss at \(t) (\(level) dBFS): \(near.map { "\($0.0 - t): \($0.2 ?? "accepted") snr \(Int($0.1.snrDb)) rise \($0.1.riseBlocks) decay \(Int($0.1.decayDb)) bb \(String(format: "%.2f", $0.1.broadband))" })")
            }
            for c in found where !s.impacts.contains(where: { abs(c.onsetSample - $0) < 2400 }) {
                let what = s.events.min { abs($0.sample - c.onsetSample) < abs($1.sample - c.onsetSample) }
                print("\(s.name) false at \(c.onsetSample): near \(what?.kind ?? "?") \((what?.sample ?? 0) - c.onsetSample), snr \(Int(c.features.snrDb)) rise \(c.features.riseBlocks) decay \(Int(c.features.decayDb)) bb \(String(format: "%.2f", c.features.broadband))")
            }
            for c in found { if let t = s.impacts.first(where: { abs(c.onsetSample - $0) < 2400 }), abs(c.onsetSample - t) > 4 { print("\(s.name) onset off by \(c.onsetSample - t) at \(t)") } }
        }
    }
}

import Foundation
