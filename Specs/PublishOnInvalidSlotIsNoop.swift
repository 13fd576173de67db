import FragmentRing
import Syscall
import TestSupport
import Testing

@testable import TimelineIndex

/// PublishOnInvalidSlotIsNoop: a writer that publishes into a slot that rolled away while it held it changes nothing
/// — no fragment appears, none disappears, the latest sequence does not move — and readers never see it.
@Suite("PublishOnInvalidSlotIsNoop")
struct PublishOnInvalidSlotIsNoop {
    @Test func ringSlotRolledAway() throws {
        let tmp = TemporaryDirectory()
        let ring = try FragmentRing(directory: tmp.path, configuration: .init(capacity: 4, durability: .none))
        var held = try ring.reserve()  // sequence 1, held while the ring moves on
        try fragmentBytes(1, size: 64).withUnsafeBytes { try held.write($0) }
        let heldSequence = held.sequence
        let bad = Violations()
        concurrently(
            readers: 2,
            producer: {
                for i in 0..<50 {
                    do { try publishFragment(ring, startNs: Int64(i) * 1000, durationNs: 1000) } catch {
                        bad.record("\(error)")
                    }
                }
            },
            reader: { _, _ in
                if ring.fragments.contains(where: { $0.sequence == heldSequence }) { bad.record("held slot visible") }
            })
        let before = ring.fragments
        let latest = ring.latestSequence
        let outcome = try ring.publish(
            held,
            FragmentTiming(startNs: 60_000, endNs: 61_000, frameCount: 1, startsWithKeyframe: true, codec: .opaque))
        guard case .noop(let reason) = outcome else {
            Issue.record("publish into a rolled-away slot was \(outcome)")
            return
        }
        #expect(reason.contains("rolled away"))
        #expect(ring.fragments == before)
        #expect(ring.latestSequence == latest)
        #expect(!FileSystem.exists(ring.path(of: heldSequence)))
        #expect(ring.counters.noops == 1)
        #expect(bad.all.isEmpty, "\(bad.all)")
        // And the ring still works: the next publish is an ordinary one.
        #expect(try publishFragment(ring, startNs: 70_000, durationNs: 1000).published != nil)
    }

    @Test func ringGenerationReset() throws {
        let tmp = TemporaryDirectory()
        let ring = try FragmentRing(directory: tmp.path, configuration: .init(capacity: 4, durability: .none))
        try publishFragment(ring, startNs: 0, durationNs: 1000)
        var held = try ring.reserve()
        try [9].withUnsafeBytes { try held.write($0) }
        try ring.reset()
        guard
            case .noop = try ring.publish(
                held,
                FragmentTiming(startNs: 1000, endNs: 2000, frameCount: 1, startsWithKeyframe: true, codec: .opaque))
        else {
            Issue.record("publish from before a reset was not a no-op")
            return
        }
        #expect(ring.fragments.isEmpty)
    }

    /// The index's intent: a reader holding a position whose slot has since been rewritten gets a clean miss, never
    /// the newer entry in its place.
    @Test func indexPositionRolledAway() {
        let t = SourceTimeline(source: SourceID(1), minimumCapacity: 7)  // 8 slots
        for k in 0..<8 { t.append(timeNs: Int64(k), kind: .candidate, reference: UInt64(k)) }
        let held: UInt64 = 2
        #expect(t.read(position: held)?.reference == 2)
        for k in 8..<20 { t.append(timeNs: Int64(k), kind: .candidate, reference: UInt64(k)) }
        #expect(t.read(position: held) == nil)
        // same slot (8 slots), the newer entry, by its own position
        #expect(t.read(position: held + 16)?.reference == 18)
    }
}
