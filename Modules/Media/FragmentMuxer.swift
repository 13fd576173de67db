import CFFmpeg

/// Muxes one stream's packets into self-contained fragments, handing the bytes to `write` as libavformat produces them
/// (through a custom AVIO context: no temporary file, no extra copy on our side).
///
/// H.264/HEVC go in MPEG-TS: a TS file cut anywhere is still readable up to the cut, so a crash loses at most the
/// fragment being written; TS fragments concatenate byte-for-byte into a valid stream; and each fragment starts with
/// PAT/PMT and an IDR carrying SPS/PPS, so it decodes alone. Fragmented MP4 would need its init segment beside every
/// fragment and a finished `moof` to be readable.
///
/// Motion JPEG goes in NUT: MPEG-TS has no stream type for it (libavformat writes it as private data and reads back
/// `bin_data`), while NUT carries any codec FFmpeg knows with a 90 kHz time base, is readable up to a cut (its
/// syncpoints), and each fragment starts with its own header, so it too stands alone.
public final class FragmentMuxer {
    /// What the fragments carry.
    public enum Stream {
        /// An encode session's output: its codec parameters (SPS/PPS and all) come from the encoder. MPEG-TS.
        case encoder(EncoderSession)
        /// Motion JPEG frames of this size, passed through. NUT.
        case mjpeg(width: Int, height: Int)

        var container: String {
            switch self {
            case .encoder: "mpegts"
            case .mjpeg: "nut"
            }
        }
    }

    final class Sink {
        let write: (UnsafeRawBufferPointer) throws -> Void
        var error: (any Error)?
        init(_ write: @escaping (UnsafeRawBufferPointer) throws -> Void) { self.write = write }
    }

    let stream: Stream
    let sink: Sink
    var format: UnsafeMutablePointer<AVFormatContext>?
    var io: UnsafeMutablePointer<AVIOContext>?
    let packet: UnsafeMutablePointer<AVPacket>
    static let ioBufferSize: Int32 = 64 * 1024

    public convenience init(encoder: EncoderSession, write: @escaping (UnsafeRawBufferPointer) throws -> Void)
        throws(MediaError)
    {
        try self.init(.encoder(encoder), write: write)
    }

    public init(_ stream: Stream, write: @escaping (UnsafeRawBufferPointer) throws -> Void) throws(MediaError) {
        self.stream = stream
        self.sink = Sink(write)
        guard let p = av_packet_alloc() else { throw MediaError(operation: "allocate packet", "out of memory") }
        packet = p
    }

    deinit {
        close()
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    /// Starts a fragment: a new muxer writing its header first (TS: PAT/PMT; NUT: main and stream headers).
    public func begin() throws {
        close()
        var fmt: UnsafeMutablePointer<AVFormatContext>?
        try check(avformat_alloc_output_context2(&fmt, nil, stream.container, nil), "create \(stream.container) muxer")
        format = fmt
        guard let buffer = av_malloc(Int(Self.ioBufferSize)) else {
            throw MediaError(operation: "allocate I/O buffer", "out of memory")
        }
        let opaque = Unmanaged.passUnretained(sink).toOpaque()
        io = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Self.ioBufferSize, 1, opaque, nil,
            { opaque, bytes, count in
                let sink = Unmanaged<FragmentMuxer.Sink>.fromOpaque(opaque!).takeUnretainedValue()
                do {
                    try sink.write(UnsafeRawBufferPointer(start: bytes, count: Int(count)))
                    return count
                } catch {
                    sink.error = error
                    return ppc_averror(EIO)
                }
            }, nil)
        guard let io, let fmt else { throw MediaError(operation: "create I/O context", "out of memory") }
        fmt.pointee.pb = io
        guard let stream = avformat_new_stream(fmt, nil) else {
            throw MediaError(operation: "create stream", "out of memory")
        }
        switch self.stream {
        case .encoder(let encoder):
            try encoder.copyParameters(to: stream.pointee.codecpar)
        case .mjpeg(let width, let height):
            let par = stream.pointee.codecpar!
            par.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            par.pointee.codec_id = AV_CODEC_ID_MJPEG
            par.pointee.width = Int32(width)
            par.pointee.height = Int32(height)
        }
        stream.pointee.time_base = mpegTimeBase
        var options: OpaquePointer?
        if case .encoder = self.stream { av_dict_set(&options, "mpegts_copyts", "1", 0) }
        defer { av_dict_free(&options) }
        try rethrowSink(avformat_write_header(fmt, &options), "write \(self.stream.container) header")
    }

