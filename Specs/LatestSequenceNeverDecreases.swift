import FragmentRing
import TestSupport
import Testing

@testable import TimelineIndex

/// LatestSequenceNeverDecreases: what readers see as the newest never goes backwards — not under concurrent
/// publishing, not when an older reservation is published late, not across a reopen.
@Suite("LatestSequenceNeverDecreases")
struct LatestSequenceNeverDecreases {
    @Test func ring() throws {
        let tmp = TemporaryDirectory()
        let ring = try FragmentRing(directory: tmp.path, configuration: .init(capacity: 16, durability: .none))
        let bad = Violations()
        let observed = Tally()
        concurrently(
            readers: 2,
            producer: {
                do {
                    for i in 0..<400 {
                        if i % 10 == 0 {
                            // Hold a reservation across the next publish, then publish it late (out of order).
                            var early = try ring.reserve()
                            try fragmentBytes(early.sequence.rawValue, size: 64).withUnsafeBytes { try early.write($0) }
                            try publishFragment(ring, startNs: Int64(i) * 2000 + 1000, durationNs: 1000)
                            _ = try ring.publish(
                                early,
                                FragmentTiming(
                                    startNs: Int64(i) * 2000, endNs: Int64(i) * 2000 + 1000, frameCount: 1,
                                    startsWithKeyframe: true, codec: .opaque))
                        } else {
                            try publishFragment(ring, startNs: Int64(i) * 2000, durationNs: 1000)
                        }
                    }
                } catch { bad.record("\(error)") }
            },
            reader: { _, _ in
                var last: SequenceNumber?
                for _ in 0..<200 {
                    let now = ring.latestSequence
                    if let l = last, let n = now, n < l { bad.record("latest went from \(l) to \(n)") }
                    if last != nil && now == nil { bad.record("latest disappeared") }
                    last = now ?? last
                    observed.add()
                }
            })
        #expect(bad.all.isEmpty, "\(bad.all)")
        #expect(observed.total > 0)
        let before = try #require(ring.latestSequence)
        let reopened = try FragmentRing(directory: tmp.path, configuration: .init(capacity: 16, durability: .none))
        let after = try #require(reopened.latestSequence)
        #expect(!(after < before))
    }

    @Test func index() {
        let t = SourceTimeline(source: SourceID(1), minimumCapacity: 128)
        let bad = Violations()
        concurrently(
            readers: 2,
            producer: { for k in 0..<Int64(200_000) { t.append(timeNs: k, kind: .imuSample, reference: UInt64(k)) } },
            reader: { _, _ in
                var last: UInt64 = 0
                var lastNewest: Int64 = -1
                for _ in 0..<1000 {
                    let c = t.count
                    if c < last { bad.record("count went from \(last) to \(c)") }
                    last = c
                    let (first, n) = t.retained
                    if n > 0, let e = t.read(position: first &+ n &- 1) {
                        if e.timeNs < lastNewest { bad.record("newest entry went from \(lastNewest) to \(e.timeNs)") }
                        lastNewest = e.timeNs
                    }
                }
            })
        #expect(bad.all.isEmpty, "\(bad.all)")
        #expect(t.count == 200_000)
    }
}
