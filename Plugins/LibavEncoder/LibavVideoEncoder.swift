import Config
import FragmentRing
import Media
import Pipeline

/// `x264` / `x265`: libavcodec encoders producing MPEG-TS fragments that each start on an IDR.
///
/// Fragment boundaries sit on a grid of `fragmentNs` anchored at the first frame and are decided by frame *time*, not
/// frame count, so a dropped frame never shifts a boundary: the first frame at or after each grid line is a forced IDR
/// and opens a new fragment — as is the first at or after each cut a capture session asks for (a shot's post-roll end),
/// from which the grid is counted on (``FragmentGrid``).
public final class LibavVideoEncoder: VideoEncoder {
    public let codec: EncoderSession.Settings.Codec
    let bitrateBps: Int
    let preset: String
    let threads: Int
    var session: EncoderSession?
    var muxer: FragmentMuxer?
    var output: FragmentOutput?
    var format: VideoFormat?
    var grid = FragmentGrid(fragmentNs: 1, frameIntervalNs: 1)
    /// The open fragment's start and frame count, kept until it is closed.
    var open: (startNs: Int64, frames: Int) = (0, 0)

    public init(codec: EncoderSession.Settings.Codec, bitrateBps: Int, preset: String, threads: Int) {
        self.codec = codec
        self.bitrateBps = bitrateBps
        self.preset = preset
        self.threads = threads
    }

    public var fragmentExtension: String { "ts" }

    public func start(format: VideoFormat, fragmentNs: Int64, output: FragmentOutput) throws {
        guard format.pixelFormat == .nv12 else {
            throw MediaError(
                operation: "start encoder", "\(codec) takes NV12 frames; the source gives \(format.pixelFormat)")
        }
        let gop = Int((Int64(format.framesPerSecond) * fragmentNs + 500_000_000) / 1_000_000_000)
        let s = try EncoderSession(
            .init(
                codec: codec, width: format.width, height: format.height, framesPerSecond: format.framesPerSecond,
                bitrateBps: bitrateBps, gopFrames: max(1, gop), preset: preset, threads: threads))
        session = s
        muxer = try FragmentMuxer(encoder: s) { [unowned output] bytes in try output.write(bytes) }
        self.output = output
        self.format = format
        grid = FragmentGrid(fragmentNs: fragmentNs, frameIntervalNs: format.frameIntervalNs, cuts: output.fragmentCuts)
    }

    public func nextFrameBuffer() throws -> VideoFrameBuffer {
        guard let session else { throw MediaError(operation: "encode", "encoder not started") }
        let p = try session.nextFrame()
        return VideoFrameBuffer(luma: p.luma, lumaStride: p.lumaStride, chroma: p.chroma, chromaStride: p.chromaStride)
    }

    public func encodeFrame(_ info: FrameInfo) throws {
        guard let session, let muxer, let output else { throw MediaError(operation: "encode", "encoder not started") }
        let place = grid.place(info.timeNs)
        if place.opens {
            if place.closesPrevious { try closeFragment(endNs: info.timeNs) }
            try output.beginFragment()
            try muxer.begin()
            open = (info.timeNs, 0)
        }
        try session.encode(pts: ticks90k(grid.elapsed(info.timeNs)), forceKeyframe: place.opens) { try muxer.write($0) }
        open.frames += 1
    }

    public func finish() throws {
        guard let session, let muxer, let format, grid.hasOpenFragment else { return }
        try session.flush { try muxer.write($0) }
        try closeFragment(endNs: grid.lastFrameNs + format.frameIntervalNs)
        grid.reset()
    }

    func closeFragment(endNs: Int64) throws {
        try muxer!.end()
        try output!.endFragment(
            FragmentTiming(
                startNs: open.startNs, endNs: endNs, frameCount: UInt32(open.frames), startsWithKeyframe: true,
                codec: codec == .hevc ? .hevc : .h264))
    }
}

/// The registrations.
public enum LibavEncoderPlugins {
    static func parameters(defaultPreset: String) -> [PluginParameterSpec] {
        [
            .init(
                "preset", .choice(["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]),
                default: .string(defaultPreset), "Encoder speed/quality preset."),
            .init(
                "threads", .integer, default: .number(0, isInteger: true), minimum: 0, maximum: 64,
                "Encoder threads (0: codec decides)."),
        ]
    }

    static func factory(_ name: String, _ codec: EncoderSession.Settings.Codec, _ summary: String) -> PluginFactory {
        PluginFactory(
            PluginDescriptor(
                name: name, kind: .encoder, summary: summary, parameters: parameters(defaultPreset: "ultrafast")),
            make: { p, config in
                LibavVideoEncoder(
                    codec: codec, bitrateBps: Int(config[.videoBitrateBps]), preset: p.string("preset"),
                    threads: p.integer("threads"))
            })
    }

    public static let x264 = factory(
        "x264", .h264, "H.264 (libx264 via libavcodec): IDR per fragment, no B-frames, zero latency, MPEG-TS fragments."
    )
    public static let x265 = factory(
        "x265", .hevc, "HEVC (libx265 via libavcodec), the seed's codec: same fragment rules as x264; slower on a CPU.")

    public static let all = [x264, x265, PassthroughEncoder.factory]
}
