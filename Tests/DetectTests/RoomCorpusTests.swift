import Testing

@testable import Detect
@testable import Synthetic

/// The detector on a generator it was not designed around (`RoomCorpus`: image-source rooms, modal impacts, a
/// distractor library). The onset's p95 holds there, and the targets on the clean tuning sessions; elsewhere F does not
/// yet reach them on 32 sessions (issue 17, open; `bench detect` and the Detect README) — on these three sessions each
/// they sometimes do, sometimes not, so they are recorded as intermittent known issues beside the figures printed.
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
        print("room \(kind) \(split): P \(score.precision) R \(score.recall) F \(score.f) tp \(score.truePositives) fp \(score.falsePositives) fn \(score.falseNegatives) |err| median \(e.medianAbs) p95 \(e.p95Abs) max \(e.maxAbs)")
        #expect(score.truePositives > 0)
        // Since the echo rule (a rejected sound's wall reflection is not weighed), no detection lands on a reflection.
        #expect(e.p95Abs <= 4)
        // The targets hold on the clean tuning sessions; elsewhere they are known not to yet on 32 sessions (issue 17),
        // which three sessions may or may not show.
        withKnownIssue(
            "issue 17: quiet impacts in live rooms and mishits with nothing above 4 kHz are still missed on RoomCorpus",
            isIntermittent: true
        ) {
            #expect(score.f >= (kind == .clean ? 0.99 : 0.90))
            #expect(e.medianAbs <= 1)
        } when: {
            !(kind == .clean && split == .tuning)
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
