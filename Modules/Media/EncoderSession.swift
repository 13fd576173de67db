import CFFmpeg

/// One libavcodec encode session (libx264 or libx265), configured for a ring of keyframe-aligned fragments.
///
/// - IDR forced at every fragment boundary by the caller (`encode(pts:forceKeyframe:)`), `forced-idr=1`, scene-cut
///   off and keyint above the fragment length, so no other IDR appears; no B-frames, no reordering, zero latency
///   (one frame in, one packet out).
/// - Frame rate set explicitly (seed 000: an implicit rate cost a third of the frames), bitrate with a VBV so it holds.
/// - Parameter sets repeated at every IDR (`repeat-headers=1`), so each fragment decodes on its own.
///
/// The frame the source fills is the encoder's own refcounted AVFrame, made writable again before each frame: in the
/// steady state nothing is allocated or copied per frame on our side (libx265 needs planar 4:2:0, so for HEVC one
/// swscale conversion NV12 → YUV420P into a second reused frame).
public final class EncoderSession {
    public struct Settings: Sendable, Equatable {
        public enum Codec: String, Sendable { case h264, hevc }
        public var codec: Codec
        public var width: Int
        public var height: Int
        public var framesPerSecond: Int
        public var bitrateBps: Int
        /// Frames per fragment (fps × fragment seconds): the longest GOP.
        public var gopFrames: Int
        /// x264/x265 preset (ultrafast … medium).
        public var preset: String
        /// Encoder threads; 0 lets the codec choose.
        public var threads: Int

        public init(
            codec: Codec, width: Int, height: Int, framesPerSecond: Int, bitrateBps: Int, gopFrames: Int,
            preset: String = "ultrafast", threads: Int = 0
        ) {
            self.codec = codec
            self.width = width
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.bitrateBps = bitrateBps
            self.gopFrames = gopFrames
            self.preset = preset
            self.threads = threads
        }
    }

    /// One encoded packet, valid only inside the handler it is passed to.
    public struct Packet {
        public let bytes: UnsafeRawBufferPointer
        /// Presentation time in 90 kHz ticks.
        public let pts: Int64
        public let isKeyframe: Bool
    }

    public let settings: Settings
    let context: UnsafeMutablePointer<AVCodecContext>
    /// The NV12 frame a source fills.
    let input: UnsafeMutablePointer<AVFrame>
    /// HEVC only: the YUV420P frame handed to libx265.
    let planar: UnsafeMutablePointer<AVFrame>?
    let scaler: OpaquePointer?
    let packet: UnsafeMutablePointer<AVPacket>

