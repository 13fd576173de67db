import ALSA
import Audio
import Config
import Glibc
import Pipeline
import Synchronization
import Syscall

/// What `ALSASource` reads: the card's PCM, or in tests a stand-in that can go away and come back.
protocol CaptureStream: AnyObject {
    var configuration: PCM.Configuration { get }
    func readInterleaved(_ buffer: UnsafeMutableRawPointer, frames: Int) -> Int
    func recover(_ code: Int) throws(ALSAError)
    func clockPoint(framesTransferred: Int64) throws(ALSAError) -> PCMClockPoint?
}

extension PCM: CaptureStream {}

/// `alsa`: a microphone on a sound card. Reads one channel of a named PCM as mono Float32, period by period, and puts
/// every sample on the capture clock through the card's own timestamps (`snd_pcm_status` htstamp, CLOCK_MONOTONIC):
/// the card's rate against that clock is fitted continuously (``SampleClock``), so a sample's time carries the
/// measured drift, not the nominal rate.
///
/// An overrun (the reader fell behind the card's buffer) is recovered at once; the samples it cost are estimated from
/// the clock fit and skipped in the sample numbering, so `AudioBlock.firstSample` stays on the card's clock and the
/// session sees the gap. The estimate is the median over the first `placementPeriods` periods after the restart, each
/// read and held before any is handed on: one timestamp taken late (a loaded machine, a VM's timer) misplaced every
/// later sample by as much when one point decided it. Per period: one `snd_pcm_readi`, one `snd_pcm_status`, a conversion into the caller's
/// buffer — nothing allocated.
///
/// A microphone that goes away (a USB cable pulled: ENODEV, or any error an overrun's recovery cannot clear) is an
/// interruption, as a camera's is (seed 001): said at once, the device opened again every `retryNs` until it comes back
/// with the configuration the session was set up with (verified: rate, channels, format, period), then said again when
/// its first period has been read. The samples it was away are skipped on the card's clock, as an overrun's are, so the
/// session sees one gap. `stopWaitingForDevice()` ends the wait (the session is over): the stream then ends.
public final class ALSASource: AudioSource, SampleClockMapping, SourceDetailing, InterruptionReporting, DeviceWaiting {
    /// The stream being read; nil while the device is away. Touched only by the reading thread.
    var stream: CaptureStream?
    /// Opens the device again after it went away.
    let reopen: () throws -> CaptureStream
    /// How long between attempts to open a device that went away.
    let retryNs: Int64
    let giveUp = Atomic<Bool>(false)
    public var onInterruption: ((SourceInterruption) -> Void)?
    /// The interruption whose device is back but not yet read from (closed, verified, with the first period).
    var resumed: SourceInterruption?
    var interruptionCount: UInt64 = 0
    let channel: Int
    let raw: UnsafeMutableRawPointer
    public var sampleRate: Int { configuration.sampleRate }
    /// As granted when the source opened; a device that comes back must match it.
    public let configuration: PCM.Configuration
    /// The card's sample clock as fitted so far. The reader adds a point per period; the session asks for times from
    /// another thread (its audio source is read ahead), hence the lock — held for a few arithmetic operations.
    public var clock: SampleClock { fit.withLock { $0 } }
    let fit: Guarded<SampleClock>
    /// Sample number of the first frame read since the stream last (re)started.
    var runBase: Int64 = 0
    /// Frames read since the stream last (re)started.
    var framesInRun: Int64 = 0
    /// The next sample number to hand out.
    var next: Int64 = 0
    /// Set when the stream restarts (after an overrun, or on a device that came back): the next clock point places the
    /// restarted stream on the sample clock, and the samples it missed are skipped.
    var resyncAfterRestart = false
    public private(set) var overruns = 0
    /// Periods read after a restart before it is placed (8 × 5 ms: 40 ms later, once, after an overrun).
    static let placementPeriods = 8
    /// The periods held while a restarted stream is placed: their bytes, frames and clock points, handed on in order
    /// once it is. Allocated once.
    let heldBytes: UnsafeMutableRawPointer
    var held: [(frames: Int, end: Int64, point: PCMClockPoint?)]
    var heldCount = 0, heldNext = 0
    /// Where each held point puts the restarted stream (samples lost), sorted for the median. Allocated once.
    var implied: [Double]
    public private(set) var samplesLost: Int64 = 0
    /// Times the device went away.
    public private(set) var outages = 0