    /// Adds one encoded packet to the current fragment.
    public func write(_ p: EncoderSession.Packet) throws {
        try write(bytes: p.bytes, pts: p.pts, isKeyframe: p.isKeyframe)
    }

    /// Adds one frame's bytes (an encoder's packet, or a JPEG as the camera sent it) at `pts` (90 kHz). The bytes are
    /// referenced, not copied, for the length of the call.
    public func write(bytes: UnsafeRawBufferPointer, pts: Int64, isKeyframe: Bool) throws {
        guard let format else { throw MediaError(operation: "mux", "no fragment begun") }
        packet.pointee.data = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(bytes.count)
        packet.pointee.pts = pts
        packet.pointee.dts = pts  // no reordering: decode order is presentation order
        packet.pointee.flags = isKeyframe ? AV_PKT_FLAG_KEY : 0
        packet.pointee.stream_index = 0
        packet.pointee.duration = 0
        try rethrowSink(av_write_frame(format, packet), "mux packet at pts \(pts)")
        packet.pointee.data = nil
        packet.pointee.size = 0
    }

    /// Ends the fragment: trailer, flush of the I/O buffer to `write`.
    public func end() throws {
        guard let format else { return }
        try rethrowSink(av_write_trailer(format), "write \(stream.container) trailer")
        avio_flush(format.pointee.pb)
        if let e = sink.error { throw e }
        close()
    }

    private func rethrowSink(_ r: Int32, _ operation: String) throws {
        if let e = sink.error {
            sink.error = nil
            throw e
        }
        try check(r, operation)
    }

    private func close() {
        if let format {
            format.pointee.pb = nil
            avformat_free_context(format)
            self.format = nil
        }
        if io != nil {
            av_freep(&io!.pointee.buffer)
            avio_context_free(&io)
        }
    }
}

/// Remuxes fragments (MPEG-TS, or NUT for Motion JPEG) into one MP4 without re-encoding. Motion JPEG stays Motion
/// JPEG: MP4 carries it as ISO object type 0x6C (`mp4v`), which ffmpeg/ffplay, mpv and VLC play; a browser does not,
/// so a host makes an H.264 viewing copy (``ViewTranscoder``).
public enum ClipRemuxer {
    public struct Report: Sendable, Equatable {
        public let frames: Int
        public let firstIsKeyframe: Bool
        /// The clip's first frame on the fragments' own clock (90 kHz), which becomes time 0.
        public let firstPts90k: Int64
        public let durationTicks90k: Int64
        /// Audio samples in the clip's sound track (0: none), from the clip's time 0.
        public var audioSamples: Int = 0
    }

