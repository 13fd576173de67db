import CFFmpeg

/// Reads a file or a URL libavformat opens (udp://, rtsp://, srt://, http://): its best video stream as NV12 frames
/// and its best audio track as mono Float32 samples, both timed in ns from the earlier stream's start.
///
/// One demuxer serves both: packets read for the other stream wait in bounded queues (so a network stream is opened
/// once). Video already in NV12 is copied through; any other pixel format is converted once with libswscale. Audio in
/// any sample format is downmixed to mono; its rate is the source's (the detector handles other rates explicitly).
/// Not thread-safe: callers serialise (the plugin holds it behind a lock).
public final class MediaReader {
    public struct VideoInfo: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public let framesPerSecond: Int
        /// The decoder's pixel format, e.g. `yuv420p`, `nv12`.
        public let sourcePixelFormat: String
    }

    /// The frame rates a file may declare (a high-speed camera's at most, as the synthetic source allows).
    public static let frameRateRange = 1...10_000
    /// The largest side a file's frames may have (16K).
    public static let maxSide = 16_384
    /// The audio sample rates a file may declare.
    public static let sampleRateRange = 1_000...768_000

    /// The declared frame rate, rounded, or an error naming the file and the figure when it is none ppc could take.
    static func framesPerSecond(_ rate: AVRational, location: String) throws(MediaError) -> Int {
        let declared = rate.den != 0 ? Double(rate.num) / Double(rate.den) : 0
        guard declared.isFinite, declared > 0 else { return 0 }  // none declared: the source says so, by name
        let fps = declared.rounded()
        guard fps >= Double(frameRateRange.lowerBound), fps <= Double(frameRateRange.upperBound) else {
            throw MediaError(
                operation: "open", path: location,
                "the video stream declares \(rate.num)/\(rate.den) frames per second; ppc takes \(frameRateRange.lowerBound) to \(frameRateRange.upperBound)"
            )
        }
        return Int(fps)
    }

    /// The decoder's frame size, or an error naming what the file claims when that is past `maxSide` (the decoder then
    /// reports 0x0, which said nothing of why).
    static func frameSize(decoded: (Int, Int), claimed: (width: Int, height: Int), location: String) throws(MediaError)
        -> (width: Int, height: Int)
    {
        for (w, h) in [decoded, (claimed.width, claimed.height)] where w > maxSide || h > maxSide || w < 0 || h < 0 {
            throw MediaError(
                operation: "open", path: location,
                "the video stream claims \(w)x\(h); ppc takes at most \(maxSide) on a side")
        }
        return decoded.0 > 0 && decoded.1 > 0 ? (decoded.0, decoded.1) : (claimed.width, claimed.height)
    }

    public let location: String
    public let video: VideoInfo?
    public let audioSampleRate: Int?
    /// Audio samples dropped because the video side did not keep up and the audio queue was full.
    public private(set) var audioSamplesDropped = 0
    /// Why reading stopped, once it has.
    public private(set) var endReason: String?

    let format: UnsafeMutablePointer<AVFormatContext>
    let videoIndex: Int32
    let audioIndex: Int32
    let videoDecoder: UnsafeMutablePointer<AVCodecContext>?
    let audioDecoder: UnsafeMutablePointer<AVCodecContext>?
    let frame: UnsafeMutablePointer<AVFrame>
    let packet: UnsafeMutablePointer<AVPacket>
    var scaler: OpaquePointer?
    /// The size `readVideo` delivers frames at (nil: the source's own): frames are scaled to it as they are converted.
    /// Set before the first frame is read.
    public var outputSize: (width: Int, height: Int)?
    var pendingVideo: [UnsafeMutablePointer<AVPacket>] = []
    var audioFIFO: [Float] = []
    var audioRead = 0
    var audioFIFOStartSample: Int64 = 0
    var audioFirstNs: Int64?
    var videoFrames: Int64 = 0
    var endOfInput = false
    var videoFlushed = false
    let originPts: (video: Int64, audio: Int64)
    let originNs: Int64
    static let maxAudioSeconds = 10
    static let maxPendingVideoPackets = 1024

    /// Opens `location` (a path or URL). `timeoutSeconds` bounds how long a network source may stay silent.
    public init(_ location: String, timeoutSeconds: Double = 5) throws(MediaError) {
        self.location = location
        avformat_network_init()
        var options: OpaquePointer?
        if location.contains("://") {
            av_dict_set(&options, "timeout", String(Int(timeoutSeconds * 1_000_000)), 0)  // µs
            av_dict_set(&options, "rw_timeout", String(Int(timeoutSeconds * 1_000_000)), 0)
            av_dict_set(&options, "overrun_nonfatal", "1", 0)
            av_dict_set(&options, "fifo_size", "1000000", 0)
        }
        defer { av_dict_free(&options) }
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try check(avformat_open_input(&ctx, location, nil, &options), "open", path: location)
        guard let ctx else { throw MediaError(operation: "open", path: location, "no context") }
        format = ctx
        do {
            try check(avformat_find_stream_info(ctx, nil), "read stream info", path: location)
        } catch {
            var c: UnsafeMutablePointer<AVFormatContext>? = ctx
            avformat_close_input(&c)
            throw error
        }
        videoIndex = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        audioIndex = av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        func openDecoder(_ index: Int32) throws(MediaError) -> UnsafeMutablePointer<AVCodecContext>? {
            guard index >= 0 else { return nil }
            let par = ctx.pointee.streams[Int(index)]!.pointee.codecpar!
            guard let codec = avcodec_find_decoder(par.pointee.codec_id) else {
                throw MediaError(
                    operation: "find decoder", path: location,
                    "no decoder for \(String(cString: avcodec_get_name(par.pointee.codec_id)))")
            }
            guard let dec = avcodec_alloc_context3(codec) else {
                throw MediaError(operation: "allocate decoder", "out of memory")
            }
            try check(avcodec_parameters_to_context(dec, par), "decoder parameters", path: location)
            try check(avcodec_open2(dec, codec, nil), "open decoder", path: location)
            return dec
        }
        do {
            videoDecoder = try openDecoder(videoIndex)
            audioDecoder = try openDecoder(audioIndex)
        } catch {
            var c: UnsafeMutablePointer<AVFormatContext>? = ctx
            avformat_close_input(&c)
            throw error
        }
        guard let f = av_frame_alloc(), let p = av_packet_alloc() else {
            throw MediaError(operation: "allocate", "out of memory")
        }
        frame = f
        packet = p
        // Every figure the file claims is held to a range before anything does arithmetic with it: a Y4M header
        // claiming 2 147 483 647 fps trapped the encoder's setup (its GOP, twice the rate), and an AVI claiming
        // 65534x65534 was said to be "0x0".
        do {
            if let dec = videoDecoder {
                let s = ctx.pointee.streams[Int(videoIndex)]!
                var rate = s.pointee.avg_frame_rate
                if rate.num == 0 || rate.den == 0 { rate = s.pointee.r_frame_rate }
                let fps = try Self.framesPerSecond(rate, location: location)
                let claimed = (
                    width: Int(s.pointee.codecpar.pointee.width), height: Int(s.pointee.codecpar.pointee.height)
                )
                let size = try Self.frameSize(
                    decoded: (Int(dec.pointee.width), Int(dec.pointee.height)), claimed: claimed, location: location)
                video = VideoInfo(
                    width: size.width, height: size.height, framesPerSecond: fps,
                    sourcePixelFormat: av_get_pix_fmt_name(dec.pointee.pix_fmt).map { String(cString: $0) } ?? "unknown"
                )
            } else {
                video = nil
            }
            audioSampleRate = try audioDecoder.map { dec throws(MediaError) -> Int in
                let rate = Int(dec.pointee.sample_rate)
                guard Self.sampleRateRange.contains(rate) else {
                    throw MediaError(
                        operation: "open", path: location,
                        "the audio track declares \(rate) samples a second; ppc takes \(Self.sampleRateRange.lowerBound) to \(Self.sampleRateRange.upperBound)"
                    )
                }
                return rate
            }
        } catch {
            var c: UnsafeMutablePointer<AVFormatContext>? = ctx
            avformat_close_input(&c)
            throw error
        }
        // One origin for both streams: the earlier start, so audio and video keep their relation.
        func startNs(_ index: Int32) -> (Int64, Int64)? {
            guard index >= 0 else { return nil }
            let s = ctx.pointee.streams[Int(index)]!
            let st = s.pointee.start_time == ppc_av_nopts_value() ? 0 : s.pointee.start_time
            return (st, av_rescale_q(st, s.pointee.time_base, ppc_rational(1, 1_000_000_000)))
        }
        let v = startNs(videoIndex)
        let a = startNs(audioIndex)
        originPts = (v?.0 ?? 0, a?.0 ?? 0)
        originNs = min(v?.1 ?? .max, a?.1 ?? .max) == .max ? 0 : min(v?.1 ?? .max, a?.1 ?? .max)
        if video == nil && audioDecoder == nil {
            throw MediaError(operation: "open", path: location, "no video stream and no audio track")
        }
    }

    deinit {
        for p in pendingVideo {
            var q: UnsafeMutablePointer<AVPacket>? = p
            av_packet_free(&q)
        }
        var v = videoDecoder
        if v != nil { avcodec_free_context(&v) }
        var a = audioDecoder
        if a != nil { avcodec_free_context(&a) }
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        if let scaler { sws_freeContext(scaler) }
        var c: UnsafeMutablePointer<AVFormatContext>? = format
        avformat_close_input(&c)
    }

    func ns(_ pts: Int64, stream index: Int32) -> Int64 {
        av_rescale_q(pts, format.pointee.streams[Int(index)]!.pointee.time_base, ppc_rational(1, 1_000_000_000))
            - originNs
    }

    /// Reads one packet from the demuxer and routes it: audio is decoded into the FIFO, video goes to `video`
    /// (or is queued). Returns false at the end of the input.
    private func pump(video: (UnsafeMutablePointer<AVPacket>) throws -> Void) throws -> Bool {
        guard !endOfInput else { return false }
        let r = av_read_frame(format, packet)
        if r == ppc_averror_eof() {
            endOfInput = true
            endReason = "end of input"
            return false
        }
        // A network stream that stays silent past the timeout ends the session (libavformat's UDP reader reports it
        // as EIO, others as ETIMEDOUT); the reason is kept for the report.
        if location.contains("://"), r == ppc_averror(EIO) || r == ppc_averror(ETIMEDOUT) {
            endOfInput = true
            endReason = "the stream went silent for longer than the timeout"
            return false
        }
        try check(r, "read", path: location)
        defer { av_packet_unref(packet) }
        if packet.pointee.stream_index == audioIndex, audioDecoder != nil {
            try decodeAudio(packet)
        } else if packet.pointee.stream_index == videoIndex {
            try video(packet)
        }
        return true
    }

    // MARK: Video

    /// Decodes the next video frame into `planes` (NV12); nil at the end of the input.
    public func readVideo(
        luma: UnsafeMutablePointer<UInt8>, lumaStride: Int, chroma: UnsafeMutablePointer<UInt8>, chromaStride: Int
    ) throws -> (index: Int64, timeNs: Int64)? {
        guard let dec = videoDecoder, let info = video else { return nil }
        while true {
            let r = avcodec_receive_frame(dec, frame)
            if r >= 0 {
                defer { av_frame_unref(frame) }
                try deliver(info, luma: luma, lumaStride: lumaStride, chroma: chroma, chromaStride: chromaStride)
                let pts =
                    frame.pointee.best_effort_timestamp == ppc_av_nopts_value()
                    ? frame.pointee.pts : frame.pointee.best_effort_timestamp
                let t = ns(pts == ppc_av_nopts_value() ? 0 : pts, stream: videoIndex)
                defer { videoFrames += 1 }
                return (videoFrames, t)
            }
            if r == ppc_averror_eof() { return nil }
            guard r == ppc_averror_eagain() else {
                try check(r, "decode video", path: location)
                return nil
            }
            if !pendingVideo.isEmpty {
                var p: UnsafeMutablePointer<AVPacket>? = pendingVideo.removeFirst()
                let s = avcodec_send_packet(dec, p)
                av_packet_free(&p)
                if s < 0 && s != ppc_averror_eagain() { try check(s, "decode video", path: location) }
                continue
            }
            let more = try pump { p in
                let s = avcodec_send_packet(dec, p)
                if s < 0 && s != ppc_averror_eagain() { try check(s, "decode video", path: location) }
            }
            if !more {
                if videoFlushed { return nil }
                videoFlushed = true
                _ = avcodec_send_packet(dec, nil)  // drain
            }
        }
    }

    /// The video stream's codec (`h264`, `mjpeg`, …).
    public var videoCodec: String? {
        guard videoIndex >= 0 else { return nil }
        return String(
            cString: avcodec_get_name(format.pointee.streams[Int(videoIndex)]!.pointee.codecpar.pointee.codec_id))
    }

    /// The next video packet as it is stored — not decoded — copied into `buffer` (a Motion JPEG frame passed through);
    /// nil at the end of the input. A packet larger than `buffer` is an error naming both sizes.
    public func readVideoPacket(into buffer: UnsafeMutableRawBufferPointer) throws -> (
        index: Int64, timeNs: Int64, byteCount: Int
    )? {
        guard videoIndex >= 0 else { return nil }
        var result: (Int64, Int64, Int)?
        func take(_ p: UnsafeMutablePointer<AVPacket>) throws {
            let n = Int(p.pointee.size)
            guard n <= buffer.count else {
                throw MediaError(
                    operation: "read video packet", path: location,
                    "a \(n)-byte frame is larger than the \(buffer.count) bytes a frame may take")
            }
            if n > 0 { buffer.baseAddress!.copyMemory(from: p.pointee.data, byteCount: n) }
            let pts = p.pointee.pts == ppc_av_nopts_value() ? p.pointee.dts : p.pointee.pts
            result = (videoFrames, ns(pts == ppc_av_nopts_value() ? 0 : pts, stream: videoIndex), n)
            videoFrames += 1
        }
        while result == nil {
            if !pendingVideo.isEmpty {
                var p: UnsafeMutablePointer<AVPacket>? = pendingVideo.removeFirst()
                defer { av_packet_free(&p) }
                try take(p!)
                break
            }
            if !(try pump(video: take)) { return nil }
        }
        return result
    }

    private func deliver(
        _ info: VideoInfo, luma: UnsafeMutablePointer<UInt8>, lumaStride: Int, chroma: UnsafeMutablePointer<UInt8>,
        chromaStride: Int
    ) throws(MediaError) {
        let w = Int(frame.pointee.width)
        let h = Int(frame.pointee.height)
        guard w == info.width, h == info.height else {
            throw MediaError(
                operation: "decode video", path: location,
                "frame size changed from \(info.width)x\(info.height) to \(w)x\(h) mid-stream")
        }
        let out = outputSize ?? (w, h)
        if frame.pointee.format == AV_PIX_FMT_NV12.rawValue, out == (w, h) {
            // Already NV12: copied as it is, no conversion.
            let ys = Int(frame.pointee.linesize.0)
            let cs = Int(frame.pointee.linesize.1)
            for row in 0..<h { (luma + row * lumaStride).update(from: frame.pointee.data.0! + row * ys, count: w) }
            for row in 0..<(h + 1) / 2 {
                (chroma + row * chromaStride).update(from: frame.pointee.data.1! + row * cs, count: w)
            }
            return
        }
        if scaler == nil {
            scaler = sws_getContext(
                Int32(w), Int32(h), AVPixelFormat(frame.pointee.format), Int32(out.width), Int32(out.height),
                AV_PIX_FMT_NV12, SWS_BILINEAR,
                nil, nil, nil)
            guard scaler != nil else {
                throw MediaError(
                    operation: "convert video", path: location, "cannot convert \(info.sourcePixelFormat) to NV12")
            }
        }
        var dst:
            (
                UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?,
                UnsafeMutablePointer<UInt8>?
            ) = (luma, chroma, nil, nil)
        var dstStride: (Int32, Int32, Int32, Int32) = (Int32(lumaStride), Int32(chromaStride), 0, 0)
        let raw = UnsafeMutableRawPointer(frame)
        let src = (raw + MemoryLayout<AVFrame>.offset(of: \AVFrame.data)!).assumingMemoryBound(
            to: UnsafePointer<UInt8>?.self)
        let srcStride = (raw + MemoryLayout<AVFrame>.offset(of: \AVFrame.linesize)!).assumingMemoryBound(to: Int32.self)
        withUnsafeMutablePointer(to: &dst) { d in
            withUnsafeMutablePointer(to: &dstStride) { ds in
                d.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 4) { dp in
                    ds.withMemoryRebound(to: Int32.self, capacity: 4) { dsp in
                        _ = sws_scale(scaler, src, srcStride, 0, Int32(h), dp, dsp)
                    }
                }
            }
        }
    }

    // MARK: Audio

    private func decodeAudio(_ p: UnsafeMutablePointer<AVPacket>) throws {
        guard let dec = audioDecoder else { return }
        var s = avcodec_send_packet(dec, p)
        if s == ppc_averror_eagain() { s = 0 }
        if s < 0 { try check(s, "decode audio", path: location) }
        while avcodec_receive_frame(dec, frame) >= 0 {
            defer { av_frame_unref(frame) }
            if audioFirstNs == nil {
                let pts =
                    frame.pointee.best_effort_timestamp == ppc_av_nopts_value()
                    ? 0 : frame.pointee.best_effort_timestamp
                audioFirstNs = ns(pts, stream: audioIndex)
            }
            appendMono(frame)
        }
    }

    /// Downmixes one decoded audio frame to mono Float32 and appends it to the FIFO (bounded: oldest dropped, counted).
    private func appendMono(_ f: UnsafeMutablePointer<AVFrame>) {
        let n = Int(f.pointee.nb_samples)
        let channels = max(1, Int(f.pointee.ch_layout.nb_channels))
        let fmt = AVSampleFormat(f.pointee.format)
        let planar = av_sample_fmt_is_planar(fmt) != 0
        let packed = av_get_packed_sample_fmt(fmt)
        func sample(_ ch: Int, _ i: Int) -> Float {
            let plane = planar ? f.pointee.extended_data[ch]! : f.pointee.extended_data[0]!
            let at = planar ? i : i * channels + ch
            switch packed {
            case AV_SAMPLE_FMT_FLT: return UnsafeRawPointer(plane).load(fromByteOffset: at * 4, as: Float.self)
            case AV_SAMPLE_FMT_DBL: return Float(UnsafeRawPointer(plane).load(fromByteOffset: at * 8, as: Double.self))
            case AV_SAMPLE_FMT_S16:
                return Float(UnsafeRawPointer(plane).load(fromByteOffset: at * 2, as: Int16.self)) / 32768
            case AV_SAMPLE_FMT_S32:
                return Float(UnsafeRawPointer(plane).load(fromByteOffset: at * 4, as: Int32.self)) / 2_147_483_648
            case AV_SAMPLE_FMT_U8: return (Float(plane[at]) - 128) / 128
            default: return 0
            }
        }
        for i in 0..<n {
            var sum: Float = 0
            for ch in 0..<channels { sum += sample(ch, i) }
            audioFIFO.append(sum / Float(channels))
        }
        let limit = Self.maxAudioSeconds * (audioSampleRate ?? 48_000)
        let held = audioFIFO.count - audioRead
        if held > limit {
            let drop = held - limit
            audioRead += drop
            audioSamplesDropped += drop
        }
        if audioRead > 1 << 16 {
            audioFIFO.removeFirst(audioRead)
            audioFIFOStartSample += Int64(audioRead)
            audioRead = 0
        }
    }

    /// Reads up to `buffer.count` mono samples; returns the index of the first (counted from the track's first
    /// sample), how many, and its time in ns; nil at the end of the input.
    public func readAudio(into buffer: UnsafeMutableBufferPointer<Float>) throws -> (
        firstSample: Int64, count: Int, timeNs: Int64
    )? {
        guard audioDecoder != nil, let rate = audioSampleRate else { return nil }
        while audioFIFO.count - audioRead == 0 {
            let more = try pump { p in
                guard videoDecoder != nil else { return }
                guard pendingVideo.count < Self.maxPendingVideoPackets, let copy = av_packet_clone(p) else { return }
                pendingVideo.append(copy)
            }
            if !more { return nil }
        }
        let n = min(buffer.count, audioFIFO.count - audioRead)
        for i in 0..<n { buffer[i] = audioFIFO[audioRead + i] }
        // Absolute index of the first sample delivered: dropped samples keep their numbers, so a gap stays a gap.
        let index = audioFIFOStartSample + Int64(audioRead)
        audioRead += n
        return (index, n, (audioFirstNs ?? 0) + index * 1_000_000_000 / Int64(rate))
    }
}

