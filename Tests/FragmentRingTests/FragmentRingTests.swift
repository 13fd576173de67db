import Foundation
import Syscall
import TestSupport
import Testing

@testable import FragmentRing

func makeRing(_ dir: String, capacity: Int = 4, policy: FragmentRing.FullPolicy = .refuse, initial: UInt64 = 1) throws
    -> FragmentRing
{
    try FragmentRing(
        directory: dir,
        configuration: .init(
            capacity: capacity, durability: .none, whenOnlyPinnedRemain: policy, initialSequence: initial))
}

@Suite("FragmentRing: the last N fragments on disk")
struct FragmentRingTests {
    @Test func keepsTheNewestCapacityFragmentsAndRecyclesTheOldest() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path)
        for i in 0..<10 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        #expect(ring.fragments.map(\.sequence.rawValue) == [7, 8, 9, 10])
        #expect(ring.latestSequence?.rawValue == 10)
        let files = try FileSystem.list(tmp.sub("fragments")).sorted()
        #expect(
            files == ["0000000000000007.bin", "0000000000000008.bin", "0000000000000009.bin", "000000000000000a.bin"])
        for f in ring.fragments {
            #expect(try ring.read(f.handle) == fragmentBytes(f.sequence.rawValue, size: 4096))
        }
    }

    @Test func reopenKeepsFragmentsAndContinuesTheSequence() throws {
        let tmp = TemporaryDirectory()
        do {
            let ring = try makeRing(tmp.path)
            for i in 0..<6 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        }
        let ring = try makeRing(tmp.path)
        #expect(ring.fragments.map(\.sequence.rawValue) == [3, 4, 5, 6])
        #expect(ring.recovery.rejected.isEmpty)
        #expect(try publishFragment(ring, startNs: 3_000_000_000).published?.sequence.rawValue == 7)
    }

    @Test func theSequenceNeverGoesBackEvenWhenEveryFragmentWasRecycled() throws {
        let tmp = TemporaryDirectory()
        do {
            let ring = try makeRing(tmp.path, capacity: 2)
            for i in 0..<5 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
            try ring.reset()  // discards all: nothing live remains
            #expect(ring.fragments.isEmpty)
        }
        let ring = try makeRing(tmp.path, capacity: 2)
        #expect(try publishFragment(ring, startNs: 0).published?.sequence.rawValue == 6)
    }

    @Test func recoveryRemovesOrphansCorruptFragmentsAndATornTail() throws {
        let tmp = TemporaryDirectory()
        do {
            let ring = try makeRing(tmp.path)
            for i in 0..<3 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
            // An orphan: reserved and written, never published (the process stopped).
            var r = try ring.reserve()
            try fragmentBytes(99, size: 100).withUnsafeBytes { try r.write($0) }
        }
        // Damage fragment 2's bytes and append half a record to the log.
        let f2 = tmp.sub("fragments/0000000000000002.bin")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: f2)))
        bytes[10] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: f2))
        // A torn append lands right after the last record (the rest of the file is preallocated zeros).
        let logBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: tmp.sub("index.log"))))
        let end = ((logBytes.lastIndex { $0 != 0 } ?? 0) / 64 + 1) * 64
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: tmp.sub("index.log")))
        try log.seek(toOffset: UInt64(end))
        log.write(Data(repeating: 0x50, count: 30))
        try log.close()

        let ring = try makeRing(tmp.path)
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 3])
        let reasons = ring.recovery.rejected.map(\.reason)
        #expect(reasons.contains { $0.contains("checksum") })
        #expect(reasons.contains { $0.contains("orphan") })
        #expect(ring.recovery.tornTailBytes == 30)
        #expect(!FileSystem.exists(f2))
        // The orphan's number (4) was never visible, so it may be used again; nothing recorded is.
        #expect(try publishFragment(ring, startNs: 2_000_000_000).published?.sequence.rawValue == 4)
    }

    @Test func aDirectoryThatIsNotARingIsRefusedByName() throws {
        let tmp = TemporaryDirectory()
        try Data("{\"format\": \"something-else\"}".utf8).write(to: URL(fileURLWithPath: tmp.sub("ring.json")))
        let error = #expect(throws: RingError.self) { try makeRing(tmp.path) }
        #expect(error?.code == .badDirectory)
        #expect(error?.message.contains("ring.json") == true)
    }

    @Test func windowStartsOnAKeyframeAtOrBeforeTheStart() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 10)
        for i in 0..<8 { try publishFragment(ring, startNs: Int64(i) * 500_000_000, keyframe: i % 2 == 0) }
        // Keyframes start the fragments at 0, 1.0, 2.0, 3.0 s. [1.2 s, 2.2 s] starts from the one at 1.0 s.
        let w = try ring.window(startNs: 1_200_000_000, endNs: 2_200_000_000)
        #expect(w.fragments.map(\.startNs) == [1_000_000_000, 1_500_000_000, 2_000_000_000])
        #expect(w.fragments.first?.startsWithKeyframe == true)
        let w2 = try ring.window(startNs: 1_600_000_000, endNs: 1_700_000_000)
        #expect(w2.fragments.map(\.startNs) == [1_000_000_000, 1_500_000_000])  // 1.5 s is not a keyframe
        #expect(w.gaps.isEmpty)
    }

    @Test func windowNamesWhatIsMissing() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 3)
        for i in 0..<6 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        #expect(throws: RingError.self) { try ring.window(startNs: 0, endNs: 1_000_000_000) }
        do {
            _ = try ring.window(startNs: 2_000_000_000, endNs: 9_000_000_000)
            Issue.record("window past the newest fragment was returned")
        } catch {
            #expect(error.code == .notYetWritten)
        }
        do {
            _ = try ring.window(startNs: 100, endNs: 2_000_000_000)
            Issue.record("window before the oldest fragment was returned")
        } catch {
            #expect(error.code == .notRetained)
        }
    }

    @Test func gapsInsideAWindowAreReported() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 10)
        try publishFragment(ring, startNs: 0)
        try publishFragment(ring, startNs: 1_000_000_000)  // 0.5–1.0 s is missing
        let w = try ring.window(startNs: 0, endNs: 1_400_000_000)
        #expect(w.gaps == [RingWindow.Gap(after: SequenceNumber(1), before: SequenceNumber(2), missingNs: 500_000_000)])
    }

    @Test func pinnedFragmentsAreNeverRecycledAndAFullRingOfPinsRefuses() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 3)
        for i in 0..<3 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        let pin = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(3))
        let outcome = try publishFragment(ring, startNs: 1_500_000_000)
        guard case .refused(let reason) = outcome else {
            Issue.record("expected refused, got \(outcome)")
            return
        }
        #expect(reason.contains("pinned"))
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 2, 3])
        #expect(ring.counters.refused == 1)
        try ring.unpin(pin)
        #expect(try publishFragment(ring, startNs: 1_500_000_000).published != nil)
        #expect(ring.fragments.map(\.sequence.rawValue) == [2, 3, 5])
    }

    @Test func aPartlyPinnedRingRecyclesTheOldestUnpinned() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 3)
        for i in 0..<3 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        _ = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(1))
        guard case .published(_, let recycled) = try publishFragment(ring, startNs: 1_500_000_000) else {
            Issue.record("not published")
            return
        }
        #expect(recycled.map(\.rawValue) == [2])
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 3, 4])
    }

    @Test func overflowPolicyKeepsExtraFragmentsWhilePinsHold() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 2, policy: .overflow(2))
        for i in 0..<2 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        _ = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(2))
        #expect(try publishFragment(ring, startNs: 1_000_000_000).published != nil)
        _ = try ring.pin(from: SequenceNumber(3), through: SequenceNumber(3))
        #expect(try publishFragment(ring, startNs: 1_500_000_000).published != nil)
        _ = try ring.pin(from: SequenceNumber(4), through: SequenceNumber(4))
        guard case .refused = try publishFragment(ring, startNs: 2_000_000_000) else {
            Issue.record("overflow beyond its limit was not refused")
            return
        }
        #expect(ring.fragments.count == 4)
    }

    @Test func pinsKeptBesideTheWindowNeverShortenItAndNothingIsRefused() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 3, policy: .keepPinnedBeside)
        for i in 0..<3 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        // Every retained fragment pinned (a clip owed to a host that is down): the next ones are still taken.
        let owed = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(3))
        for i in 3..<8 {
            guard case .published = try publishFragment(ring, startNs: Int64(i) * 500_000_000) else {
                Issue.record("fragment \(i + 1) not published beside the pins")
                return
            }
        }
        // The newest three are the window, whole; the pinned three stay beside it; 4 and 5 were recycled.
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 2, 3, 6, 7, 8])
        #expect(ring.counters.refused == 0)
        #expect(
            try ring.window(startNs: 2_500_000_000, endNs: 4_000_000_000).fragments.map(\.sequence.rawValue) == [
                6, 7, 8,
            ])
        // A start the window no longer holds is not retained, though a pinned fragment before it is.
        #expect(throws: RingError.self) { try ring.window(startNs: 2_000_000_000, endNs: 3_000_000_000) }
        do {
            _ = try ring.window(startNs: 2_000_000_000, endNs: 3_000_000_000)
        } catch {
            #expect(error.code == .notRetained)
        }
        // A second clip pins inside the window; when the window moves on, its fragments join the first's beside it.
        let second = try ring.pin(from: SequenceNumber(7), through: SequenceNumber(8))
        for i in 8..<11 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 2, 3, 7, 8, 9, 10, 11])
        // Unpinned (confirmed), they go at the next publish; the window stays the newest three.
        try ring.unpin(owed)
        try ring.unpin(second)
        try publishFragment(ring, startNs: 5_500_000_000)
        #expect(ring.fragments.map(\.sequence.rawValue) == [10, 11, 12])
    }

    @Test func aPinTokenThatDoesNotNameTheHeldPinExactlyReleasesNothing() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 4)
        for i in 0..<3 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        let held = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(2))
        // A record on disk that names the right id with another range (damaged, or another clip's) is refused.
        let wrong = PinToken(id: held.id, first: SequenceNumber(2), last: SequenceNumber(3))
        #expect(throws: RingError.self) { try ring.unpin(wrong) }
        #expect(ring.pins == [held])
        try ring.unpin(held)
        #expect(ring.pins.isEmpty)
    }

    @Test func pinsKeptBesideSurviveAReopenAndTheWindowKeepsItsLength() throws {
        let tmp = TemporaryDirectory()
        do {
            let ring = try makeRing(tmp.path, capacity: 2, policy: .keepPinnedBeside)
            for i in 0..<2 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
            _ = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(1))
            for i in 2..<5 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
            #expect(ring.fragments.map(\.sequence.rawValue) == [1, 4, 5])
        }
        let ring = try makeRing(tmp.path, capacity: 2, policy: .keepPinnedBeside)
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 4, 5])
        #expect(ring.pins.count == 1)
        // A disk that fills still gives up the oldest unpinned fragment, never a pinned one nor the newest.
        #expect(ring.makeRoom(1))
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 5])
        #expect(!ring.makeRoom(1))
    }

    @Test func pinsSurviveAReopen() throws {
        let tmp = TemporaryDirectory()
        do {
            let ring = try makeRing(tmp.path, capacity: 2)
            for i in 0..<2 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
            _ = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(1))
        }
        let ring = try makeRing(tmp.path, capacity: 2)
        #expect(ring.pins.map(\.first.rawValue) == [1])
        try publishFragment(ring, startNs: 1_000_000_000)
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 3])
    }

    @Test func aRolledAwayHandleFailsCleanly() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 2)
        let first = try #require(try publishFragment(ring, startNs: 0).published)
        for i in 1..<4 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        do {
            _ = try ring.read(first.handle)
            Issue.record("read a recycled fragment")
        } catch {
            #expect(error.code == .rolledAway)
        }
    }

    @Test func anOpenFragmentStaysReadableWhileItIsRecycled() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 1)
        let first = try #require(try publishFragment(ring, startNs: 0).published)
        let opened = try ring.open(first.handle)
        try publishFragment(ring, startNs: 500_000_000)  // recycles the first
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = try buffer.withUnsafeMutableBytes { try opened.descriptor.read(into: $0, at: 0) }
        #expect(n == 4096)
        #expect(buffer == fragmentBytes(first.sequence.rawValue, size: 4096))
    }

    @Test func extractionIsZeroCopyAndOutlivesRecycling() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.sub("ring"), capacity: 1)
        let f = try #require(try publishFragment(ring, startNs: 0).published)
        let method = try ring.extract(f.handle, to: tmp.sub("copy.bin"))
        #expect(method == .hardLink)
        try publishFragment(ring, startNs: 500_000_000)
        #expect(
            try [UInt8](Data(contentsOf: URL(fileURLWithPath: tmp.sub("copy.bin")))) == fragmentBytes(1, size: 4096))
    }

    /// Found by the crash campaign (`bench faults`): each run of a session whose clock starts again at zero (a synthetic
    /// source; a camera after a reboot) shared one ring, so a window could take an earlier run's fragments, and its pin
    /// then spanned fragments long recycled.
    @Test func aWindowNeverTakesAnEarlierGenerationsFragmentsEvenPinnedOnesAtTheSameTimes() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path, capacity: 8)
        for i in 0..<4 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        let owed = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(2))  // a clip still owed to a host
        try ring.reset()
        for i in 0..<4 { try publishFragment(ring, startNs: Int64(i) * 500_000_000) }
        let w = try ring.window(startNs: 0, endNs: 1_000_000_000)
        #expect(w.fragments.map(\.sequence.rawValue) == [5, 6])
        #expect(ring.fragments.map(\.sequence.rawValue) == [1, 2, 5, 6, 7, 8])
        // Reopened, the pinned fragments of the old generation are kept (not rejected as stale), and a scan is clean.
        let again = try makeRing(tmp.path, capacity: 8)
        #expect(again.fragments.map(\.sequence.rawValue) == [1, 2, 5, 6, 7, 8])
        let scan = try FragmentRing.scan(directory: tmp.path)
        #expect(scan.problems.isEmpty && scan.recoverable.isEmpty, "\(scan.problems) \(scan.recoverable)")
        // Let go, they leave at the next reopen as an older generation's.
        try again.unpin(owed)
        #expect(try makeRing(tmp.path, capacity: 8).fragments.map(\.sequence.rawValue) == [5, 6, 7, 8])
    }

    @Test func resetStartsANewGenerationAndStaleReservationsAreNoops() throws {
        let tmp = TemporaryDirectory()
        let ring = try makeRing(tmp.path)
        try publishFragment(ring, startNs: 0)
        var r = try ring.reserve()
        try [1, 2, 3].withUnsafeBytes { try r.write($0) }
        try ring.reset()
        let outcome = try ring.publish(
            r, FragmentTiming(startNs: 0, endNs: 1, frameCount: 1, startsWithKeyframe: true, codec: .opaque))
        guard case .noop(let reason) = outcome else {
            Issue.record("expected noop, got \(outcome)")
            return
        }
        #expect(reason.contains("generation"))
        #expect(ring.fragments.isEmpty)
    }
}

@Suite("SequenceNumber: serial arithmetic")
struct SequenceNumberTests {
    @Test(arguments: [
        (UInt64.max, UInt64(0)), (UInt64.max - 5, UInt64(3)), (UInt64(0), UInt64(1)), (UInt64(100), UInt64(1_000)),
    ])
    func orderSurvivesTheWrap(a: UInt64, b: UInt64) {
        #expect(SequenceNumber(a) < SequenceNumber(b))
        #expect(!(SequenceNumber(b) < SequenceNumber(a)))
        #expect(SequenceNumber(a).distance(to: SequenceNumber(b)) > 0)
    }

    @Test func advancedWraps() {
        #expect(SequenceNumber(UInt64.max).advanced(by: 1) == SequenceNumber(0))
        #expect(SequenceNumber(255).hex == "00000000000000ff")
    }
}
