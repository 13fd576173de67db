import Pipeline
import Testing

@testable import Session

@Suite("CandidateBook: bounded retention, shots waiting to be minted")
struct CandidateBookTests {
    func candidate(_ id: UInt64, score: Double) -> DetectedImpact {
        DetectedImpact(
            id: id, onsetSample: Int64(id) * 48_000, impactSample: Double(id) * 48_000, t0Ns: Int64(id) * 1_000_000_000,
            score: score,
            features: [:], tofCorrectionSamples: nil, tofProvenance: "none declared",
            decidedAtSample: Int64(id) * 48_000 + 960)
    }

    @Test func aCandidateAtTheThresholdIsAShotAndWaitsToBeMintedOldestFirst() {
        var book = CandidateBook(capacity: 10, shotThreshold: 0.5)
        #expect(book.record(candidate(1, score: 0.49)).isShot == false)
        #expect(book.record(candidate(2, score: 0.5)).isShot)
        #expect(book.record(candidate(3, score: 0.9)).isShot)
        #expect(book.shots.map(\.id) == [2, 3])
        #expect(book.takeNextShot()?.id == 2)
        #expect(book.nextShot?.id == 3)
        #expect(book.seen == 3)
    }

    @Test func retentionIsBoundedInCandidatesAndEvictsTheOldest() {
        var book = CandidateBook(capacity: 2, shotThreshold: 2)  // nothing is a shot
        #expect(book.record(candidate(1, score: 1)).audioNoLongerNeeded == nil)
        #expect(book.record(candidate(2, score: 1)).audioNoLongerNeeded == nil)
        #expect(book.record(candidate(3, score: 1)).audioNoLongerNeeded == 1)
        #expect(book.retained.map(\.id) == [2, 3] && book.evicted == 1 && book.seen == 3)
        #expect(!book.needsAudio(1) && book.needsAudio(3))
    }

    @Test func anEvictedCandidateAShotStillWaitsForKeepsItsAudio() {
        var book = CandidateBook(capacity: 1, shotThreshold: 0.5)
        _ = book.record(candidate(1, score: 0.9))  // a shot, not minted yet
        let r = book.record(candidate(2, score: 0.1))
        #expect(r.audioNoLongerNeeded == nil, "the shot still needs candidate 1's audio")
        #expect(book.needsAudio(1))
        _ = book.takeNextShot()
        #expect(!book.needsAudio(1))
    }
}
