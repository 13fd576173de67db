import Testing

@testable import Detect
@testable import Synthetic

/// The detector on a generator it was not designed around (`RoomCorpus`: image-source rooms, modal impacts, a
/// distractor library). The onset's p95 holds there, hard's F target on both splits and clean's on the tuning sessions;
/// clean held out does not yet reach 0.99 on 32 sessions (issue 17, open; `bench detect` and the Detect README) — on
/// these three it sometimes does, so it is recorded as an intermittent known issue beside the figures printed.
@Suite("Detect: the independent generator (RoomCorpus), both splits")
struct RoomCorpusDetectTests {
    @Test(arguments: RoomCorpus.Kind.allCases, RoomCorpus.Split.allCases)
    func scores(kind: RoomCorpus.Kind, split: RoomCorpus.Split) {
        var score = DetectionScore()
        for seed in split.seeds(3) {
            let s = RoomCorpus.session(kind, seed: seed, seconds: 60)
            let found = detect(s.samples, sampleRate: s.sampleRate)
            score.add(detected: found.map(\.onsetSample), truth: s.impacts, tolerance: Int64(s.sampleRate / 20))
        }
        let e = score.errorStatistics
        print(
            "room \(kind) \(split): P \(score.precision) R \(score.recall) F \(score.f) tp \(score.truePositives) fp \(score.falsePositives) fn \(score.falseNegatives) |err| median \(e.medianAbs) p95 \(e.p95Abs) max \(e.maxAbs)"
        )
        #expect(score.truePositives > 0)
        // Since the echo rule (a rejected sound's wall reflection is not weighed), no detection lands on a reflection.
        #expect(e.p95Abs <= 4)
        // Hard meets its target on every RoomCorpus set of 32 sessions (rules 22–25), and on these three; clean meets its
        // target on the tuning sessions here but not yet on 32 held-out ones (issue 17), which three may or may not show.
        if kind == .hard || split == .tuning {
            #expect(score.f >= (kind == .clean ? 0.99 : 0.90))
        } else {
            withKnownIssue(
                "issue 17: clean F on RoomCorpus's held-out sessions is 0.987 on 32 (target 0.99)", isIntermittent: true
            ) {
                #expect(score.f >= 0.99)
            }
        }
        // The median onset error is 1 on 32 sessions of every set, 1.5–2 on some sets of three.
        withKnownIssue(
            "the median |onset error| of three sessions may be 1.5–2 samples (1 on 32)", isIntermittent: true
        ) {
            #expect(e.medianAbs <= 1)
        }
    }

    @Test func sessionsAreReproducibleAndLabelled() {
        let a = RoomCorpus.session(.hard, seed: 3, seconds: 10)
        let b = RoomCorpus.session(.hard, seed: 3, seconds: 10)
        #expect(a.samples == b.samples)
        #expect(a.impacts == b.impacts)
        #expect(!a.impacts.isEmpty)
        #expect(a.samples.allSatisfy { $0.isFinite && abs($0) <= 1 })
        // Every impact's onset is the direct sound's first sample: nothing of it before, something at it.
        for t in a.impacts { #expect(a.events.contains { $0.sample == t && $0.kind.hasPrefix("impact") }) }
        #expect(Set(RoomCorpus.Split.tuning.seeds(50)).isDisjoint(with: RoomCorpus.Split.heldOut.seeds(50)))
    }
}