    public convenience init(
        device: String, sampleRate: Int, channels: Int, channel: Int, periodFrames: Int, periods: Int
    ) throws {
        let open = { () throws -> CaptureStream in
            try PCM(
                device: device, direction: .capture, sampleRate: sampleRate, channels: channels,
                periodFrames: periodFrames, periods: periods)
        }
        try self.init(stream: open(), channel: channel, reopen: open, retryNs: 250_000_000)
    }

    init(stream: CaptureStream, channel: Int, reopen: @escaping () throws -> CaptureStream, retryNs: Int64) throws {
        self.stream = stream
        self.reopen = reopen
        self.retryNs = retryNs
        configuration = stream.configuration
        let c = configuration
        guard channel < c.channels else {
            throw ALSAError(
                "choose channel \(channel)", device: c.device, "the device opened with \(c.channels) channel(s)")
        }
        self.channel = channel
        raw = .allocate(byteCount: c.periodFrames * c.channels * c.format.bytes, alignment: 16)
        heldBytes = .allocate(
            byteCount: Self.placementPeriods * c.periodFrames * c.channels * c.format.bytes, alignment: 16)
        held = Array(repeating: (0, 0, nil), count: Self.placementPeriods)
        implied = Array(repeating: 0, count: Self.placementPeriods)
        // One clock point per period; the fit forgets with a time constant of about a minute.
        fit = Guarded(
            SampleClock(nominalRate: c.sampleRate, horizonPoints: max(100, Int(60_000_000_000 / max(1, c.periodNs)))))
    }

    deinit {
        raw.deallocate()
        heldBytes.deallocate()
    }

    var periodBytes: Int { configuration.periodFrames * configuration.channels * configuration.format.bytes }

    /// Ends a wait for a device that went away (the session is over): `read` then returns nil. No effect on a device
    /// that is there.
    public func stopWaitingForDevice() { giveUp.store(true, ordering: .relaxed) }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> AudioBlock? {
        if heldNext < heldCount { return handOnHeld(into: buffer) }
        let c = configuration
        let want = min(buffer.count, c.periodFrames)
        var got = 0
        var reading: CaptureStream
        while true {
            guard let stream else { return nil }  // gave up waiting for the device
            reading = stream
            let r = stream.readInterleaved(raw, frames: want)
            if r > 0 {
                got = r
                break
            }
            if r == 0 { continue }
            // -EPIPE (overrun) or -ESTRPIPE (suspend): prepare again; capture restarts at the next read. Anything else
            // (the device went away) or a recovery that fails: wait for the device to come back.
            if r == -Int(EPIPE) || r == -Int(ESTRPIPE), (try? stream.recover(r)) != nil {
                overruns += 1
            } else {
                guard awaitDevice(after: r) else { return nil }
            }
            resyncAfterRestart = true
            runBase = next
            framesInRun = 0
        }
        if var back = resumed {
            // Verified: the device that came back has handed over a period.
            back.endNs = monotonicNowNs()
            back.verified = true
            resumed = nil
            onInterruption?(back)
        }
        framesInRun += Int64(got)
        let point = try reading.clockPoint(framesTransferred: framesInRun)
        if resyncAfterRestart, fit.withLock({ $0.points > 0 }) {
            try placeRestart(reading, first: (got, point), want: want)
            return handOnHeld(into: buffer)
        }
        convert(frames: got, from: raw, into: buffer)
        // The point goes into the fit, and the block's first sample is timed by it.
        let (first, fitted): (Int64, Int64?) = fit.withLock { clock in
            if let p = point { clock.add(position: runBase + p.position, timeNs: p.timeNs) }
            let first = runBase + framesInRun - Int64(got)
            return (first, clock.timeNs(ofSample: Double(first)))
        }
        next = first + Int64(got)
        let timeNs = fitted ?? monotonicNowNs()
        return AudioBlock(firstSample: first, count: got, timeNs: timeNs)
    }

