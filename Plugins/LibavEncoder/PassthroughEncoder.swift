import Config
import FragmentRing
import Media
import Pipeline

/// `passthrough`: compressed frames (Motion JPEG) written into fragments as they arrive — never decoded, never
/// re-encoded. Every Motion JPEG frame is a keyframe, so fragments split on the same time grid as the encoders'
/// (``FragmentGrid``: by frame time, a dropped frame never shifts a boundary; and at each cut a session asks for), each a
/// NUT file that stands alone.
///
/// Per frame: the source writes the JPEG into this encoder's own buffer, which the muxer references for the length of
/// one `av_write_frame` — no copy on our side, nothing allocated.
public final class PassthroughEncoder: VideoEncoder, FrameRefusing {
    var muxer: FragmentMuxer?
    var output: FragmentOutput?
    var format: VideoFormat?
    var buffer: UnsafeMutableRawPointer?
    var capacity = 0
    var grid = FragmentGrid(fragmentNs: 1, frameIntervalNs: 1)
    var open: (startNs: Int64, frames: Int) = (0, 0)
    /// Frames refused as empty or larger than a frame may be (counted; the session goes on).
    public private(set) var framesRefused = 0
    public private(set) var framesUnended = 0

    public init() {}

    deinit { buffer?.deallocate() }

    public var fragmentExtension: String { "nut" }

    public func start(format: VideoFormat, fragmentNs: Int64, output: FragmentOutput) throws {
        guard format.pixelFormat == .mjpeg else {
            throw MediaError(
                operation: "start passthrough",
                "passthrough writes compressed frames (MJPEG) as they arrive; the source gives \(format.pixelFormat) — use x264 or x265"
            )
        }
        capacity = format.frameBytes
        buffer?.deallocate()
        buffer = .allocate(byteCount: capacity, alignment: 64)
        muxer = try FragmentMuxer(.mjpeg(width: format.width, height: format.height)) { [unowned output] bytes in
            try output.write(bytes)
        }
        self.output = output
        self.format = format
        grid = FragmentGrid(fragmentNs: fragmentNs, frameIntervalNs: format.frameIntervalNs, cuts: output.fragmentCuts)
    }

    public func nextFrameBuffer() throws -> VideoFrameBuffer {
        guard let buffer else { throw MediaError(operation: "passthrough", "not started") }
        return .compressed(buffer, capacity: capacity)
    }

    public func encodeFrame(_ info: FrameInfo) throws {
        guard let muxer, let output, let buffer else { throw MediaError(operation: "passthrough", "not started") }
        // A JPEG starts with SOI (FF D8); anything else (an empty or torn buffer from a camera) is refused, not stored.
        guard info.byteCount >= 4, info.byteCount <= capacity,
            buffer.load(as: UInt8.self) == 0xFF, buffer.load(fromByteOffset: 1, as: UInt8.self) == 0xD8
        else {
            framesRefused += 1
            return
        }
        // A JPEG ends with EOI (FF D9); a camera may pad the buffer after it with zeros. One that does not end so was
        // cut short on its way (USB bandwidth, a loose cable): stored — the decoder shows what arrived — and counted.
        // Refusing it would risk refusing every frame of a camera that ends its frames otherwise; counting costs a
        // look at the last bytes.
        var end = info.byteCount
        while end > 2, info.byteCount - end < 4096, buffer.load(fromByteOffset: end - 1, as: UInt8.self) == 0 {
            end -= 1
        }
        if buffer.load(fromByteOffset: end - 2, as: UInt8.self) != 0xFF
            || buffer.load(fromByteOffset: end - 1, as: UInt8.self) != 0xD9
        {
            framesUnended += 1
        }
        let place = grid.place(info.timeNs)
        if place.opens {
            if place.closesPrevious { try closeFragment(endNs: info.timeNs) }
            try output.beginFragment()
            try muxer.begin()
            open = (info.timeNs, 0)
        }
        try muxer.write(
            bytes: UnsafeRawBufferPointer(start: buffer, count: info.byteCount),
            pts: ticks90k(grid.elapsed(info.timeNs)), isKeyframe: true)
        open.frames += 1
    }

    public func finish() throws {
        guard let format, grid.hasOpenFragment else { return }
        try closeFragment(endNs: grid.lastFrameNs + format.frameIntervalNs)
        grid.reset()
    }

    func closeFragment(endNs: Int64) throws {
        try muxer!.end()
        try output!.endFragment(
            FragmentTiming(
                startNs: open.startNs, endNs: endNs, frameCount: UInt32(open.frames), startsWithKeyframe: true,
                codec: .mjpeg))
    }

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "passthrough", kind: .encoder,
            summary:
                "Motion JPEG from the camera or file written into NUT fragments as it arrives: never decoded, never re-encoded.",
            parameters: []),
        make: { _, _ in PassthroughEncoder() })
}