extension MediaReader {
    /// A whole file's audio as mono samples at its own rate, read to the end (a recording for `detect`, a clip's
    /// audio.wav for the studio's waveform). Throws, naming the file, when it cannot be opened or holds no audio.
    public static func wholeAudio(_ path: String) throws(MediaError) -> (samples: [Float], sampleRate: Int) {
        let (samples, rate, _) = try wholeAudioTimed(path)
        return (samples, rate)
    }

    /// Every audio sample of `path`, its rate, and the first sample's time (ns from the earlier stream's start: in a
    /// clip, from its first frame), as libavformat and libavcodec place it — an MP4's edit list honoured.
    public static func wholeAudioTimed(_ path: String) throws(MediaError) -> (
        samples: [Float], sampleRate: Int, firstNs: Int64
    ) {
        let reader = try MediaReader(path)
        guard let rate = reader.audioSampleRate else {
            throw MediaError(operation: "read audio", path: path, "no audio track")
        }
        var samples: [Float] = []
        var firstNs: Int64?
        var block = [Float](repeating: 0, count: 65_536)
        do {
            while let b = try block.withUnsafeMutableBufferPointer({ try reader.readAudio(into: $0) }) {
                if firstNs == nil { firstNs = b.timeNs }
                samples += block[0..<b.count]
            }
        } catch let e as MediaError {
            throw e
        } catch {
            throw MediaError(operation: "read audio", path: path, "\(error)")
        }
        return (samples, rate, firstNs ?? 0)
    }
}

