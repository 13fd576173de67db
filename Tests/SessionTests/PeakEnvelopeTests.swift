import Testing

@testable import Session

@Suite("PeakEnvelope: the timeline's audio envelope in bounded memory")
struct PeakEnvelopeTests {
    @Test func underItsCapacityEveryBlockIsKeptAsItCame() {
        var e = PeakEnvelope(capacity: 8)
        for i in 0..<5 { e.add(timeNs: Int64(i) * 10, peak: Float(i)) }
        #expect(e.all.map(\.0) == [0, 10, 20, 30, 40] && e.all.map(\.1) == [0, 1, 2, 3, 4])
        #expect(e.blocksPerEntry == 1)
    }

    @Test func aLongSessionStaysWithinCapacityAndKeepsEveryLoudPeakAtItsPlace() {
        var e = PeakEnvelope(capacity: 1024)
        let blocks = 1_000_000  // 2.8 hours of 10 ms blocks
        let loud = [3, 77_777, 500_001, 999_999]
        for i in 0..<blocks { e.add(timeNs: Int64(i) * 10_000_000, peak: loud.contains(i) ? 0.9 : 0.001) }
        #expect(e.entries.count <= 1024, "never more than its capacity")
        let all = e.all
        #expect(all.first?.0 == 0, "the first block's time")
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.0 < $1.0 }, "times in order")
        // Each loud block is in exactly one entry: the one whose span holds its time.
        let span = Int64(e.blocksPerEntry) * 10_000_000
        for i in loud {
            let t = Int64(i) * 10_000_000
            let holder = all.last { $0.0 <= t }
            #expect(holder?.1 == 0.9 && t - holder!.0 < span, "block \(i)")
        }
        #expect(all.filter { $0.1 == 0.9 }.count == loud.count)
    }
}
