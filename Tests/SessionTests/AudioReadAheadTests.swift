import Foundation
import Pipeline
import Synchronization
import Testing

@testable import Session

@Suite("AudioReadAhead: the audio source's own queue")
struct AudioReadAheadTests {
    /// Blocks of `frames` samples whose value is their sample number; `failAfter` blocks, then an error (or the end).
    final class CountingSource: AudioSource, @unchecked Sendable {
        // @unchecked: read only on the reader thread; `reads` is atomic.
        let sampleRate = 48_000
        let frames: Int
        let blocks: Int
        let failAfter: Int?
        let reads = Atomic<Int>(0)
        /// Signalled when the read numbered `signalAt` (from 1) has been made.
        let signalAt: Int?
        let reached = DispatchSemaphore(value: 0)
        var next: Int64 = 0

        init(frames: Int, blocks: Int, failAfter: Int? = nil, signalAt: Int? = nil) {
            self.frames = frames
            self.blocks = blocks
            self.failAfter = failAfter
            self.signalAt = signalAt
        }

        struct Broken: Error, CustomStringConvertible { var description: String { "the card went away" } }

        func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> AudioBlock? {
            let n = reads.add(1, ordering: .relaxed).newValue
            if n == signalAt { reached.signal() }
            if let f = failAfter, n > f { throw Broken() }
            guard n <= blocks else { return nil }
            for i in 0..<frames { buffer[i] = Float(next + Int64(i)) }
            defer { next += Int64(frames) }
            return AudioBlock(firstSample: next, count: frames, timeNs: next * 20_833)
        }
    }

    @Test func everyBlockArrivesInOrderWithItsSamplesAcrossManyTurnsOfTheRing() throws {
        let source = CountingSource(frames: 480, blocks: 50)
        let reader = AudioReadAhead(source: source, blockFrames: 480, slots: 2)
        reader.start()
        var expected: Int64 = 0
        var seen = 0
        while try reader.next({ b, part in
            #expect(b.firstSample == expected)
            #expect(part.count == 480)
            #expect(part.first == Float(expected) && part.last == Float(expected + 479))
            expected += Int64(b.count)
            seen += 1
            return true
        }) {}
        reader.stop()
        #expect(seen == 50)
    }

    @Test func theSourcesErrorArrivesAfterTheBlocksReadBeforeIt() {
        let source = CountingSource(frames: 100, blocks: 20, failAfter: 5)
        let reader = AudioReadAhead(source: source, blockFrames: 100, slots: 4)
        reader.start()
        var seen = 0
        #expect(throws: CountingSource.Broken.self) {
            while try reader.next({ _, _ in
                seen += 1
                return true
            }) {}
        }
        reader.stop()
        #expect(seen == 5)
    }

    @Test func theReaderGoesOnWhileTheConsumerIsBusyUntilTheRingIsFull() throws {
        // The consumer holds its first block until the source has been read 8 times and all 8 are filed: only a reader
        // that does not wait for the consumer gets there (the 8 slots: the one being consumed and 7 more). The read
        // is signalled before its block is filed, so the test also waits for the backlog itself — else the consumer
        // could free its slot first and the deepest backlog be 7 (seen once under TSan).
        let source = CountingSource(frames: 10, blocks: 100, signalAt: 8)
        let reader = AudioReadAhead(source: source, blockFrames: 10, slots: 8)
        reader.start()
        var first = true
        var reachedWhileBusy = false
        var seen = 0
        while try reader.next({ _, _ in
            if first {
                first = false
                // A bound, not a pacing: if the reader waited for the consumer this would never be signalled.
                reachedWhileBusy =
                    source.reached.wait(timeout: .now() + 30) == .success
                    && reader.waitForBacklog(8, until: Date(timeIntervalSinceNow: 30))
            }
            seen += 1
            return true
        }) {}
        reader.stop()
        #expect(reachedWhileBusy)
        #expect(seen == 100)
        #expect(reader.deepestBacklog == 8)
    }

    @Test func stoppingEarlyEndsTheReaderEvenWhenTheRingIsFull() throws {
        let source = CountingSource(frames: 10, blocks: 1_000_000)
        let reader = AudioReadAhead(source: source, blockFrames: 10, slots: 3)
        reader.start()
        var seen = 0
        while try reader.next({ _, _ in
            seen += 1
            return seen < 3
        }) {}
        reader.stop()  // returns only once the reader thread has left its loop
        let reads = source.reads.load(ordering: .relaxed)
        #expect(seen == 3)
        #expect(reads < 1_000_000)
        #expect(source.reads.load(ordering: .relaxed) == reads)  // nothing reads after stop()
    }
}