    public init(_ settings: Settings) throws(MediaError) {
        self.settings = settings
        let name = settings.codec == .h264 ? "libx264" : "libx265"
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw MediaError(
                operation: "find encoder", "\(name) is not in this FFmpeg build (install libavcodec with \(name))")
        }
        guard let ctx = avcodec_alloc_context3(codec), let frame = av_frame_alloc(), let pkt = av_packet_alloc() else {
            throw MediaError(operation: "allocate encoder", "out of memory")
        }
        context = ctx
        input = frame
        packet = pkt
        let hevc = settings.codec == .hevc
        ctx.pointee.width = Int32(settings.width)
        ctx.pointee.height = Int32(settings.height)
        ctx.pointee.pix_fmt = hevc ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_NV12
        ctx.pointee.time_base = mpegTimeBase
        ctx.pointee.framerate = ppc_rational(Int32(settings.framesPerSecond), 1)
        ctx.pointee.gop_size = Int32(settings.gopFrames * 2)
        ctx.pointee.keyint_min = Int32(settings.gopFrames)
        ctx.pointee.max_b_frames = 0
        ctx.pointee.bit_rate = Int64(settings.bitrateBps)
        ctx.pointee.rc_max_rate = Int64(settings.bitrateBps)
        ctx.pointee.rc_buffer_size = Int32(clamping: settings.bitrateBps / 2)  // VBV: half a second
        ctx.pointee.thread_count = Int32(settings.threads)
        let priv = ctx.pointee.priv_data
        av_opt_set(priv, "preset", settings.preset, 0)
        av_opt_set(priv, "tune", "zerolatency", 0)
        av_opt_set_int(priv, "forced-idr", 1, 0)
        let keyint = settings.gopFrames * 2
        if hevc {
            av_opt_set(
                priv, "x265-params",
                "keyint=\(keyint):min-keyint=\(settings.gopFrames):scenecut=0:bframes=0:repeat-headers=1:annexb=1:log-level=error",
                0)
        } else {
            av_opt_set(
                priv, "x264-params",
                "keyint=\(keyint):min-keyint=\(settings.gopFrames):scenecut=0:bframes=0:repeat-headers=1",
                0)
        }
        frame.pointee.format = AV_PIX_FMT_NV12.rawValue
        frame.pointee.width = Int32(settings.width)
        frame.pointee.height = Int32(settings.height)
        if hevc {
            guard let p = av_frame_alloc() else { throw MediaError(operation: "allocate frame", "out of memory") }
            p.pointee.format = AV_PIX_FMT_YUV420P.rawValue
            p.pointee.width = Int32(settings.width)
            p.pointee.height = Int32(settings.height)
            planar = p
            scaler = sws_getContext(
                Int32(settings.width), Int32(settings.height), AV_PIX_FMT_NV12, Int32(settings.width),
                Int32(settings.height), AV_PIX_FMT_YUV420P, SWS_POINT, nil, nil, nil)
        } else {
            planar = nil
            scaler = nil
        }
        try check(
            avcodec_open2(ctx, codec, nil),
            "open \(name) \(settings.width)x\(settings.height)@\(settings.framesPerSecond)")
        try check(av_frame_get_buffer(frame, 0), "allocate NV12 frame")
        if let planar { try check(av_frame_get_buffer(planar, 0), "allocate YUV420P frame") }
        if hevc && scaler == nil { throw MediaError(operation: "swscale", "cannot convert NV12 to YUV420P") }
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var f: UnsafeMutablePointer<AVFrame>? = input
        av_frame_free(&f)
        var p: UnsafeMutablePointer<AVFrame>? = planar
        if p != nil { av_frame_free(&p) }
        var k: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&k)
        if let scaler { sws_freeContext(scaler) }
    }

    /// The NV12 planes to fill next (made writable: reused unless the codec still holds the last frame).
    public func nextFrame() throws(MediaError) -> (
        luma: UnsafeMutablePointer<UInt8>, lumaStride: Int, chroma: UnsafeMutablePointer<UInt8>, chromaStride: Int
    ) {
        try check(av_frame_make_writable(input), "make frame writable")
        return (
            input.pointee.data.0!, Int(input.pointee.linesize.0), input.pointee.data.1!, Int(input.pointee.linesize.1)
        )
    }

    /// Encodes the frame last returned by `nextFrame()` at `pts` (90 kHz); every packet produced goes to `handler`.
    public func encode(pts: Int64, forceKeyframe: Bool, _ handler: (Packet) throws -> Void) throws {
        var frame = input
        if let planar, let scaler {
            try check(av_frame_make_writable(planar), "make YUV420P frame writable")
            let (src, srcStride) = planes(input)
            let (dst, dstStride) = planes(planar)
            src.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { s in
                _ = sws_scale(scaler, s, srcStride, 0, Int32(settings.height), dst, dstStride)
            }
            frame = planar
        }
        frame.pointee.pts = pts
        frame.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try check(avcodec_send_frame(context, frame), "encode frame at pts \(pts)")
        try drain(handler)
    }

    /// Flushes delayed packets (none at zero latency, but the API is honoured).
    public func flush(_ handler: (Packet) throws -> Void) throws {
        let r = avcodec_send_frame(context, nil)
        if r < 0 && r != ppc_averror_eof() { try check(r, "flush encoder") }
        try drain(handler)
    }

    private func drain(_ handler: (Packet) throws -> Void) throws {
        while true {
            let r = avcodec_receive_packet(context, packet)
            if r == ppc_averror_eagain() || r == ppc_averror_eof() { return }
            try check(r, "receive packet")
            defer { av_packet_unref(packet) }
            let p = Packet(
                bytes: UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)),
                pts: packet.pointee.pts, isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
            try handler(p)
        }
    }

    /// A frame's plane pointers and strides, as the C arrays libswscale takes.
    private func planes(_ f: UnsafeMutablePointer<AVFrame>) -> (
        UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int32>
    ) {
        let raw = UnsafeMutableRawPointer(f)
        return (
            (raw + MemoryLayout<AVFrame>.offset(of: \AVFrame.data)!).assumingMemoryBound(
                to: UnsafeMutablePointer<UInt8>?.self),
            (raw + MemoryLayout<AVFrame>.offset(of: \AVFrame.linesize)!).assumingMemoryBound(to: Int32.self)
        )
    }

    /// Copies the stream's codec parameters (for a muxer).
    func copyParameters(to parameters: UnsafeMutablePointer<AVCodecParameters>) throws(MediaError) {
        try check(avcodec_parameters_from_context(parameters, context), "codec parameters")
    }
}
