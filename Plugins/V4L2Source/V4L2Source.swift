import Config
import Pipeline
import Syscall
import V4L2

/// `v4l2`: a camera. One device, one mode for the life of the session, chosen frame-rate-first (seed 000 REQ-FPS-1),
/// warmed once (rate pinned and read back, automatic controls locked off), streamed with mmap buffers.
///
/// Per frame: one dequeue, one copy of NV12 rows into the encoder's frame (or one YUYV→NV12 conversion), one requeue;
/// nothing allocated, no lock. Frame times are the kernel's CLOCK_MONOTONIC timestamps (the capture clock) plus
/// capture.frameStartToExposureOffsetNs; frame indices are the driver's sequence numbers, so a gap is a drop, counted
/// by the capture session and never hidden.
///
/// A lost device (ENODEV) or a stalled stream is an interruption: reported as it starts, the device reopened with the
/// same mode until it is back or `recoverySeconds` pass, three frames verified to arrive in the session's format, and
/// only then reported as ended and verified.
public final class V4L2Source: VideoSource, InterruptionReporting, SourceDetailing {
    public let format: VideoFormat
    public let stream: V4L2Stream
    public let choiceWhy: String
    public var onInterruption: ((SourceInterruption) -> Void)?
    let exposureOffsetNs: Int64
    let stallMs: Int32
    let recoveryNs: Int64
    /// The index the current streaming epoch's first frame gets (epochs restart the driver's sequence at a resume).
    var indexBase: Int64 = 0
    var epochFirstSequence: UInt32?
    var lastIndex: Int64 = -1
    var interruptions: UInt64 = 0
    var pendingLoss: V4L2Error?
    /// Which instant a frame's time marks, learned from the first frame's flags.
    public private(set) var timestampSource = "unknown (no frame yet)"
    /// Frames the driver flagged as corrupt (V4L2_BUF_FLAG_ERROR); delivered and counted.
    public private(set) var corruptFrames = 0
    /// Frames dequeued to verify a resumed stream (not part of the session's frames).
    public private(set) var verificationFrames = 0

    public init(
        device path: String, constraints: ModeConstraints, buffers: Int, exposureOffsetNs: Int64, stallMs: Int,
        recoverySeconds: Double,
        capacity: EncodeCapacity? = nil
    ) throws(V4L2Error) {
        let device = try V4L2Device(path: path)
        let card = try CapabilityCard.read(device)
        let (mode, why) = ModeSelection.choose(card.modes, constraints, capacity: capacity)
        guard let mode else { throw V4L2Error(.unsupported, device: path, operation: "select a mode", why) }
        device.close()
        stream = try V4L2Stream(path: path, mode: mode, buffers: buffers)
        choiceWhy = why
        let fps = Int(stream.interval.framesPerSecond.rounded())
        format = VideoFormat(
            width: mode.width, height: mode.height, framesPerSecond: max(1, fps),
            pixelFormat: mode.fourcc.isMotionJPEG ? .mjpeg : .nv12)
        self.exposureOffsetNs = exposureOffsetNs
        self.stallMs = Int32(stallMs)
        self.recoveryNs = Int64(recoverySeconds * 1e9)
    }

    deinit { stream.stop() }

    public var details: [String: String] {
        [
            "plugin": "v4l2", "device": stream.path, "mode": "\(stream.mode)", "why": choiceWhy,
            "frameInterval":
                "\(stream.interval)\(stream.rateHonoured ? " (pinned and read back)" : " (NOT the rate asked for: not trusted)")",
            "timestampSource": timestampSource, "buffers": "\(stream.buffersGranted)",
            "warm": stream.warmReport.joined(separator: "; "),
            "corruptFrames": "\(corruptFrames)", "verificationFrames": "\(verificationFrames)",
        ]
    }

