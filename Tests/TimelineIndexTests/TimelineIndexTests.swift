import Testing

@testable import TimelineIndex

@Suite("TimelineIndex: many sources on one time axis")
struct TimelineIndexTests {
    /// Slots are a power of two; one is always the slot being rewritten, so a ring of 2^n slots retains 2^n − 1.
    @Test func capacityCoversWhatWasAskedFor() {
        let index = TimelineIndex()
        #expect(index.register(SourceID(1), name: "audio", rateHz: 100, windowSeconds: 10).capacity == 1023)
        #expect(index.register(SourceID(2), name: "video", minimumCapacity: 16).capacity == 31)
        #expect(index.register(SourceID(3), name: "imu", minimumCapacity: 15).capacity == 15)
    }

    @Test func snapshotReturnsTheWindowInclusiveAndInOrder() {
        let t = SourceTimeline(source: SourceID(1), minimumCapacity: 64)
        for i in 0..<50 { t.append(timeNs: Int64(i) * 10, kind: .imuSample, reference: UInt64(i)) }
        var out: [TimelineEntry] = []
        t.collect(startNs: 100, endNs: 200, into: &out)
        #expect(out.map(\.reference) == Array(10...20))
    }

    @Test func onlyTheNewestCapacityEntriesAreRetained() {
        let t = SourceTimeline(source: SourceID(1), minimumCapacity: 7)  // 8 slots, 7 retained
        for i in 0..<20 { t.append(timeNs: Int64(i), kind: .imuSample, reference: UInt64(i)) }
        var out: [TimelineEntry] = []
        t.collect(startNs: 0, endNs: 100, into: &out)
        #expect(out.map(\.reference) == Array(13..<20))
        #expect(t.read(position: 3) == nil)
        #expect(t.read(position: 19)?.reference == 19)
        #expect(t.read(position: 20) == nil)  // not yet written
    }

    @Test func timeGoingBackwardsIsRefusedAndCounted() {
        let t = SourceTimeline(source: SourceID(1), minimumCapacity: 8)
        #expect(t.append(timeNs: 100, kind: .candidate, reference: 1))
        #expect(!t.append(timeNs: 99, kind: .candidate, reference: 2))
        #expect(t.outOfOrderCount == 1)
        #expect(t.count == 1)
    }

    @Test func mergeOrdersByTimeThenSource() {
        let index = TimelineIndex()
        let video = index.register(SourceID(1), name: "video", minimumCapacity: 64)
        let audio = index.register(SourceID(2), name: "audio", minimumCapacity: 64)
        let imu = index.register(SourceID(3), name: "imu", minimumCapacity: 64)
        for i in 0..<10 { video.append(timeNs: Int64(i) * 500, kind: .videoFragment, reference: UInt64(i), value: 500) }
        for i in 0..<50 {
            audio.append(timeNs: Int64(i) * 100, kind: .audioWindow, reference: UInt64(i) * 480, value: 480)
        }
        for i in 0..<25 { imu.append(timeNs: Int64(i) * 200, kind: .imuSample, reference: UInt64(i)) }
        let s = index.snapshot(startNs: 1000, endNs: 2000)
        #expect(s.entries.count == 3 + 11 + 6)
        for (a, b) in zip(s.entries, s.entries.dropFirst()) {
            #expect((a.timeNs, a.source.rawValue) <= (b.timeNs, b.source.rawValue))
        }
        #expect(s.entries.first?.source == SourceID(1))  // video, audio and imu all at 1000 ns: video first
        #expect(s.sourceNames[SourceID(2)] == "audio")
    }

    @Test func aSavedSnapshotReadsBackIdentically() throws {
        let index = TimelineIndex()
        let a = index.register(SourceID(7), name: "mic — bay 3", minimumCapacity: 16)
        a.append(timeNs: -5, kind: .candidate, flags: 3, reference: .max, value: .min)
        a.append(timeNs: 42, kind: .interruption, reference: 1, value: 99)
        let s = index.snapshot(startNs: -10, endNs: 100)
        let back = try TimelineSnapshot(decoding: s.encoded())
        #expect(back == s)
    }

    @Test(arguments: [0, 3, 20, 50])
    func aDamagedSnapshotIsRefusedWithAReason(cut: Int) throws {
        let index = TimelineIndex()
        index.register(SourceID(1), name: "x", minimumCapacity: 16).append(timeNs: 1, kind: .shot, reference: 1)
        var bytes = index.snapshot(startNs: 0, endNs: 10).encoded()
        if cut == 50 { bytes[bytes.count - 9] ^= 1 } else { bytes = Array(bytes.prefix(cut)) }
        #expect(throws: SnapshotError.self) { try TimelineSnapshot(decoding: bytes) }
    }
}