    /// The device went away (`code`, a negative errno): says so, closes it, opens it again every `retryNs` until it
    /// comes back as it was (true) or the session stops waiting (false).
    func awaitDevice(after code: Int) -> Bool {
        let c = configuration
        outages += 1
        interruptionCount += 1
        var lost = SourceInterruption(
            id: interruptionCount, startNs: monotonicNowNs(),
            reason:
                "the microphone \(c.device) went away (\(String(cString: strerror(Int32(-code))))); opened again every \(retryNs / 1_000_000) ms until it is back"
        )
        onInterruption?(lost)
        stream = nil  // closes it
        var refused: String?
        while !giveUp.load(ordering: .relaxed) {
            sleepNs(retryNs)  // the pace of retries: the device is polled, nothing else waits on this
            let again: CaptureStream
            do { again = try reopen() } catch {
                refused = "\(error)"
                continue
            }
            let a = again.configuration
            guard a.sampleRate == c.sampleRate, a.channels == c.channels, a.format == c.format,
                a.periodFrames == c.periodFrames
            else {
                refused = "it came back as \(a), not \(c)"
                continue
            }
            stream = again
            resumed = lost
            return true
        }
        lost.reason += "; still away when the session ended" + (refused.map { " (the last try: \($0))" } ?? "")
        onInterruption?(lost)
        return false
    }

    /// A restarted stream (an overrun, a device back): reads up to `placementPeriods` periods and holds them, places the
    /// stream on the card's clock by the median of where their points put it, then feeds the points to the fit. A read
    /// that fails ends the holding early; the next read meets the failure again.
    func placeRestart(_ reading: CaptureStream, first: (frames: Int, point: PCMClockPoint?), want: Int) throws {
        heldBytes.copyMemory(from: raw, byteCount: periodBytes)
        held[0] = (first.frames, framesInRun, first.point)
        heldCount = 1
        heldNext = 0
        while heldCount < Self.placementPeriods {
            let r = reading.readInterleaved(heldBytes + heldCount * periodBytes, frames: want)
            guard r > 0 else { break }
            framesInRun += Int64(r)
            held[heldCount] = (r, framesInRun, try reading.clockPoint(framesTransferred: framesInRun))
            heldCount += 1
        }
        fit.withLock { clock in
            // Where sample `next` (the first the restarted stream would have had, had nothing been lost) sits now.
            let slope = clock.slope
            let at = Double(clock.timeNs(ofSample: Double(next)) ?? 0)
            let base = runBase
            // The samples a point says were lost: where its time puts its position now, less where the run numbered it.
            func impliedLoss(_ p: PCMClockPoint) -> Double {
                Double(next) + (Double(p.timeNs) - at) / slope - Double(base + p.position)
            }
            var n = 0
            for i in 0..<heldCount {
                guard let p = held[i].point else { continue }
                // insertion into the sorted prefix: a handful of numbers, nothing allocated
                var k = n
                let v = impliedLoss(p)
                while k > 0, implied[k - 1] > v {
                    implied[k] = implied[k - 1]
                    k -= 1
                }
                implied[k] = v
                n += 1
            }
            guard n > 0 else { return }  // no timestamp yet: placed by the first point that comes
            let median = n % 2 == 1 ? implied[n / 2] : (implied[n / 2 - 1] + implied[n / 2]) / 2
            let lost = max(0, Int64(median.rounded()))
            runBase += lost
            samplesLost += lost
            resyncAfterRestart = false
            // A point that disagrees with the placement by more than a millisecond was taken late: left out of the fit.
            let tolerance = 1e6 / slope
            for i in 0..<heldCount {
                guard let p = held[i].point else { continue }
                if abs(impliedLoss(p) - median) <= tolerance {
                    clock.add(position: runBase + p.position, timeNs: p.timeNs)
                }
            }
        }
    }