    public func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo? {
        while true {
            if let loss = pendingLoss.take() { try recover("device lost: \(loss)") }
            let f: DequeuedFrame
            do {
                guard let got = try stream.device.dequeue(timeoutMs: stallMs) else {
                    try recover("no frame for \(stallMs) ms (stream stalled)")
                    continue
                }
                f = got
            } catch let e as V4L2Error where e.kind == .lost {
                try recover("device lost: \(e)")
                continue
            }
            // Dequeue time is read only where the driver's timestamps are not CLOCK_MONOTONIC.
            let capturedNs = f.monotonicTimestamp ? f.timestampNs : monotonicNowNs()
            if epochFirstSequence == nil {
                epochFirstSequence = f.sequence
                if timestampSource.hasPrefix("unknown") {
                    timestampSource =
                        f.monotonicTimestamp
                        ? "kernel CLOCK_MONOTONIC, \(f.startOfExposure ? "start of exposure" : "end of frame")"
                        : "dequeue time on CLOCK_MONOTONIC (the driver's timestamps are not monotonic)"
                }
            }
            let bytes = copy(f, into: frame)
            if f.corrupt { corruptFrames += 1 }
            let index = indexBase + Int64(f.sequence &- epochFirstSequence!)
            lastIndex = index
            let t = capturedNs + exposureOffsetNs
            do { try stream.device.requeue(f) } catch { pendingLoss = error }
            return FrameInfo(index: index, timeNs: t, byteCount: bytes)
        }
    }

    /// NV12 rows copied as they are; YUYV converted once: luma taken, chroma averaged over each pair of rows; a Motion
    /// JPEG frame's bytes copied whole (the buffer goes back to the driver at once). Returns the bytes of a compressed
    /// frame (0 for planes; 0 too for a JPEG that does not fit, which the passthrough encoder then refuses and counts).
    func copy(_ f: DequeuedFrame, into frame: VideoFrameBuffer) -> Int {
        if format.pixelFormat == .mjpeg {
            let out = frame.bytes
            guard let src = f.data.baseAddress, f.data.count <= out.count else { return 0 }
            out.baseAddress!.copyMemory(from: src, byteCount: f.data.count)
            return f.data.count
        }
        planes(f, into: frame)
        return 0
    }

    func planes(_ f: DequeuedFrame, into frame: VideoFrameBuffer) {
        let fmt = stream.format
        let w = fmt.width
        let h = fmt.height
        let rowBytes = fmt.bytesPerLine
        guard let src = f.data.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        let need = fmt.fourcc == .nv12 ? rowBytes * h * 3 / 2 : rowBytes * h
        guard f.data.count >= need else { return }  // a short buffer (driver error flag) leaves the previous picture
        if fmt.fourcc == .nv12 {
            for row in 0..<h { (frame.luma + row * frame.lumaStride).update(from: src + row * rowBytes, count: w) }
            let uv = src + rowBytes * h
            for row in 0..<h / 2 {
                (frame.chroma + row * frame.chromaStride).update(from: uv + row * rowBytes, count: w)
            }
            return
        }
        for row in stride(from: 0, to: h - 1, by: 2) {
            let a = src + row * rowBytes
            let b = a + rowBytes
            let ya = frame.luma + row * frame.lumaStride
            let yb = ya + frame.lumaStride
            let c = frame.chroma + (row / 2) * frame.chromaStride
            for x in stride(from: 0, to: w - 1, by: 2) {
                let i = x * 2
                ya[x] = a[i]
                ya[x + 1] = a[i + 2]
                yb[x] = b[i]
                yb[x + 1] = b[i + 2]
                c[x] = UInt8((UInt16(a[i + 1]) + UInt16(b[i + 1]) + 1) >> 1)
                c[x + 1] = UInt8((UInt16(a[i + 3]) + UInt16(b[i + 3]) + 1) >> 1)
            }
        }
    }

