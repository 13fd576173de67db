import Dispatch
import Foundation
import Media
import Pipeline
import Syscall

/// `synthetic.mjpeg`: what a high-frame-rate USB camera sends — Motion JPEG — with the picture of `synthetic.video`
/// (shaft at the script's angle, ball, frame counter). Every frame is drawn and JPEG-encoded **before arming**, on all
/// cores, as a camera's own encoder would have done; while armed the source only paces and copies each JPEG into the
/// frame buffer it is handed, so the capture path costs what a real MJPEG camera's would.
///
/// `distinctSeconds` bounds the memory: only that many seconds of frames are prepared and then repeated (frame `i`
/// shows frame `i mod distinct`, counter included; `FrameInfo.index` stays `i`, so drops are still counted). 0 keeps
/// every frame distinct.
public final class SyntheticMJPEGSource: VideoSource {
    public let format: VideoFormat
    let picture: SyntheticVideoSource
    /// Every prepared JPEG, back to back; frame k's bytes are `offsets[k]..<offsets[k + 1]`.
    let jpegs: [UInt8]
    let offsets: [Int]
    let frameCount: Int64
    let pace: SyntheticVideoSource.Pace
    var next: Int64 = 0
    /// Wall time spent preparing, ns, and the bytes held.
    public let preparationNs: Int64
    public var preparedBytes: Int { jpegs.count }
    public var distinctFrames: Int { offsets.count - 1 }

    public init(
        width: Int, height: Int, framesPerSecond: Int, script: SwingScript, startNs: Int64, seconds: Double,
        pace: SyntheticVideoSource.Pace, texture: SyntheticVideoSource.Texture, quality: Int, distinctSeconds: Double
    ) throws {
        let nv12 = VideoFormat(width: width, height: height, framesPerSecond: framesPerSecond)
        format = VideoFormat(width: width, height: height, framesPerSecond: framesPerSecond, pixelFormat: .mjpeg)
        picture = SyntheticVideoSource(
            format: nv12, script: script, startNs: startNs, seconds: seconds, pace: pace, texture: texture)
        frameCount = picture.frames
        self.pace = pace
        let distinct = Int(
            distinctSeconds > 0
                ? min(frameCount, max(1, Int64((distinctSeconds * Double(framesPerSecond)).rounded())))
                : max(1, frameCount))
        let t0 = monotonicNowNs()
        // Each core draws and encodes its own interleaved share, into its own buffer; joined in order after.
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, distinct))
        let results = Guarded([[UInt8]?](repeating: nil, count: distinct))
        let failure = Guarded<String?>(nil)
        // `render` reads only the source's immutable drawing state (format, script, noise fields), never its cursor.
        nonisolated(unsafe) let picture = self.picture
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            do {
                let encoder = try JPEGEncoder(width: width, height: height, quality: quality)
                let scratch = UnsafeMutableRawPointer.allocate(byteCount: nv12.frameBytes, alignment: 64)
                defer { scratch.deallocate() }
                let frame = VideoFrameBuffer(contiguous: scratch, width: width, height: height)
                var k = w
                while k < distinct {
                    picture.render(Int64(k), into: frame)
                    let jpeg = try encoder.encode(
                        luma: frame.luma, lumaStride: frame.lumaStride, chroma: frame.chroma,
                        chromaStride: frame.chromaStride)
                    results.withLock { $0[k] = jpeg }
                    k += workers
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        if let why = failure.withLock({ $0 }) { throw MediaError(operation: "prepare synthetic MJPEG", why) }
        let all = results.withLock { $0 }
        var joined: [UInt8] = []
        joined.reserveCapacity(all.reduce(0) { $0 + ($1?.count ?? 0) })
        var offsets = [0]
        for j in all {
            joined += j ?? []
            offsets.append(joined.count)
        }
        jpegs = joined
        self.offsets = offsets
        preparationNs = monotonicNowNs() - t0
    }

    public func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo? {
        guard next < frameCount else { return nil }
        let i = next
        next += 1
        let t = picture.timeNs(ofFrame: i)
        if pace == .realtime { picture.waitUntil(t) }
        let k = Int(i % Int64(distinctFrames))
        let n = offsets[k + 1] - offsets[k]
        let out = frame.bytes
        guard n <= out.count else {
            throw MediaError(operation: "synthetic.mjpeg", "frame \(i) is \(n) bytes; the buffer holds \(out.count)")
        }
        jpegs.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress! + offsets[k], byteCount: n) }
        return FrameInfo(index: i, timeNs: t, byteCount: n)
    }
}
