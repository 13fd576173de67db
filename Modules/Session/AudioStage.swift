import Audio
import Foundation
import Pipeline
import Synchronization
import Syscall
import TimelineIndex

/// The audio thread's stage: the source read ahead on its own thread (`AudioReadAhead`), the recent audio kept for
/// candidates' windows, the detector fed, and what it hears recorded on the session (`SessionRunner.record`). What only
/// this thread touches — the envelope, drift, the first sample's time, the windows still owed — is its own; the report
/// reads them once the thread has ended.
final class AudioStage: @unchecked Sendable {
    // @unchecked: the fields below are the audio thread's until `run` returns (the report reads them after the
    // session's threads are joined); `resumedReason` is shared with the source's reader thread behind its mutex.
    unowned let session: SessionRunner
    let source: AudioSource

    /// The session's audio envelope for its timeline picture.
    private(set) var envelope = PeakEnvelope()
    /// How far the stream's own timestamps strayed from its sample count on the capture clock.
    private(set) var driftMaxNs: Int64 = 0
    /// Capture-clock time of the first block heard.
    private(set) var startNs: Int64?
    /// The read-ahead queue's deepest backlog, blocks.
    private(set) var backlogDeepestBlocks = 0
    /// Why the source was away when it came back verified: the reason the next gap gives.
    let resumedReason = Mutex<String?>(nil)
    /// The audio kept at rest beside the ring (`OUT/audio-ring/`), for a window cut by hand after the session; nil
    /// once it could not be written (said as a note: capture goes on without it).
    private(set) var atRest: AudioRingWriter?
    /// Blocks since the last anchor written at rest.
    var sinceAnchor = 0

    /// A shot's audio window owed until its last sample is heard: its first sample, length, and the capture-clock
    /// time and period of its first sample from the same clock fit as t0.
    struct Owed {
        var id: UInt64
        var first: Int64
        var count: Int
        var firstNs: Int64
        var nsPerSample: Double
    }

    init(session: SessionRunner, source: AudioSource) {
        self.session = session
        self.source = source
    }