    /// Writes `fragments` (in order) to `output` as an MP4 with `+faststart` (moov first), timestamps shifted
    /// so the first frame is at 0. `frameIntervalTicks` (90 kHz) gives the last frame its duration. With `audio`, the
    /// clip also carries it as an AAC track a browser plays (`ClipSoundTrack`), interleaved with the video.
    public static func remux(
        fragments: [String], to output: String, frameIntervalTicks: Int64, audio: ClipSoundTrack? = nil
    ) throws(MediaError) -> Report {
        guard !fragments.isEmpty else { throw MediaError(operation: "remux", path: output, "no fragments") }
        var out: UnsafeMutablePointer<AVFormatContext>?
        try check(avformat_alloc_output_context2(&out, nil, "mp4", output), "create MP4 muxer", path: output)
        guard let oc = out else { throw MediaError(operation: "create MP4 muxer", path: output, "out of memory") }
        defer {
            if oc.pointee.pb != nil { avio_closep(&oc.pointee.pb) }
            avformat_free_context(oc)
        }
        guard let packet = av_packet_alloc() else { throw MediaError(operation: "allocate packet", "out of memory") }
        var pkt: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&pkt) }

        var outStream: UnsafeMutablePointer<AVStream>?
        var sound: ClipSoundTrack.Encoded?
        defer { sound?.free() }
        var offset: Int64?
        var lastDts = Int64.min
        var frames = 0
        var firstKey = false
        var firstPts: Int64 = 0
        var lastPts: Int64 = 0
        for (n, path) in fragments.enumerated() {
            var ic: UnsafeMutablePointer<AVFormatContext>?
            try check(avformat_open_input(&ic, path, nil, nil), "open fragment", path: path)
            defer { avformat_close_input(&ic) }
            guard let input = ic else { continue }
            // Every fragment of a clip comes from one encode session: the first is probed for what the MP4 needs to
            // say (codec, size, parameter sets); the others only have to hold the same codec.
            if n == 0 { try check(avformat_find_stream_info(input, nil), "read stream info", path: path) }
            let videoIndex = av_find_best_stream(input, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
            try check(videoIndex, "find a video stream", path: path)
            let inStream = input.pointee.streams[Int(videoIndex)]!
            if let s = outStream, inStream.pointee.codecpar.pointee.codec_id != s.pointee.codecpar.pointee.codec_id {
                throw MediaError(
                    operation: "remux", path: path,
                    "holds \(String(cString: avcodec_get_name(inStream.pointee.codecpar.pointee.codec_id))), the clip's first fragment \(String(cString: avcodec_get_name(s.pointee.codecpar.pointee.codec_id))): not one encode session"
                )
            }
            if n == 0 {
                guard let s = avformat_new_stream(oc, nil) else {
                    throw MediaError(operation: "create MP4 stream", "out of memory")
                }
                try check(
                    avcodec_parameters_copy(s.pointee.codecpar, inStream.pointee.codecpar), "copy codec parameters")
                s.pointee.codecpar.pointee.codec_tag = 0
                s.pointee.time_base = mpegTimeBase
                // Declare the exact rate (90 kHz / ticks per frame), not an average MP4 would estimate.
                s.pointee.avg_frame_rate = ppc_rational(90_000, Int32(frameIntervalTicks))
                s.pointee.r_frame_rate = s.pointee.avg_frame_rate
                if let audio {
                    sound = try audio.encode(into: oc, path: output)
                }
                try check(avio_open(&oc.pointee.pb, output, AVIO_FLAG_WRITE), "create", path: output)
                var options: OpaquePointer?
                av_dict_set(&options, "movflags", "+faststart", 0)
                defer { av_dict_free(&options) }
                try check(avformat_write_header(oc, &options), "write MP4 header", path: output)
                outStream = s
            }
            guard let s = outStream else { continue }
            while av_read_frame(input, packet) >= 0 {
                defer { av_packet_unref(packet) }
                guard packet.pointee.stream_index == videoIndex else { continue }
                av_packet_rescale_ts(packet, inStream.pointee.time_base, mpegTimeBase)
                let pts = packet.pointee.pts == ppc_av_nopts_value() ? packet.pointee.dts : packet.pointee.pts
                if offset == nil {
                    offset = pts
                    firstPts = pts
                    firstKey = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
                }
                let base = offset!
                packet.pointee.pts = pts - base
                packet.pointee.dts = pts - base
                guard packet.pointee.dts > lastDts else {
                    throw MediaError(operation: "remux", path: path, "timestamps go backwards at pts \(pts)")
                }
                lastDts = packet.pointee.dts
                lastPts = pts
                packet.pointee.duration = frameIntervalTicks
                packet.pointee.stream_index = 0
                packet.pointee.pos = -1
                // The sound up to this frame goes first: the muxer then holds neither stream back for the other.
                try sound?.write(until90k: packet.pointee.pts, into: oc, path: output)
                av_packet_rescale_ts(packet, mpegTimeBase, s.pointee.time_base)
                try check(av_interleaved_write_frame(oc, packet), "write MP4 packet", path: output)
                frames += 1
            }
        }
        try sound?.write(until90k: .max, into: oc, path: output)
        try check(av_write_trailer(oc), "finish MP4", path: output)
        var report = Report(
            frames: frames, firstIsKeyframe: firstKey, firstPts90k: firstPts,
            durationTicks90k: lastPts - firstPts + frameIntervalTicks)
        report.audioSamples = sound?.samples ?? 0
        return report
    }
}
