import FragmentRing
import TestSupport
import Testing

@testable import TimelineIndex

/// SeqlockNeverCorruptsValidatedRead: a read that validates is a whole entry as one producer wrote it — never a mix
/// of two writes — however the producer overwrites the slot under it.
@Suite("SeqlockNeverCorruptsValidatedRead")
struct SeqlockNeverCorruptsValidatedRead {
    /// Every word of entry k is derived from k, so any mix of two entries breaks a relation below.
    static func check(_ e: TimelineEntry) -> Bool {
        let k = e.timeNs
        return e.reference == UInt64(k) &* 3 &+ 1 && e.value == ~k && e.flags == UInt8(truncatingIfNeeded: k)
            && e.kind == .imuSample && e.source == SourceID(9)
    }

    @Test func index() {
        let timeline = SourceTimeline(source: SourceID(9), minimumCapacity: 64)  // small: constant overwriting
        let validated = Tally()
        let bad = Violations()
        concurrently(
            readers: 3,
            producer: {
                for k in 0..<Int64(300_000) {
                    timeline.append(
                        timeNs: k, kind: .imuSample, flags: UInt8(truncatingIfNeeded: k),
                        reference: UInt64(k) &* 3 &+ 1,
                        value: ~k)
                }
            },
            reader: { r, _ in
                let (first, n) = timeline.retained
                for off in stride(from: UInt64(r), to: n, by: 3) {
                    guard let e = timeline.read(position: first &+ off) else { continue }
                    validated.add()
                    if !Self.check(e) || e.timeNs != Int64(bitPattern: first &+ off) { bad.record("torn: \(e)") }
                }
                var snap: [TimelineEntry] = []
                timeline.collect(startNs: 0, endNs: .max, into: &snap)
                for e in snap where !Self.check(e) { bad.record("torn in snapshot: \(e)") }
                validated.add(snap.count)
            })
        #expect(bad.all.isEmpty, "\(bad.all)")
        // At least every reader's final pass (after the producer stopped) validated: ~170 entries each.
        #expect(validated.total > 300)
    }

    /// The ring's intent: a reader that gets bytes gets exactly the fragment it asked for, while the writer recycles
    /// slots under it.
    @Test func ring() throws {
        let tmp = TemporaryDirectory()
        let ring = try FragmentRing(directory: tmp.path, configuration: .init(capacity: 4, durability: .none))
        let validated = Tally()
        let bad = Violations()
        concurrently(
            readers: 2,
            producer: {
                for i in 0..<600 {
                    do {
                        try publishFragment(ring, startNs: Int64(i) * 1000, durationNs: 1000, size: 256 + i % 64)
                    } catch {
                        bad.record("publish: \(error)")
                    }
                }
            },
            reader: { _, _ in
                for f in ring.fragments {
                    do {
                        let bytes = try ring.read(f.handle)
                        validated.add()
                        if bytes != fragmentBytes(f.sequence.rawValue, size: Int(f.byteLength)) {
                            bad.record("fragment \(f.sequence): another fragment's bytes")
                        }
                    } catch let error as RingError where error.code == .rolledAway {
                    } catch {
                        bad.record("read \(f.sequence): \(error)")
                    }
                }
            })
        #expect(bad.all.isEmpty, "\(bad.all)")
        #expect(validated.total > 0)
    }
}