    /// The next held period, numbered and timed where the placement put it.
    func handOnHeld(into buffer: UnsafeMutableBufferPointer<Float>) -> AudioBlock {
        let h = held[heldNext]
        convert(frames: h.frames, from: heldBytes + heldNext * periodBytes, into: buffer)
        heldNext += 1
        let first = runBase + h.end - Int64(h.frames)
        next = first + Int64(h.frames)
        let timeNs = fit.withLock { $0.timeNs(ofSample: Double(first)) } ?? monotonicNowNs()
        return AudioBlock(firstSample: first, count: h.frames, timeNs: timeNs)
    }

    @inline(__always)
    func convert(frames: Int, from raw: UnsafeMutableRawPointer, into buffer: UnsafeMutableBufferPointer<Float>) {
        let c = configuration
        let stride = c.channels
        switch c.format {
        case .s16:
            let s = raw.assumingMemoryBound(to: Int16.self)
            for i in 0..<frames { buffer[i] = Float(s[i * stride + channel]) * (1 / 32768) }
        case .s32:
            let s = raw.assumingMemoryBound(to: Int32.self)
            for i in 0..<frames { buffer[i] = Float(s[i * stride + channel]) * (1 / 2_147_483_648) }
        case .float:
            let s = raw.assumingMemoryBound(to: Float.self)
            for i in 0..<frames { buffer[i] = max(-1, min(1, s[i * stride + channel])) }
        }
    }

    public func captureTimeNs(ofSample position: Double) -> Int64 {
        fit.withLock { $0.timeNs(ofSample: position) } ?? monotonicNowNs()
    }

    public var details: [String: String] {
        let c = configuration
        var d = [
            "device": c.device, "configuration": c.description, "channel": String(channel),
            "latencyBoundMs": String(format: "%.3f", Double(c.periodNs) / 1e6),
            "timestamps": "snd_pcm_status htstamp, CLOCK_MONOTONIC, one per period",
            "overruns": String(overruns), "samplesLost": String(samplesLost), "clockPoints": String(clock.points),
            "outages": String(outages),
        ]
        if let ppm = clock.ratePpm, let u = clock.uncertaintyPpm {
            d["driftPpm"] = String(format: "%.2f", ppm)
            d["driftUncertaintyPpm"] = String(format: "%.2f", u)
        } else {
            d["driftPpm"] = "not yet fitted (needs 2 s of points)"
        }
        return d
    }

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "alsa", kind: .audioSource,
            summary:
                "A microphone on a sound card (ALSA): one channel, timestamped by the card on CLOCK_MONOTONIC, drift fitted.",
            parameters: [
                .init(
                    "device", .string, default: nil,
                    "PCM to open: hw:CARD,DEV (ppc-tool capture devices lists them), plughw:…, default."),
                .init(
                    "sampleRate", .integer, default: .number(48_000, isInteger: true), minimum: 8000, maximum: 192_000,
                    "Rate to ask for, Hz (seed 000: 48 kHz); the rate granted is in the report."),
                .init(
                    "channels", .integer, default: .number(1, isInteger: true), minimum: 1, maximum: 32,
                    "Channels to open (some cards open only as stereo or more)."),
                .init(
                    "channel", .integer, default: .number(0, isInteger: true), minimum: 0, maximum: 31,
                    "The channel to listen to, from 0."),
                .init(
                    "periodMs", .number, default: .number(5, isInteger: true), minimum: 0.5, maximum: 100,
                    "Period, ms: how often the card hands over samples; the timestamps' granularity and the latency bound."
                ),
                .init(
                    "periods", .integer, default: .number(32, isInteger: true), minimum: 2, maximum: 64,
                    "Periods of buffer: how long the reader may stall before an overrun (32 × 5 ms: 160 ms). Capture reads each period as it fills, so a longer buffer adds no latency."
                ),
            ],
            check: { p in
                p.integer("channel") < p.integer("channels")
                    ? nil : "channel \(p.integer("channel")) is not among \(p.integer("channels")) channel(s)"
            }),
        make: { p, _ in
            let rate = p.integer("sampleRate")
            return try ALSASource(
                device: p.string("device"), sampleRate: rate, channels: p.integer("channels"),
                channel: p.integer("channel"),
                periodFrames: max(16, Int((p.number("periodMs") * Double(rate) / 1000).rounded())),
                periods: p.integer("periods"))
        })
}
