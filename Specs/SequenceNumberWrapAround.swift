import FragmentRing
import TestSupport
import Testing

@testable import TimelineIndex

/// SequenceNumberWrapAround: order, windows, recycling and recovery are unchanged when the sequence passes 2^64.
@Suite("SequenceNumberWrapAround")
struct SequenceNumberWrapAround {
    @Test func ring() throws {
        let tmp = TemporaryDirectory()
        let start = UInt64.max - 5
        do {
            let ring = try FragmentRing(
                directory: tmp.path, configuration: .init(capacity: 8, durability: .none, initialSequence: start))
            var published: [UInt64] = []
            for i in 0..<10 {
                published.append(
                    try #require(try publishFragment(ring, startNs: Int64(i) * 500, durationNs: 500).published).sequence
                        .rawValue)
            }
            #expect(published == [start, start + 1, start + 2, start + 3, start + 4, .max, 0, 1, 2, 3])
            // Retained in order across the wrap: max-3 … max, 0 … 3.
            #expect(ring.fragments.map(\.sequence.rawValue) == [start + 2, start + 3, start + 4, .max, 0, 1, 2, 3])
            #expect(ring.latestSequence?.rawValue == 3)
            // A window spanning the wrap is contiguous, without a gap.
            let w = try ring.window(startNs: 2500, endNs: 3900)
            #expect(w.fragments.map(\.sequence.rawValue) == [.max, 0, 1])
            #expect(w.gaps.isEmpty)
            for f in ring.fragments {
                #expect(try ring.read(f.handle) == fragmentBytes(f.sequence.rawValue, size: 4096))
            }
        }
        // Recovery orders by serial number too, and continues after the wrap.
        let ring = try FragmentRing(directory: tmp.path, configuration: .init(capacity: 8, durability: .none))
        #expect(ring.fragments.map(\.sequence.rawValue) == [start + 2, start + 3, start + 4, .max, 0, 1, 2, 3])
        #expect(try publishFragment(ring, startNs: 5000, durationNs: 500).published?.sequence.rawValue == 4)
        #expect(ring.fragments.first?.sequence.rawValue == start + 3)
    }

    @Test func index() {
        let t = SourceTimeline(source: SourceID(1), minimumCapacity: 16, firstPosition: UInt64.max - 9)
        for k in 0..<40 { t.append(timeNs: Int64(k), kind: .audioWindow, reference: UInt64(k)) }
        #expect(t.count == 40)
        var out: [TimelineEntry] = []
        t.collect(startNs: 0, endNs: 100, into: &out)
        #expect(out.map(\.reference) == Array(UInt64(40 - t.capacity)..<40))
        var some: [TimelineEntry] = []
        t.collect(startNs: 30, endNs: 33, into: &some)
        #expect(some.map(\.timeNs) == [30, 31, 32, 33])
        // The entry just before the wrap is still retained and reads back by its position…
        #expect(t.read(position: UInt64.max)?.reference == 9)
        // …while the first one, overwritten since, is a clean miss, not the entry that replaced it.
        #expect(t.read(position: UInt64.max - 9) == nil)
    }
}
