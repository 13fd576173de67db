import Foundation
import Pipeline

/// The audio source's own queue (seed 001: a queue per source): a reader thread takes blocks from the source as they
/// come and files them into a fixed ring of slots; the session's audio thread — history, detector, sinks — takes them
/// from there. A decision that takes longer than the card's buffer, or a sink that blocks for a moment, then no longer
/// stalls the reader: the microphone overruns only when the consumer falls behind by the whole ring.
///
/// The ring is allocated once (`slots` × `blockFrames` samples); a block is handed to the consumer in place, not copied.
/// Per block: one short lock on each side to move an index, and a signal. When every slot is full the reader waits —
/// a live source then overruns in its own buffer, counted there as before; a file or a synthetic source simply waits.
/// A source's error or its end reaches the consumer after the blocks read before it.
final class AudioReadAhead: @unchecked Sendable {
    // @unchecked: `head`, `count`, `finished`, `failure`, `stopping` and `deepest` are touched only under `condition`;
    // a slot's samples and its block are written by the reader while the slot is free and read by the consumer while it
    // is filled — the index moves under the lock, so each slot has one owner at a time.
    let source: AudioSource
    let blockFrames: Int
    let slots: Int
    private let samples: UnsafeMutablePointer<Float>
    private var blocks: [AudioBlock]
    private let condition = NSCondition()
    /// The oldest filled slot, and how many are filled.
    private var head = 0
    private var count = 0
    private var finished = false
    private var failure: (any Error)?
    private var stopping = false
    private var readerDone = false
    /// The most slots ever filled at once: how far the consumer fell behind the source at worst.
    private var deepest = 0

    init(source: AudioSource, blockFrames: Int, slots: Int) {
        self.source = source
        self.blockFrames = max(1, blockFrames)
        self.slots = max(2, slots)
        samples = .allocate(capacity: self.blockFrames * self.slots)
        samples.initialize(repeating: 0, count: self.blockFrames * self.slots)
        blocks = Array(repeating: AudioBlock(firstSample: 0, count: 0, timeNs: 0), count: self.slots)
    }

    deinit { samples.deallocate() }

    /// Starts the reader thread.
    func start() {
        let t = Thread { [self] in readLoop() }
        t.name = "ppc.audio.read"
        t.start()
    }

    private func readLoop() {
        var tail = 0
        while true {
            condition.lock()
            while count == slots && !stopping { condition.wait() }
            let stop = stopping
            condition.unlock()
            if stop { break }
            let buffer = UnsafeMutableBufferPointer(start: samples + tail * blockFrames, count: blockFrames)
            let block: AudioBlock?
            do {
                block = try source.read(into: buffer)
            } catch {
                condition.lock()
                failure = error
                finished = true
                condition.broadcast()
                condition.unlock()
                break
            }
            condition.lock()
            if let block {
                blocks[tail] = block
                count += 1
                deepest = max(deepest, count)
            } else {
                finished = true
            }
            condition.broadcast()
            condition.unlock()
            guard block != nil else { break }
            tail = (tail + 1) % slots
        }
        condition.lock()
        readerDone = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for the next block and gives it to `body` in place; false at the end of the stream, or once `body` has
    /// said stop by returning false. Rethrows the source's error after the blocks read before it.
    func next(_ body: (AudioBlock, UnsafeBufferPointer<Float>) throws -> Bool) throws -> Bool {
        condition.lock()
        while count == 0 && !finished { condition.wait() }
        if count == 0 {
            let error = failure
            condition.unlock()
            if let error { throw error }
            return false
        }
        let slot = head
        let block = blocks[slot]
        condition.unlock()
        let goOn = try body(
            block, UnsafeBufferPointer(start: samples + slot * blockFrames, count: min(block.count, blockFrames)))
        condition.lock()
        head = (head + 1) % slots
        count -= 1
        condition.broadcast()
        condition.unlock()
        return goOn
    }

    /// Tells the reader to stop and waits until it has (a read in progress finishes first: a period, for a card).
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !readerDone { condition.wait() }
        condition.unlock()
    }

    /// Waits until `blocks` have been waiting at once, or `deadline` passes; whether they had. For tests: the reader
    /// files a block a moment after reading it, so "the source was read n times" alone does not say the ring holds n.
    func waitForBacklog(_ blocks: Int, until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while deepest < blocks && !finished {
            if !condition.wait(until: deadline) { break }
        }
        return deepest >= blocks
    }

    /// The most blocks that were waiting at once.
    var deepestBacklog: Int {
        condition.lock()
        defer { condition.unlock() }
        return deepest
    }
}
