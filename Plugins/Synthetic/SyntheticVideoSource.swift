import Foundation
import Pipeline
import Syscall

/// `synthetic.video`: NV12 frames of any size and rate showing a club shaft whose angle per frame is known from the
/// ``SwingScript``, a ball that leaves at each impact, and a ``FrameCounter`` bar code of the frame index.
///
/// Cost per frame: one fill of the buffer plus a few thousand pixels of drawing; nothing is allocated.
public final class SyntheticVideoSource: VideoSource {
    public let format: VideoFormat
    public let script: SwingScript
    let startNs: Int64
    let frameCount: Int64
    let pace: Pace
    let texture: Texture
    /// Two noise fields, each `fieldWidth` × height, values 0…23 (texture .noise only).
    let fieldA: [UInt8]
    let fieldB: [UInt8]
    let fieldWidth: Int
    var next: Int64 = 0
    var paceOriginNs: Int64 = 0

    /// The background the shaft is drawn over.
    public enum Texture: String, Sendable, CaseIterable {
        /// Flat dark grey: nearly free to encode; fine for tests of timing and counting.
        case flat
        /// Two noise fields sliding at different speeds, summed: changes everywhere every frame, as a sensor's picture
        /// does, so an encoder pays what it would for a camera. The default, so a self-test does not flatter the CPU.
        case noise
    }

    public enum Pace: String, Sendable, CaseIterable {
        /// Frames as fast as the caller reads them (tests, benchmarks).
        case asap
        /// Each frame no earlier than its capture time would allow a camera to deliver it.
        case realtime
    }

    public init(
        format: VideoFormat, script: SwingScript, startNs: Int64 = 0, seconds: Double, pace: Pace = .asap,
        texture: Texture = .flat
    ) {
        precondition(format.pixelFormat == .nv12, "synthetic.video draws NV12")
        self.format = format
        self.script = script
        self.startNs = startNs
        self.frameCount = Int64((seconds * Double(format.framesPerSecond)).rounded())
        self.pace = pace
        self.texture = texture
        fieldWidth = format.width + 256
        if texture == .noise {
            var rng = SplitMix64(seed: 42)
            fieldA = (0..<(fieldWidth * format.height)).map { _ in UInt8(truncatingIfNeeded: rng.next() % 24) }
            fieldB = (0..<(fieldWidth * format.height)).map { _ in UInt8(truncatingIfNeeded: rng.next() % 24) }
        } else {
            fieldA = []
            fieldB = []
        }
    }

    /// Capture time of frame `i`: exact to the nanosecond (i × 1e9 / fps, rounded down).
    public func timeNs(ofFrame i: Int64) -> Int64 {
        startNs + i * 1_000_000_000 / Int64(format.framesPerSecond)
    }

    /// The first frame at or after `t` (so the frame that first shows the ball gone is `firstFrame(atOrAfter: impact)`).
    public func firstFrame(atOrAfter t: Int64) -> Int64 {
        let fps = Int64(format.framesPerSecond)
        let rel = t - startNs
        return (rel * fps + 999_999_999) / 1_000_000_000
    }

    /// Frames in the stream.
    public var frames: Int64 { frameCount }

    public func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo? {
        guard next < frameCount else { return nil }
        let i = next
        next += 1
        let t = timeNs(ofFrame: i)
        if pace == .realtime { waitUntil(t) }
        render(i, into: frame)
        return FrameInfo(index: i, timeNs: t)
    }

    /// Draws frame `i` — background, ball, shaft at the script's angle for its time, frame counter — into `frame`.
    /// Depends on nothing but `i`, so frames may be drawn in any order or on several threads at once.
    public func render(_ i: Int64, into frame: VideoFrameBuffer) {
        let t = timeNs(ofFrame: i)
        let w = format.width
        let h = format.height
        let stride = frame.lumaStride
        let base = frame.luma
        if texture == .noise {
            // Background 28…74: field A slides right 1 px a frame, field B left 3 px a frame.
            let offA = Int(i % 256)
            let offB = 255 - Int((i * 3) % 256)
            fieldA.withUnsafeBufferPointer { a in
                fieldB.withUnsafeBufferPointer { b in
                    for row in 0..<h {
                        let dst = base + row * stride
                        let ra = a.baseAddress! + row * fieldWidth + offA
                        let rb = b.baseAddress! + row * fieldWidth + offB
                        for x in 0..<w { dst[x] = 28 &+ ra[x] &+ rb[x] }
                    }
                }
            }
        } else {
            for row in 0..<h { (base + row * stride).update(repeating: 40, count: w) }  // dark luma
        }
        // neutral chroma
        for row in 0..<(h + 1) / 2 { (frame.chroma + row * frame.chromaStride).update(repeating: 128, count: w) }

        // Ball: a bright disc at the bottom centre while it is on the tee.
        let r = max(2, h / 40)
        let bx = w / 2
        let by = h - 2 * r - 1
        if script.ballPresent(at: t) {
            for dy in -r...r {
                let span = Int(Double(r * r - dy * dy).squareRoot())
                (base + (by + dy) * stride + bx - span).update(repeating: 250, count: 2 * span + 1)
            }
        }
        // Shaft: from the grip above the ball, at the script's angle (0 = pointing straight down at the ball).
        let radians = script.shaftDegrees(at: t) * Double.pi / 180
        let gx = Double(bx)
        let gy = Double(by) - Double(h) * 0.55
        let length = Double(h) * 0.5
        let (sx, sy) = (sin(radians), cos(radians))
        let steps = Int(length)
        for s in 0...steps {
            let x = Int(gx + sx * Double(s))
            let y = Int(gy + sy * Double(s))
            if x >= 1, x < w - 1, y >= 0, y < h {
                (base + y * stride + x - 1).update(repeating: 220, count: 3)
            }
        }
        FrameCounter.draw(i, into: base, width: w, height: h, stride: stride)
    }

    /// Sleeps until frame time `t` is due on the pace clock (the first call anchors it).
    public func waitUntil(_ t: Int64) {
        let now = monotonicNowNs()
        if paceOriginNs == 0 { paceOriginNs = now - (t - startNs) }
        let due = paceOriginNs + (t - startNs)
        if due > now { sleepUntilNs(due) }
    }
}