/// A clip's video as its file says it is — size, codec, frame count and the frame rate its timestamps give — read
/// by demuxing only (no decode): what a host checks a device's claim against.
public enum ClipProbe {
    public struct Facts: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public let codec: String
        public let frames: Int
        public let framesPerSecond: Double
    }

    public static func facts(_ path: String) throws(MediaError) -> Facts {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try check(avformat_open_input(&ctx, path, nil, nil), "open", path: path)
        defer { avformat_close_input(&ctx) }
        guard let ic = ctx else { throw MediaError(operation: "open", path: path, "no context") }
        try check(avformat_find_stream_info(ic, nil), "read stream info", path: path)
        let index = av_find_best_stream(ic, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        try check(index, "find a video stream", path: path)
        let stream = ic.pointee.streams[Int(index)]!
        let par = stream.pointee.codecpar!
        guard let packet = av_packet_alloc() else { throw MediaError(operation: "allocate packet", "out of memory") }
        var p: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&p) }
        var frames = 0
        var first = Int64.max
        var last = Int64.min
        while av_read_frame(ic, packet) >= 0 {
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == index else { continue }
            let t = packet.pointee.pts == ppc_av_nopts_value() ? packet.pointee.dts : packet.pointee.pts
            guard t != ppc_av_nopts_value() else { continue }
            frames += 1
            first = min(first, t)
            last = max(last, t)
        }
        let tb = stream.pointee.time_base
        // In Double: a file's timestamps may lie anywhere in Int64, and their difference need not fit one.
        let span = frames > 1 && tb.den > 0 ? (Double(last) - Double(first)) * Double(tb.num) / Double(tb.den) : 0
        return Facts(
            width: Int(par.pointee.width), height: Int(par.pointee.height),
            codec: String(cString: avcodec_get_name(par.pointee.codec_id)),
            frames: frames, framesPerSecond: span > 0 && span.isFinite ? Double(frames - 1) / span : 0)
    }
}
