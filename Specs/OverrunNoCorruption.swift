import Foundation
import FragmentRing
import Syscall
import TestSupport
import Testing

@testable import TimelineIndex

/// OverrunNoCorruption: a producer lapping the ring many times over, with readers working throughout, leaves exactly
/// the newest `capacity` items, each intact, and nothing else.
@Suite("OverrunNoCorruption")
struct OverrunNoCorruption {
    @Test func ring() throws {
        let tmp = TemporaryDirectory()
        let capacity = 8
        let ring = try FragmentRing(directory: tmp.path, configuration: .init(capacity: capacity, durability: .none))
        let bad = Violations()
        let windows = Tally()
        concurrently(
            readers: 2,
            producer: {
                for i in 0..<1500 {
                    do { try publishFragment(ring, startNs: Int64(i) * 1000, durationNs: 1000, size: 300) } catch {
                        bad.record("publish \(i): \(error)")
                    }
                }
            },
            reader: { _, _ in
                guard let newest = ring.fragments.last else { return }
                // A window over the newest three fragments, read whole: intact or cleanly gone, never wrong.
                guard let w = try? ring.window(startNs: newest.startNs - 2000, endNs: newest.endNs) else { return }
                windows.add()
                for (a, b) in zip(w.fragments, w.fragments.dropFirst()) where b.startNs != a.endNs {
                    bad.record("window not contiguous: \(a.sequence) then \(b.sequence)")
                }
                for f in w.fragments {
                    do {
                        if try ring.read(f.handle) != fragmentBytes(f.sequence.rawValue, size: 300) {
                            bad.record("bytes of \(f.sequence)")
                        }
                    } catch let error as RingError where error.code == .rolledAway {
                    } catch {
                        bad.record("\(f.sequence): \(error)")
                    }
                }
            })
        #expect(bad.all.isEmpty, "\(bad.all)")
        #expect(windows.total > 0)
        #expect(ring.fragments.map(\.sequence.rawValue) == Array(1493...1500))
        let files = try FileSystem.list("\(tmp.path)/fragments").sorted()
        #expect(files == ring.fragments.map { "\($0.sequence.hex).bin" })
        let scan = try FragmentRing.scan(directory: tmp.path)
        #expect(scan.fragments == ring.fragments)
        #expect(scan.problems.isEmpty)
    }

    @Test func index() {
        let timeline = SourceTimeline(source: SourceID(1), minimumCapacity: 255)  // 256 slots, 255 retained
        let bad = Violations()
        let snapshots = Tally()
        concurrently(
            readers: 2,
            producer: {
                for k in 0..<Int64(200_000) {
                    timeline.append(timeNs: k * 10, kind: .audioWindow, reference: UInt64(k))
                }
            },
            reader: { _, _ in
                var out: [TimelineEntry] = []
                timeline.collect(startNs: 0, endNs: .max, into: &out)
                snapshots.add()
                guard out.count <= timeline.capacity else {
                    return bad.record("snapshot of \(out.count) from a \(timeline.capacity)-entry ring")
                }
                for e in out where e.timeNs != Int64(e.reference) * 10 { bad.record("corrupt \(e)") }
                for (a, b) in zip(out, out.dropFirst()) where b.reference <= a.reference {
                    bad.record("out of order: \(a.reference) then \(b.reference)")
                }
            })
        #expect(bad.all.isEmpty, "\(bad.all)")
        #expect(snapshots.total > 0)
        var final: [TimelineEntry] = []
        timeline.collect(startNs: 0, endNs: .max, into: &final)
        #expect(final.map(\.reference) == Array(UInt64(200_000 - timeline.capacity)..<200_000))
    }
}