    func run() {
        let components = session.components
        let c = components.config
        let rate = source.sampleRate
        let history = AudioHistory(sampleRate: rate, seconds: Double(c[.audioWindowNs]) / 1e9 + 4)
        let block = max(1, rate / 100)  // 10 ms
        // The source's own queue: its reader never waits for the detector or a sink (`AudioReadAhead`).
        let reader = AudioReadAhead(source: source, blockFrames: block, slots: SessionRunner.audioReadAheadBlocks)
        if let reporting = session.roles.audioInterruptions {
            // Called on the source's reader thread: the state, the report's list and the reason the next gap gives.
            reporting.onInterruption = { [self] i in
                if i.verified { resumedReason.withLock { $0 = i.reason } }
                session.record(.interruption(.audio, i))
            }
        }
        reader.start()
        var started = false
        var expected: Int64 = 0
        let clock = session.roles.audioClock
        var found: [DetectedImpact] = []
        // Windows owed to shots, cut as soon as their last sample has been heard (thread-owned; handed over under lock).
        // Each keeps its first sample's capture-clock time, taken with t0 from the same clock fit, so t0's place in
        // audio.wav is exactly where meta.json says.
        var owed: [Owed] = []
        let preSamples = Int64(Double(c[.audioPreNs]) * Double(rate) / 1e9)
        let windowSamples = Int(Double(c[.audioWindowNs]) * Double(rate) / 1e9)
        var streamStartNs: Int64 = 0
        func handOver(_ w: Owed) {
            let cut = history.window(first: w.first, count: w.count)
            session.keep(
                SessionRunner.AudioWindow(
                    samples: cut.samples, rate: rate, firstSample: w.first, missing: cut.missing,
                    firstSampleNs: w.firstNs, nsPerSample: w.nsPerSample), for: w.id)
        }
        // Where sample k lies on the capture clock: the source's own fit, else the nominal rate from the stream's start.
        func captureNs(ofSample k: Int64) -> Int64 {
            clock?.captureTimeNs(ofSample: Double(k)) ?? (streamStartNs + k * 1_000_000_000 / Int64(rate))
        }
        func keepAtRest(_ b: AudioBlock, _ part: UnsafeBufferPointer<Float>) {
            guard let w = atRest else { return }
            do {
                try w.write(first: b.firstSample, part)
                // About ten anchors a second (one a block would cost a lock on the clock fit each 10 ms).
                sinceAnchor += 1
                if sinceAnchor >= 10 {
                    sinceAnchor = 0
                    let end = b.firstSample + Int64(b.count)
                    try w.anchor(sample: end, captureNs: captureNs(ofSample: end))
                }
            } catch {
                atRest = nil
                session.record(
                    .note("audio at rest stopped (\(error)): a window cut from the ring after the session has no sound")
                )
            }
        }
        let eventSinks = session.roles.eventSinks
        let threshold = session.options.shotThreshold
        do {
            while try reader.next({ b, part in
                if let d = session.options.durationNs, let s = startNs, b.timeNs - s >= d { return false }
                if b.timeNs >= session.stop.atNs.load(ordering: .relaxed) { return false }
                if !started {
                    startNs = b.timeNs
                    streamStartNs = b.timeNs - b.firstSample * 1_000_000_000 / Int64(rate)
                    try components.detector?.start(sampleRate: rate, streamStartNs: streamStartNs)
                    started = true
                    do {
                        let w = try AudioRingWriter(
                            directory: "\(session.options.context.outputDirectory)/\(AudioRingWriter.directoryName)",
                            sampleRate: rate, seconds: c[.ringSeconds] + 5)
                        try w.anchor(sample: b.firstSample, captureNs: captureNs(ofSample: b.firstSample))
                        atRest = w
                    } catch {
                        session.record(
                            .note(
                                "audio is not kept at rest (\(error)): a window cut from the ring after the session has no sound"
                            ))
                    }
                    expected = b.firstSample
                    history.skip(b.firstSample)
                }
                if b.firstSample > expected {
                    // The source lost samples (an overrun): the detector and the history move past them, the gap goes
                    // on the timeline as an interruption and into the report.
                    let away = resumedReason.withLock { r in
                        defer { r = nil }
                        return r
                    }
                    let gap = AudioGap(
                        firstSample: expected, samples: b.firstSample - expected, noticedNs: b.timeNs,
                        reason: "the audio source lost \(b.firstSample - expected) samples ("
                            + (away.map { "its device was away: \($0)" } ?? "its numbering jumped: an overrun") + ")")
                    components.detector?.skip(samples: gap.samples)
                    history.skip(gap.samples)
                    let lostNs = gap.samples * 1_000_000_000 / Int64(rate)
                    session.eventTimeline.append(
                        timeNs: b.timeNs - lostNs, kind: .interruption, flags: 1, reference: UInt64(gap.firstSample),
                        value: lostNs)
                    session.record(.audioGap(gap))
                }
                expected = b.firstSample + Int64(b.count)
                // Drift: how far the stream's own timestamps stray from its sample count on the shared clock.
                let nominal = startNs! + b.firstSample * 1_000_000_000 / Int64(rate)
                driftMaxNs = max(driftMaxNs, abs(b.timeNs - nominal))
                history.append(part)
                keepAtRest(b, part)
                var peak: Float = 0
                for x in part { peak = max(peak, abs(x)) }
                envelope.add(timeNs: b.timeNs, peak: peak)
                session.audioTimeline.append(
                    timeNs: b.timeNs, kind: .audioWindow, reference: UInt64(b.firstSample), value: Int64(b.count))
                components.detector?.process(part) { found.append($0) }
                for i in found.indices {
                    // A sound card's own clock, fitted against the capture clock, places the impact; the detector
                    // assumed the nominal rate.
                    if let clock { found[i].t0Ns = clock.captureTimeNs(ofSample: found[i].impactSample) }
                }
                for cand in found {
                    session.eventTimeline.append(
                        timeNs: cand.t0Ns, kind: .candidate, reference: cand.id, value: cand.onsetSample)
                    for e in eventSinks {
                        e.candidate(cand)
                        if cand.score >= threshold { e.shot(cand) }
                    }
                    // Every candidate keeps its audio window, cut once its last sample is heard.
                    let first = cand.onsetSample - preSamples
                    let firstNs =
                        clock?.captureTimeNs(ofSample: Double(first))
                        ?? (streamStartNs + first * 1_000_000_000 / Int64(rate))
                    // The sample period the same fit gives (over a second of samples): audio.wav's sample k is at
                    // firstSampleNs + k × this, so t0's place in the file follows from meta.json alone.
                    let period =
                        clock.map {
                            Double($0.captureTimeNs(ofSample: Double(first + Int64(rate))) - firstNs) / Double(rate)
                        } ?? 1e9 / Double(rate)
                    owed.append(
                        Owed(id: cand.id, first: first, count: windowSamples, firstNs: firstNs, nsPerSample: period))
                    session.record(.candidate(cand, isShot: cand.score >= threshold))
                }
                found.removeAll(keepingCapacity: true)
                while let w = owed.first, history.written >= w.first + Int64(w.count) { handOver(owed.removeFirst()) }
                return true
            }) {}
        } catch {
            session.record(.failed(stage: "audio", error: "\(error)"))
        }
        reader.stop()
        // The last samples placed too: the ring at rest ends where the stream did.
        if let w = atRest, started { try? w.anchor(sample: expected, captureNs: captureNs(ofSample: expected)) }
        backlogDeepestBlocks = reader.deepestBacklog
        // The stream ended: windows still owed get what there is, the rest counted as missing.
        for w in owed { handOver(w) }
        session.record(.sourceEnded(.audio))
    }
}
