import Foundation
import Testing

@testable import Detect
@testable import Synthetic

/// Not a test of behaviour: prints what the detector decided around each missed impact, when PPC_DETECT_TRACE is set.
@Suite("Detect trace (diagnostic)")
struct DetectTrace {
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_TRACE"] != nil),
        arguments: ImpactCorpus.Kind.allCases)
    func traceMisses(kind: ImpactCorpus.Kind) {
        let first = UInt64(ProcessInfo.processInfo.environment["PPC_DETECT_SEED"] ?? "1") ?? 1
        for seed in first..<(first + 20) { Self.printMisses(ImpactCorpus.session(kind, seed: seed, seconds: 20)) }
    }

    /// The same for RoomCorpus, over tuning seeds only (the held-out split is for figures, never for looking at).
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_TRACE"] != nil),
        arguments: RoomCorpus.Kind.allCases)
    func traceRoomMisses(kind: RoomCorpus.Kind) {
        let count = Int(ProcessInfo.processInfo.environment["PPC_DETECT_SESSIONS"] ?? "3") ?? 3
        for seed in RoomCorpus.Split.tuning.seeds(count) { Self.printMisses(RoomCorpus.session(kind, seed: seed)) }
    }

    /// Each missed impact with the events weighed near it; each false detection with the latest event before it; each
    /// onset more than 4 samples off.
    static func printMisses(_ s: ImpactCorpus.Session) {
        let d = ImpactDetector(.init(sampleRate: s.sampleRate))
        var events: [(Int64, Candidate.Features, String?)] = []
        d.trace = { events.append(($0, $1, $2)) }
        var found: [Candidate] = []
        s.samples.withUnsafeBufferPointer { d.process($0) { found.append($0) } }
        func describe(_ f: Candidate.Features) -> String {
            "snr \(Int(f.snrDb)) rise \(f.riseBlocks) decay \(Int(f.decayDb)) dip \(Int(f.dipDb)) bb \(String(format: "%.2f/%.2f", f.broadband, f.broadband4k)) attack \(f.attackSamples)"
        }
        for t in s.impacts where !found.contains(where: { abs($0.onsetSample - t) < 2400 }) {
            let e = s.events.first { $0.sample == t }
            let near = events.filter { abs($0.0 - t) < 4800 }.map {
                "\($0.0 - t): \($0.2 ?? "accepted") \(describe($0.1))"
            }
            print("\(s.name) miss at \(t) \(e?.kind ?? "") (\(Int(e?.levelDbfs ?? 0)) dBFS): \(near)")
        }
        for c in found where !s.impacts.contains(where: { abs(c.onsetSample - $0) < 2400 }) {
            let what = s.events.filter { $0.sample <= c.onsetSample + 2400 }.max { $0.sample < $1.sample }
            print(
                "\(s.name) false at \(c.onsetSample): after \(what?.kind ?? "?") by \(c.onsetSample - (what?.sample ?? 0)), \(describe(c.features))"
            )
        }
        for c in found {
            if let t = s.impacts.first(where: { abs(c.onsetSample - $0) < 2400 }), abs(c.onsetSample - t) > 4 {
                print("\(s.name) onset off by \(c.onsetSample - t) at \(t)")
            }
        }
    }
}

extension DetectTrace {
    /// Every event the detector decided, on the tuning seeds of both generators, with all its features and whether a
    /// truth impact started in it, as CSV (PPC_DETECT_EVENTS=path) — what a change to the decision is fitted on.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PPC_DETECT_EVENTS"] != nil))
    func dumpDecidedEvents() throws {
        var lines = [
            "generator,session,trigger,impact,kind,accepted,snr,rise,decay,early,dip,bb6,bb4,jump,attack,late,modality,attack4,reason,modes,repetition,impulse,dark"
        ]
        func run(_ generator: String, _ s: ImpactCorpus.Session) {
            let d = ImpactDetector(.init(sampleRate: s.sampleRate))
            d.trace = { t, f, r in
                let truth = s.impacts.first { t - $0 < 64 && $0 - t < 160 }
                let e =
                    truth.map { tr in s.events.first { $0.sample == tr }! }
                    ?? s.events.filter { $0.sample <= t + 160 }.max { $0.sample < $1.sample }
                lines.append(
                    "\(generator),\(s.name),\(t),\(truth != nil ? 1 : 0),\(e?.kind ?? "none"),\(r == nil ? 1 : 0),\(f.snrDb),\(f.riseBlocks),\(f.decayDb),\(f.earlyDecayDb),\(f.dipDb),\(f.broadband),\(f.broadband4k),\(f.jumpDb),\(f.attackSamples),\(f.laterPeakDb),\(f.modality),\(f.attackQuarterSamples),\(r ?? "accepted"),\(f.modesDb),\(f.repetition),\(f.impulseDb),\(f.darkDb)"
                )
            }
            s.samples.withUnsafeBufferPointer { d.process($0) { _ in } }
            for t in s.impacts { lines.append("\(generator),\(s.name),\(t),2,truth,0,,,,,,,,,,,,,,,,,") }
        }
        let n = Int(ProcessInfo.processInfo.environment["PPC_DETECT_SESSIONS"] ?? "8") ?? 8
        for kind in RoomCorpus.Kind.allCases {
            for seed in RoomCorpus.Split.tuning.seeds(n) { run("room", RoomCorpus.session(kind, seed: seed)) }
        }
        for kind in ImpactCorpus.Kind.allCases {
            for seed in UInt64(1)...12 { run("impact", ImpactCorpus.session(kind, seed: seed, seconds: 20)) }
        }
        try lines.joined(separator: "\n").write(
            toFile: ProcessInfo.processInfo.environment["PPC_DETECT_EVENTS"]!, atomically: false, encoding: .utf8)
    }
}
