import Testing

@testable import Detect
@testable import Synthetic

/// Rule 28: quiet noise that has not decayed, with nothing struck in it — no ring, no modes, no impulse at its onset — is
/// a voice's fricative or plosive, or a ball's soft landing (RoomCorpus tuning sessions 33–96, clean: 12 of their 17
/// false positives). A noise burst that is gone within 10 ms stays an impact, however quiet: ImpactCorpus's impacts are
/// such bursts.
@Suite("Detect: quiet noise with nothing struck in it is not an impact")
struct UnstruckTests {
    static func found(_ candidates: [Candidate], near sample: Int64, rate: Int) -> Bool {
        candidates.contains { abs($0.onsetSample - sample) <= Int64(rate / 20) }
    }

    @Test func aVoiceInATuningSessionIsNotTakenForAnImpact() {
        // RoomCorpus tuning, clean, session 33: without the rule, a voice (at 30.56 s when this was written: 8 dB over
        // the room, decayed 6 dB in 10 ms, ringing 0.26 with 0.3 dB of modes and a 3 dB impulse) was a candidate. With
        // it, no voice the generator placed is; every impact of the session is still found. Where the voices are comes
        // from the generator's own list of events, not from positions written here.
        let s = RoomCorpus.session(.clean, seed: RoomCorpus.Split.tuning.seeds(33)[32], seconds: 60)
        let voices = s.events.filter { $0.kind == "voice" }.map(\.sample)
        func voicesFound(_ candidates: [Candidate]) -> [Int64] {
            candidates.map(\.onsetSample).filter { c in
                !s.impacts.contains { abs($0 - c) <= Int64(s.sampleRate / 20) }
                    && voices.contains { c >= $0 - Int64(s.sampleRate / 20) && c <= $0 + Int64(s.sampleRate) }
            }
        }
        let before = detect(s.samples, sampleRate: s.sampleRate) { $0.unstruckSnrDb = 0 }
        #expect(!voicesFound(before).isEmpty, "without the rule a voice was a candidate")
        let after = detect(s.samples, sampleRate: s.sampleRate)
        #expect(voicesFound(after).isEmpty, "\(voicesFound(after))")
        var score = DetectionScore()
        score.add(detected: after.map(\.onsetSample), truth: s.impacts, tolerance: Int64(s.sampleRate / 20))
        #expect(score.falseNegatives == 0)
    }

    @Test func aQuietBurstThatIsGoneWithin10msStaysAnImpact() {
        // ImpactCorpus, hard, seed 5206: its quietest impact (at 4.27 s when this was written) is a burst of noise 9 dB
        // over the room with no ring, modes or impulse — but it falls 28 dB within 10 ms: a crack, kept. Every impact of
        // the session, the quietest included, is found with the rule on.
        let s = ImpactCorpus.session(.hard, seed: 5206, seconds: 20)
        let quietest = s.events.filter { $0.kind == "impact" }.min { $0.levelDbfs < $1.levelDbfs }
        let found = detect(s.samples, sampleRate: s.sampleRate)
        #expect(quietest.map { q in Self.found(found, near: q.sample, rate: s.sampleRate) } == true)
        var score = DetectionScore()
        score.add(detected: found.map(\.onsetSample), truth: s.impacts, tolerance: Int64(s.sampleRate / 20))
        #expect(score.falseNegatives == 0)
    }
}