    /// Reports the interruption, reopens the device with the session's mode until it is back (or the time is up),
    /// verifies three frames arrive, and reports it ended and verified. Throws when the device does not come back.
    func recover(_ reason: String) throws {
        interruptions += 1
        let id = interruptions
        let start = monotonicNowNs()
        onInterruption?(SourceInterruption(id: id, startNs: start, reason: reason))
        var last = ""
        while true {
            do {
                try stream.rewarm()
                var seen = 0
                while seen < 3 {
                    guard let f = try stream.device.dequeue(timeoutMs: stallMs) else {
                        throw V4L2Error(
                            .other, device: stream.path, operation: "verify after resume",
                            "no frame within \(stallMs) ms")
                    }
                    try stream.device.requeue(f)
                    seen += 1
                    verificationFrames += 1
                }
                indexBase = lastIndex + 1
                epochFirstSequence = nil
                onInterruption?(
                    SourceInterruption(id: id, startNs: start, endNs: monotonicNowNs(), reason: reason, verified: true))
                return
            } catch {
                last = "\(error)"
                // back, but not as it was: a session keeps one format
                if (error as? V4L2Error)?.kind == .notHonoured { break }
            }
            if monotonicNowNs() - start >= recoveryNs { break }
            sleepNs(200_000_000)
        }
        stream.stop()
        throw V4L2Error(
            .lost, device: stream.path, operation: "resume",
            "\(reason); not back within \(Double(recoveryNs) / 1e9) s (last attempt: \(last))")
    }

    // MARK: Registration

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "v4l2", kind: .videoSource,
            summary:
                "A V4L2 camera: mode chosen frame-rate-first, rate pinned, automatic controls locked at warm, losses as interruptions.",
            parameters: [
                .init("device", .string, default: .string("/dev/video0"), "The video node."),
                .init(
                    "input", .integer, default: .number(-1, isInteger: true), minimum: -1, maximum: 255,
                    "Input (connector) index; -1: any."),
                .init(
                    "width", .integer, default: .number(0, isInteger: true), minimum: 0, maximum: 16_384,
                    "Frame width; 0: any."),
                .init(
                    "height", .integer, default: .number(0, isInteger: true), minimum: 0, maximum: 16_384,
                    "Frame height; 0: any."),
                .init(
                    "fps", .number, default: .number(0, isInteger: true), minimum: 0, maximum: 1000,
                    "Frame rate; 0: the highest offered."),
                .init(
                    "pixelFormat", .choice(["any", "NV12", "YUYV", "MJPG"]), default: .string("any"),
                    "Pixel format; any: NV12, YUYV, then MJPG at equal rank — MJPG first when this machine cannot encode the raw mode in time."
                ),
                .init(
                    "encoderMpxPerSecond", .number, default: .number(0, isInteger: true), minimum: 0, maximum: 100_000,
                    "Megapixels a second this machine's encoder sustains; 0: the figure `ppc-tool selftest` recorded (none: raw preferred)."
                ),
                .init(
                    "buffers", .integer, default: .number(8, isInteger: true), minimum: 2, maximum: 64,
                    "mmap buffers requested from the driver."),
                .init(
                    "stallMs", .integer, default: .number(1000, isInteger: true), minimum: 10, maximum: 600_000,
                    "No frame for this long is an interruption (the stream stalled)."),
                .init(
                    "recoverySeconds", .number, default: .number(10, isInteger: true), minimum: 0, maximum: 3600,
                    "How long a lost device may take to come back before the session fails."),
            ]),
        make: { p, config in
            let input = p.integer("input")
            let w = p.integer("width")
            let h = p.integer("height")
            let fps = p.number("fps")
            let pf = p.string("pixelFormat")
            let constraints = ModeConstraints(
                input: input >= 0 ? input : nil, width: w > 0 ? w : nil, height: h > 0 ? h : nil,
                framesPerSecond: fps > 0 ? fps : nil,
                fourcc: pf == "any" ? nil : FourCC(pf))
            let mpx = p.number("encoderMpxPerSecond")
            let capacity =
                mpx > 0
                ? EncodeCapacity(
                    pixelsPerSecond: mpx * 1e6, provenance: "assumed",
                    what: "encoderMpxPerSecond declared in the manifest") : EncodeCapacity.load()
            do {
                return try V4L2Source(
                    device: p.string("device"), constraints: constraints, buffers: p.integer("buffers"),
                    exposureOffsetNs: config[.frameStartToExposureOffsetNs], stallMs: p.integer("stallMs"),
                    recoverySeconds: p.number("recoverySeconds"), capacity: capacity)
            } catch {
                throw RegistryError("\(error)")
            }
        })
}
