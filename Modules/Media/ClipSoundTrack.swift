import CFFmpeg

/// A clip's sound as a track of its clip.mp4: mono samples encoded to AAC (FFmpeg's own encoder, in every libavcodec:
/// Debian's Opus encoder is marked experimental), so a browser plays the strike with the swing. audio.wav stays the
/// lossless truth beside it.
///
/// Placed so the clip's time 0 is the track's time 0: `startNs` says where sample 0 lies on the clip's timeline, and the
/// samples are shifted to match — silence before a window that starts after the first frame, samples dropped when it
/// starts before it. The track plays at the nominal `sampleRate`; a card whose fitted period differs by p ppm moves a
/// sound t seconds into the window by t × p µs (50 ppm, 1 s: 50 µs). The encoder's priming (1 024 samples) is taken
/// out by the MP4's edit list, which players, ffmpeg and browsers honour; `ClipSoundCheck` measures where the strike
/// really lands, and meta.json says so.
public struct ClipSoundTrack: Sendable {
    public var samples: [Float]
    public var sampleRate: Int
    /// Where `samples[0]` lies on the clip's timeline: ns after its first frame (negative: before it).
    public var startNs: Int64
    /// AAC's bitrate (assumed: 96 kbit/s is ample for one channel of a strike and a voice).
    public var bitRate: Int = 96_000

    public init(samples: [Float], sampleRate: Int, startNs: Int64) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.startNs = startNs
    }

    /// The samples from the clip's time 0: leading silence or leading samples dropped, per `startNs`.
    public var fromClipStart: [Float] {
        let shift = Int((Double(startNs) * Double(sampleRate) / 1e9).rounded())
        if shift >= 0 { return [Float](repeating: 0, count: min(shift, sampleRate * 600)) + samples }
        return Array(samples.dropFirst(min(samples.count, -shift)))
    }

    /// The track encoded: its stream in the muxer and its packets, written as the video reaches them.
    final class Encoded {
        let stream: UnsafeMutablePointer<AVStream>
        var packets: [UnsafeMutablePointer<AVPacket>] = []
        var next = 0
        let rate: Int32
        let samples: Int

        init(stream: UnsafeMutablePointer<AVStream>, rate: Int32, samples: Int) {
            self.stream = stream
            self.rate = rate
            self.samples = samples
        }

        /// Writes every packet that starts before `until90k` (the clip's 90 kHz clock).
        func write(until90k: Int64, into oc: UnsafeMutablePointer<AVFormatContext>, path: String) throws(MediaError) {
            while next < packets.count {
                let p = packets[next]
                if until90k != .max, av_rescale_q(p.pointee.pts, ppc_rational(1, rate), mpegTimeBase) > until90k {
                    return
                }
                p.pointee.stream_index = stream.pointee.index
                av_packet_rescale_ts(p, ppc_rational(1, rate), stream.pointee.time_base)
                try check(av_interleaved_write_frame(oc, p), "write MP4 audio packet", path: path)
                next += 1
            }
        }

        func free() {
            for p in packets {
                var q: UnsafeMutablePointer<AVPacket>? = p
                av_packet_free(&q)
            }
            packets = []
        }
    }

    /// Adds the track's stream to `oc` (before its header is written) and encodes every sample into packets.
    func encode(into oc: UnsafeMutablePointer<AVFormatContext>, path: String) throws(MediaError) -> Encoded {
        guard (1_000...384_000).contains(sampleRate) else {
            throw MediaError(
                operation: "encode the clip's sound", path: path, "a sample rate of \(sampleRate) Hz is none AAC takes")
        }
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC), let ctx = avcodec_alloc_context3(codec) else {
            throw MediaError(operation: "find the AAC encoder", path: path, "this FFmpeg has no AAC encoder")
        }
        var context: UnsafeMutablePointer<AVCodecContext>? = ctx
        defer { avcodec_free_context(&context) }
        ctx.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        ctx.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&ctx.pointee.ch_layout, 1)
        ctx.pointee.bit_rate = Int64(bitRate)
        ctx.pointee.time_base = ppc_rational(1, Int32(sampleRate))
        if oc.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 {
            ctx.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        }
        try check(avcodec_open2(ctx, codec, nil), "open the AAC encoder", path: path)
        guard let s = avformat_new_stream(oc, nil) else {
            throw MediaError(operation: "create MP4 audio stream", "out of memory")
        }
        try check(avcodec_parameters_from_context(s.pointee.codecpar, ctx), "copy audio codec parameters")
        s.pointee.time_base = ppc_rational(1, Int32(sampleRate))
        let all = fromClipStart
        let encoded = Encoded(stream: s, rate: Int32(sampleRate), samples: all.count)
        guard let frame = av_frame_alloc() else { throw MediaError(operation: "allocate audio frame", "out of memory") }
        var framePointer: UnsafeMutablePointer<AVFrame>? = frame
        defer { av_frame_free(&framePointer) }
        let size = Int(ctx.pointee.frame_size > 0 ? ctx.pointee.frame_size : 1024)
        func drain() throws(MediaError) {
            while true {
                guard let p = av_packet_alloc() else { throw MediaError(operation: "allocate packet", "out of memory") }
                let r = avcodec_receive_packet(ctx, p)
                if r == ppc_averror_eagain() || r == ppc_averror_eof() {
                    var q: UnsafeMutablePointer<AVPacket>? = p
                    av_packet_free(&q)
                    return
                }
                try check(r, "encode the clip's sound", path: path)
                encoded.packets.append(p)
            }
        }
        var at = 0
        while at < all.count {
            let n = min(size, all.count - at)
            frame.pointee.nb_samples = Int32(size)
            frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
            frame.pointee.sample_rate = Int32(sampleRate)
            try check(av_channel_layout_copy(&frame.pointee.ch_layout, &ctx.pointee.ch_layout), "audio frame layout")
            try check(av_frame_get_buffer(frame, 0), "allocate audio frame buffer")
            let plane = UnsafeMutableRawPointer(frame.pointee.data.0!).assumingMemoryBound(to: Float.self)
            for i in 0..<size { plane[i] = i < n ? all[at + i] : 0 }
            frame.pointee.pts = Int64(at)
            try check(avcodec_send_frame(ctx, frame), "encode the clip's sound", path: path)
            try drain()
            av_frame_unref(frame)
            at += n
        }
        try check(avcodec_send_frame(ctx, nil), "finish the clip's sound", path: path)
        try drain()
        return encoded
    }
}
