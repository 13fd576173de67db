import CFFmpeg

/// Encodes NV12 pictures to baseline JPEG (libavcodec's `mjpeg`, 4:2:0): what a USB camera's own encoder does, for a
/// synthetic Motion JPEG source that prepares its frames before arming. Not a per-frame capture path: each call
/// returns a new array.
public final class JPEGEncoder {
    public let width: Int
    public let height: Int
    let context: UnsafeMutablePointer<AVCodecContext>
    let frame: UnsafeMutablePointer<AVFrame>
    let packet: UnsafeMutablePointer<AVPacket>
    let scaler: OpaquePointer
    var pictures: Int64 = 0

    /// `quality` is libavcodec's qscale, 2 (best) … 31.
    public init(width: Int, height: Int, quality: Int = 4) throws(MediaError) {
        self.width = width
        self.height = height
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else {
            throw MediaError(operation: "find encoder", "mjpeg is not in this FFmpeg build")
        }
        guard let ctx = avcodec_alloc_context3(codec), let f = av_frame_alloc(), let p = av_packet_alloc() else {
            throw MediaError(operation: "allocate JPEG encoder", "out of memory")
        }
        context = ctx
        frame = f
        packet = p
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
        ctx.pointee.color_range = AVCOL_RANGE_JPEG
        ctx.pointee.time_base = ppc_rational(1, 90_000)
        ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
        ctx.pointee.global_quality = Int32(max(2, min(31, quality))) * FF_QP2LAMBDA
        ctx.pointee.thread_count = 1
        guard
            let s = sws_getContext(
                Int32(width), Int32(height), AV_PIX_FMT_NV12, Int32(width), Int32(height), AV_PIX_FMT_YUVJ420P,
                SWS_POINT, nil, nil, nil)
        else { throw MediaError(operation: "swscale", "cannot convert NV12 to YUVJ420P") }
        scaler = s
        try check(avcodec_open2(ctx, codec, nil), "open mjpeg encoder \(width)x\(height)")
        f.pointee.format = AV_PIX_FMT_YUVJ420P.rawValue
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.quality = ctx.pointee.global_quality
        try check(av_frame_get_buffer(f, 0), "allocate YUVJ420P frame")
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        sws_freeContext(scaler)
    }

    /// One NV12 picture (planes with their strides) as a whole JPEG file's bytes.
    public func encode(luma: UnsafePointer<UInt8>, lumaStride: Int, chroma: UnsafePointer<UInt8>, chromaStride: Int)
        throws(MediaError) -> [UInt8]
    {
        try check(av_frame_make_writable(frame), "make frame writable")
        var src: [UnsafePointer<UInt8>?] = [luma, chroma, nil, nil]
        var srcStride: [Int32] = [Int32(lumaStride), Int32(chromaStride), 0, 0]
        let raw = UnsafeMutableRawPointer(frame)
        let dst = (raw + MemoryLayout<AVFrame>.offset(of: \AVFrame.data)!).assumingMemoryBound(
            to: UnsafeMutablePointer<UInt8>?.self)
        let dstStride = (raw + MemoryLayout<AVFrame>.offset(of: \AVFrame.linesize)!).assumingMemoryBound(to: Int32.self)
        _ = sws_scale(scaler, &src, &srcStride, 0, Int32(height), dst, dstStride)
        frame.pointee.pts = pictures  // an encoder wants increasing times, though each JPEG stands alone
        pictures += 1
        frame.pointee.quality = context.pointee.global_quality
        try check(avcodec_send_frame(context, frame), "encode JPEG")
        let r = avcodec_receive_packet(context, packet)
        try check(r, "receive JPEG")
        defer { av_packet_unref(packet) }
        return Array(UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
    }
}
