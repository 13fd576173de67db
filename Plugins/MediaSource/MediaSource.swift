import Config
import Foundation
import Media
import Pipeline

/// `file` and `network`: a recorded session or a stream replayed through the pipeline — its video as NV12 frames (or,
/// for Motion JPEG with `passthrough`, each JPEG as stored, never decoded) and its audio track as mono samples, from
/// one demuxer. The object is both a VideoSource and an AudioSource, so the
/// video and audio stages each read their own stream; the reader is behind a lock because they may run on two threads
/// (a file or network source is not a per-frame camera path).
public final class MediaSource: VideoSource, AudioSource {
    /// Accessed only while holding `lock`: the video and audio stages may read from two threads.
    let reader: MediaReader
    let lock = NSLock()
    public let format: VideoFormat
    public let sampleRate: Int
    public let location: String

    public init(location: String, timeoutSeconds: Double, passthrough: Bool = true) throws {
        let r = try MediaReader(location, timeoutSeconds: timeoutSeconds)
        guard let v = r.video else {
            throw MediaError(
                operation: "open", path: location, "no video stream (an audio-only input cannot be a video source)")
        }
        guard v.width > 0, v.height > 0 else {
            // libavformat leaves a size it refuses (an AVI claiming 65534x65534) at 0x0: what it claimed is not kept.
            throw MediaError(
                operation: "open", path: location,
                "the video stream has no frame size libavformat would take (it claims none, or one past what libavformat accepts)"
            )
        }
        guard v.width >= 2, v.height >= 2, v.width % 2 == 0, v.height % 2 == 0 else {
            throw MediaError(
                operation: "open", path: location, "video is \(v.width)x\(v.height); NV12 needs even dimensions")
        }
        guard v.framesPerSecond > 0 else {
            throw MediaError(operation: "open", path: location, "the video stream declares no frame rate")
        }
        let mjpeg = passthrough && r.videoCodec == "mjpeg"
        format = VideoFormat(
            width: v.width, height: v.height, framesPerSecond: v.framesPerSecond, pixelFormat: mjpeg ? .mjpeg : .nv12)
        sampleRate = r.audioSampleRate ?? 0
        self.location = r.location
        reader = r
    }

    public var hasAudio: Bool { sampleRate > 0 }

    public func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo? {
        lock.lock()
        defer { lock.unlock() }
        if format.pixelFormat == .mjpeg {
            return try reader.readVideoPacket(into: frame.bytes).map {
                FrameInfo(index: $0.index, timeNs: $0.timeNs, byteCount: $0.byteCount)
            }
        }
        return try reader.readVideo(
            luma: frame.luma, lumaStride: frame.lumaStride, chroma: frame.chroma, chromaStride: frame.chromaStride
        )
        .map { FrameInfo(index: $0.index, timeNs: $0.timeNs) }
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> AudioBlock? {
        lock.lock()
        defer { lock.unlock() }
        return try reader.readAudio(into: buffer).map {
            AudioBlock(firstSample: $0.firstSample, count: $0.count, timeNs: $0.timeNs)
        }
    }

    /// Audio samples dropped because the video side fell more than ten seconds behind.
    public var audioSamplesDropped: Int {
        lock.lock()
        defer { lock.unlock() }
        return reader.audioSamplesDropped
    }

    public static let file = PluginFactory(
        PluginDescriptor(
            name: "file", kind: .videoSource,
            summary: "A recorded session: any container libavformat reads; its video stream and its audio track.",
            parameters: [
                .init("path", .string, default: nil, "The file."),
                .init(
                    "passthrough", .boolean, default: .bool(true),
                    "Motion JPEG video passes through as stored (the passthrough encoder writes it); false decodes it to NV12 for an encoder."
                ),
            ]),
        make: { p, _ in
            try MediaSource(location: p.string("path"), timeoutSeconds: 5, passthrough: p.boolean("passthrough"))
        })

    public static let network = PluginFactory(
        PluginDescriptor(
            name: "network", kind: .videoSource,
            summary: "A live stream at a URL libavformat opens (udp://, rtsp://, srt://, http://); video and audio.",
            parameters: [
                .init("url", .string, default: nil, "e.g. udp://127.0.0.1:5000"),
                .init(
                    "timeoutSeconds", .number, default: .number(5, isInteger: true), minimum: 0.1, maximum: 3600,
                    "How long the stream may stay silent before it counts as ended."),
                .init(
                    "passthrough", .boolean, default: .bool(true),
                    "Motion JPEG video passes through as sent (the passthrough encoder writes it); false decodes it to NV12 for an encoder."
                ),
            ]),
        make: { p, _ in
            try MediaSource(
                location: p.string("url"), timeoutSeconds: p.number("timeoutSeconds"),
                passthrough: p.boolean("passthrough"))
        })

    public static let all = [file, network]
}
