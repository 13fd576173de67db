import Foundation
import Testing

@testable import Audio

/// The session's audio at rest: samples in a circle with clock anchors, read back by capture-clock time.
@Suite struct AudioRingAtRestTests {
    static func directory() -> String {
        let d = NSTemporaryDirectory() + "ppc-audio-ring-\(UUID().uuidString)"
        return d
    }

    @Test func samplesAreReadBackByTimeAcrossTheWrapWithLostOnesSilent() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 1 kHz, a 2 s circle; 3 s written in 10 ms blocks (sample k = k), 100 samples lost at 2.5 s.
        let w = try AudioRingWriter(directory: dir, sampleRate: 1_000, seconds: 2)
        var k: Int64 = 0
        try w.anchor(sample: 0, captureNs: 5_000_000_000)
        while k < 3_000 {
            if k == 2_500 { k += 100 }
            let block = (0..<10).map { Float(k + Int64($0)) }
            try block.withUnsafeBufferPointer { try w.write(first: k, $0) }
            k += 10
            if k % 100 == 0 { try w.anchor(sample: k, captureNs: 5_000_000_000 + k * 1_000_000) }
        }
        let cut = try AudioRingAtRest.read(directory: dir, fromNs: 6_400_000_000, toNs: 6_700_000_000)
        #expect(cut.sampleRate == 1_000 && cut.samples.count == 300)
        #expect(cut.firstSampleNs == 6_400_000_000 && abs(cut.nsPerSample - 1e6) < 1e-6)
        #expect(cut.samples[0] == 1_400 && cut.samples[99] == 1_499)  // wrapped: 1 400 sits at slot 1 400 of 2 000
        let gap = try AudioRingAtRest.read(directory: dir, fromNs: 7_450_000_000, toNs: 7_650_000_000)
        #expect(gap.samples[0] == 2_450 && gap.samples[50] == 0 && gap.samples[149] == 0 && gap.samples[150] == 2_600)
        // Written over, or not yet there: refused, saying what is held.
        #expect(throws: AudioRingAtRest.AtRestError.self) {
            try AudioRingAtRest.read(directory: dir, fromNs: 5_100_000_000, toNs: 5_200_000_000)
        }
        #expect(throws: AudioRingAtRest.AtRestError.self) {
            try AudioRingAtRest.read(directory: dir, fromNs: 7_900_000_000, toNs: 9_000_000_000)
        }
    }

    @Test func aTornAnchorIsPassedOverAndNoRingIsSaid() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(throws: AudioRingAtRest.AtRestError.self) {
            try AudioRingAtRest.read(directory: dir, fromNs: 0, toNs: 1)
        }
        let w = try AudioRingWriter(directory: dir, sampleRate: 1_000, seconds: 2)
        let block = [Float](repeating: 0.5, count: 1_000)
        try block.withUnsafeBufferPointer { try w.write(first: 0, $0) }
        try w.anchor(sample: 0, captureNs: 0)
        try w.anchor(sample: 1_000, captureNs: 1_000_000_000)
        // A third anchor torn mid-write: its check word does not match.
        let h = try FileHandle(forUpdating: URL(fileURLWithPath: dir + "/anchors.bin"))
        try h.seekToEnd()
        try h.write(contentsOf: Data(repeating: 0x7F, count: 24))
        try h.close()
        let cut = try AudioRingAtRest.read(directory: dir, fromNs: 100_000_000, toNs: 200_000_000)
        #expect(cut.samples.count == 100 && cut.samples.allSatisfy { $0 == 0.5 })
    }
}
