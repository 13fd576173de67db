import CFFmpeg
import Foundation

/// Makes one MP4 to send from clips: their angles side by side (`hstack`) or one laid over the other (`blend`, an
/// onion skin), each with its pictures (a coach's drawings, the impact's mark) laid over it (`overlay`), slowed over a
/// span (`setpts`, and `atempo` for the sound, its pitch kept), at one frame rate (`fps`) — composited by libavfilter,
/// encoded with libx264 and, where the chosen clip has sound, AAC.
///
/// Times are seconds on each input's own timeline (0: its first frame, as a browser's `currentTime`). Every input is
/// cut to `start…end`; the cut inputs play from the export's time 0 together, so inputs cut around the same key
/// position (an impact) show it at the same moment. Decoded frames are fed in time order across inputs, so memory is a
/// few frames an input however long the clips are.
public enum ClipComposer {
    /// A picture laid over an input while its time is in `from..<to` (input seconds): BGRA, alpha premultiplied
    /// (cairo's ARGB32), the input's size in the export (`outputSizes`) — drawn at the size it is shown, so a 4K clip's
    /// drawings cost the export's pixels, not the clip's.
    public struct Picture: Sendable {
        public var from: Double
        public var to: Double
        public var bgra: [UInt8]
        public var stride: Int
        public var width: Int
        public var height: Int
        public init(from: Double, to: Double, bgra: [UInt8], stride: Int, width: Int, height: Int) {
            self.from = from
            self.to = to
            self.bgra = bgra
            self.stride = stride
            self.width = width
            self.height = height
        }
    }

    public struct Input: Sendable {
        public var path: String
        /// The part used, input seconds.
        public var start: Double
        public var end: Double
        /// Pictures over this input; where none covers a time, nothing is laid over it.
        public var pictures: [Picture]
        public init(path: String, start: Double, end: Double, pictures: [Picture] = []) {
            self.path = path
            self.start = start
            self.end = end
            self.pictures = pictures
        }
    }

    public enum Layout: Sendable, Equatable {
        /// Left to right, each scaled to the export's height.
        case sideBySide
        /// The second over the first (scaled to its size) at `opacity` (0…1); two inputs only.
        case overlay(opacity: Double)
    }

    /// Slowed by `factor` (0 < factor ≤ 1) from `from` to `to`, seconds of the cut inputs' common time (0: their start).
    public struct Slow: Sendable, Equatable {
        public var from: Double
        public var to: Double
        public var factor: Double
        public init(from: Double, to: Double, factor: Double) {
            self.from = from
            self.to = to
            self.factor = factor
        }
    }

    public struct Spec: Sendable {
        public var inputs: [Input]
        public var layout: Layout
        /// The export's height, pixels (even); inputs are scaled to it.
        public var height: Int
        public var framesPerSecond: Int
        public var slow: Slow?
        /// The input whose sound the export carries (nil: none; an input with no sound: none, said in the report).
        public var soundFrom: Int?
        public init(
            inputs: [Input], layout: Layout = .sideBySide, height: Int = 720, framesPerSecond: Int = 30,
            slow: Slow? = nil, soundFrom: Int? = 0
        ) {
            self.inputs = inputs
            self.layout = layout
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.slow = slow
            self.soundFrom = soundFrom
        }

        /// The export's length, s: the shortest cut input, lengthened by its slowed span.
        public var durationSeconds: Double {
            let cut = inputs.map { $0.end - $0.start }.min() ?? 0
            guard let slow else { return cut }
            let a = min(max(slow.from, 0), cut)
            let b = min(max(slow.to, a), cut)
            return cut + (b - a) * (1 / slow.factor - 1)
        }
    }

    public struct Report: Sendable, Equatable {
        public let frames: Int
        public let width: Int
        public let height: Int
        public let durationSeconds: Double
        public let hasSound: Bool
    }

    /// The slowest export (⅛×: the studio's slowest rate) and the most inputs side by side.
    public static let slowest = 0.125, maxInputs = 4
    /// The most bytes of pictures an export holds (they are fed to the graph whole): 256 MiB — at 1280×720, some 70
    /// changes of what is drawn.
    public static let maxPictureBytes = 256 << 20
    /// The widest export: 8K across, whatever the angles side by side add up to.
    public static let maxWidth = 7_680

    /// Each input's size in the export, from its own: scaled to the export's height, its aspect kept, even; in an
    /// overlay the second takes the first's size.
    public static func outputSizes(_ spec: Spec, inputs: [(width: Int, height: Int)]) -> [(width: Int, height: Int)] {
        let h = spec.height & ~1
        var out: [(width: Int, height: Int)] = []
        for (i, s) in inputs.enumerated() {
            if case .overlay = spec.layout, i == 1, let first = out.first {
                out.append(first)
            } else {
                out.append((max(2, Int((Double(s.width) * Double(h) / Double(max(1, s.height))).rounded()) & ~1), h))
            }
        }
        return out
    }

    /// Where input time `t` (s from the cut's start) plays in the export, after the slowed span.
    public static func exportTime(_ t: Double, _ slow: Slow?) -> Double {
        guard let slow, slow.factor < 1 else { return t }
        return t + (1 / slow.factor - 1) * (min(max(t, slow.from), slow.to) - slow.from)
    }

    /// Why `spec` cannot be made, naming the field; nil when it can.
    public static func problem(_ spec: Spec) -> String? {
        guard (1...maxInputs).contains(spec.inputs.count) else {
            return "inputs: \(spec.inputs.count); 1…\(maxInputs) angles"
        }
        for (i, input) in spec.inputs.enumerated() {
            guard input.start.isFinite, input.end.isFinite, input.start >= 0, input.end > input.start,
                input.end - input.start <= 600
            else { return "inputs[\(i)]: \(input.start)…\(input.end) s; a part 0 < length ≤ 600 s" }
        }
        if case .overlay(let o) = spec.layout {
            guard spec.inputs.count == 2 else { return "layout overlay: two inputs, not \(spec.inputs.count)" }
            guard o.isFinite, (0...1).contains(o) else { return "opacity \(o): 0…1" }
        }
        guard (16...2_160).contains(spec.height) else { return "height \(spec.height): 16…2160 pixels" }
        guard (1...120).contains(spec.framesPerSecond) else { return "framesPerSecond \(spec.framesPerSecond): 1…120" }
        if let s = spec.slow {
            guard s.factor.isFinite, s.factor >= slowest, s.factor <= 1 else {
                return "slow factor \(s.factor): \(slowest)…1"
            }
            guard s.from.isFinite, s.to.isFinite, s.to > s.from else {
                return "slow \(s.from)…\(s.to) s: from before to"
            }
        }
        let pictureBytes = spec.inputs.reduce(0) { $0 + $1.pictures.reduce(0) { $0 + $1.bgra.count } }
        guard pictureBytes <= maxPictureBytes else {
            return
                "pictures: \(pictureBytes >> 20) MiB; at most \(maxPictureBytes >> 20) MiB (fewer changes of what is drawn)"
        }
        if let a = spec.soundFrom, !spec.inputs.indices.contains(a) {
            return "soundFrom \(a): an input's index, 0…\(spec.inputs.count - 1)"
        }
        return nil
    }

    /// Writes `output` (MP4, faststart) from `spec`; built beside it and renamed into place only when whole.
    /// `progress` is told the fraction done (0…1) as frames are encoded; `stop` is asked at each frame, and when it says
    /// so the export ends, nothing written.
    public static func compose(
        _ spec: Spec, to output: String, stop: () -> Bool = { false }, progress: (Double) -> Void = { _ in }
    ) throws(MediaError) -> Report {
        MediaLog.quiet()
        if let why = problem(spec) { throw MediaError(operation: "export", path: output, why) }
        // The slowed span within the cut: the video's and the sound's alike.
        var spec = spec
        if let s = spec.slow {
            let cut = spec.inputs.map { $0.end - $0.start }.min() ?? 0
            let from = min(max(s.from, 0), cut)
            spec.slow = Slow(from: from, to: min(max(s.to, from), cut), factor: s.factor)
        }
        let sources = try spec.inputs.map { (input) throws(MediaError) in try Source(input) }
        let graph = try VideoGraph(spec, sources)
        let partial = output + ".partial"
        defer { try? FileManager.default.removeItem(atPath: partial) }
        var sound: ClipSoundTrack?
        if let a = spec.soundFrom, sources[a].hasSound {
            sound = try soundTrack(spec, input: a)
        }
        let writer = try Writer(
            partial, width: graph.width, height: graph.height, framesPerSecond: spec.framesPerSecond, sound: sound)
        let expected = max(1, spec.durationSeconds * Double(spec.framesPerSecond))
        var frames = 0
        func drain() throws(MediaError) {
            while let f = try graph.pull() {
                if stop() { throw MediaError(operation: "export", path: output, "stopped: the export was deleted") }
                f.pointee.pts = av_rescale_q(f.pointee.pts, graph.timeBase, writer.encoder.pointee.time_base)
                try writer.encode(f)
                av_frame_unref(f)
                frames += 1
                progress(min(0.99, Double(frames) / expected))
            }
        }
        // Feed the input furthest behind, one frame at a time, and take what the graph makes after each.
        var open = Set(sources.indices)
        while !open.isEmpty {
            let i = open.min { sources[$0].nextSeconds < sources[$1].nextSeconds }!
            if let f = try sources[i].next() {
                try graph.push(f, input: i)
            } else {
                try graph.end(input: i)
                open.remove(i)
            }
            try drain()
        }
        try drain()
        try writer.finish()
        guard frames > 0 else { throw MediaError(operation: "export", path: output, "no frame was made") }
        if FileManager.default.fileExists(atPath: output) { try? FileManager.default.removeItem(atPath: output) }
        do { try FileManager.default.moveItem(atPath: partial, toPath: output) } catch {
            throw MediaError(operation: "export", path: output, "\(error)")
        }
        progress(1)
        return Report(
            frames: frames, width: graph.width, height: graph.height,
            durationSeconds: Double(frames) / Double(spec.framesPerSecond), hasSound: sound != nil)
    }

    /// The sound of input `a`, cut as its video is and slowed over the same span with its pitch kept (`atempo`).
    static func soundTrack(_ spec: Spec, input a: Int) throws(MediaError) -> ClipSoundTrack {
        let input = spec.inputs[a]
        let whole = try MediaReader.wholeAudioTimed(input.path)
        let rate = Double(whole.sampleRate)
        let first = Double(whole.firstNs) / 1e9
        func index(_ seconds: Double) -> Int {
            min(whole.samples.count, max(0, Int(((seconds - first) * rate).rounded())))
        }
        let length = spec.inputs.map { $0.end - $0.start }.min() ?? 0
        // Silence where the input's sound starts after its cut does, as ClipSoundTrack places it.
        let lead = max(0, first - input.start)
        let samples = Array(whole.samples[index(input.start)..<index(input.start + length)])
        guard let slow = spec.slow else {
            return ClipSoundTrack(samples: samples, sampleRate: whole.sampleRate, startNs: Int64(lead * 1e9))
        }
        let a0 = min(max(slow.from, 0), length)
        let b0 = min(max(slow.to, a0), length)
        // Sample positions within `samples` (which begin at input.start + lead).
        let ia = min(samples.count, max(0, Int(((a0 - lead) * rate).rounded())))
        let ib = min(samples.count, max(ia, Int(((b0 - lead) * rate).rounded())))
        let slowed = try Tempo.stretch(Array(samples[ia..<ib]), sampleRate: whole.sampleRate, factor: slow.factor)
        return ClipSoundTrack(
            samples: Array(samples[..<ia]) + slowed + Array(samples[ib...]), sampleRate: whole.sampleRate,
            startNs: Int64(lead * 1e9))
    }
}

// MARK: - The parts

extension ClipComposer {
    /// One input: its demuxer and video decoder, read frame by frame. What it holds of libav is freed by its deinit,
    /// however far its opening got.
    final class Source {
        let input: Input
        var format: UnsafeMutablePointer<AVFormatContext>?
        var decoder: UnsafeMutablePointer<AVCodecContext>?
        var packet: UnsafeMutablePointer<AVPacket>! = av_packet_alloc()
        var frame: UnsafeMutablePointer<AVFrame>! = av_frame_alloc()
        var stream: Int32 = -1
        var timeBase = ppc_rational(1, 1)
        var hasSound = false
        var firstPts: Int64?
        var lastSeconds: Double?
        var nextSeconds: Double = 0
        var ended = false
        var drained = false
        /// The first frame, decoded at open (its size and format shape the graph), handed out first.
        var held = false
        /// The first frame's size and pixel format: every later frame must have them (the graph was made for them).
        var shape: (width: Int32, height: Int32, format: Int32) = (0, 0, -1)

        /// The largest step between two frames of a part: a clip's frames are milliseconds apart; a file that jumps
        /// seconds would have the export repeat a frame for all of them.
        static let largestStepSeconds = 1.0

        init(_ input: Input) throws(MediaError) {
            self.input = input
            guard packet != nil, frame != nil else { throw MediaError(operation: "allocate", "out of memory") }
            var ctx: UnsafeMutablePointer<AVFormatContext>?
            // An export reads a library's clips, MP4 every one: that demuxer only, whatever a file's bytes look like.
            try check(avformat_open_input(&ctx, input.path, av_find_input_format("mp4"), nil), "open", path: input.path)
            format = ctx
            guard let ctx else { throw MediaError(operation: "open", path: input.path, "no context") }
            try check(avformat_find_stream_info(ctx, nil), "read stream info", path: input.path)
            stream = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
            hasSound = av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0) >= 0
            guard stream >= 0, let par = ctx.pointee.streams[Int(stream)]?.pointee.codecpar,
                let codec = avcodec_find_decoder(par.pointee.codec_id), let dec = avcodec_alloc_context3(codec)
            else { throw MediaError(operation: "export", path: input.path, "no video stream this FFmpeg decodes") }
            decoder = dec
            timeBase = ctx.pointee.streams[Int(stream)]!.pointee.time_base
            guard timeBase.num > 0, timeBase.den > 0 else {
                throw MediaError(
                    operation: "export", path: input.path, "a time base of \(timeBase.num)/\(timeBase.den)")
            }
            try check(avcodec_parameters_to_context(dec, par), "decoder parameters", path: input.path)
            dec.pointee.thread_count = 0
            try check(avcodec_open2(dec, codec, nil), "open decoder", path: input.path)
            guard try decode() else { throw MediaError(operation: "export", path: input.path, "no frame in its part") }
            held = true
        }

        deinit {
            av_frame_free(&frame)
            av_packet_free(&packet)
            avcodec_free_context(&decoder)
            avformat_close_input(&format)
        }

        var width: Int { Int(frame.pointee.width) }
        var height: Int { Int(frame.pointee.height) }
        var pixelFormat: Int32 { frame.pointee.format }

        /// Decodes the next frame of the part into `frame`; false at its end. A frame with no time is passed over; one
        /// of another size or format than the first, or seconds after the one before, ends the export naming the file.
        func decode() throws(MediaError) -> Bool {
            guard let decoder, let format else { return false }
            while true {
                let r = avcodec_receive_frame(decoder, frame)
                if r >= 0 {
                    let pts =
                        frame.pointee.best_effort_timestamp != ppc_av_nopts_value()
                        ? frame.pointee.best_effort_timestamp : frame.pointee.pts
                    guard pts != ppc_av_nopts_value() else {
                        av_frame_unref(frame)
                        continue
                    }
                    if firstPts == nil {
                        firstPts = pts
                        shape = (frame.pointee.width, frame.pointee.height, frame.pointee.format)
                    } else if (frame.pointee.width, frame.pointee.height, frame.pointee.format) != shape {
                        throw MediaError(
                            operation: "export", path: input.path,
                            "a frame of \(frame.pointee.width)x\(frame.pointee.height) (format \(frame.pointee.format)) after frames of \(shape.width)x\(shape.height) (format \(shape.format)): a clip keeps one size"
                        )
                    }
                    // In Double: a file's timestamps may lie anywhere in Int64, and their difference need not fit one.
                    let seconds = (Double(pts) - Double(firstPts ?? 0)) * Double(timeBase.num) / Double(timeBase.den)
                    guard seconds.isFinite, abs(seconds - (lastSeconds ?? seconds)) <= Self.largestStepSeconds else {
                        throw MediaError(
                            operation: "export", path: input.path,
                            "its frames jump from \(lastSeconds ?? 0) s to \(seconds) s: more than \(Self.largestStepSeconds) s between two frames"
                        )
                    }
                    lastSeconds = seconds
                    if seconds < input.start - 1e-6 {
                        av_frame_unref(frame)
                        continue
                    }
                    if seconds >= input.end - 1e-6 {
                        av_frame_unref(frame)
                        return false
                    }
                    // The graph's clock: µs from the part's start.
                    frame.pointee.pts = Int64(((seconds - input.start) * 1e6).rounded())
                    nextSeconds = seconds - input.start
                    return true
                }
                if r == ppc_averror_eof() { return false }
                if r != ppc_averror_eagain() { try check(r, "decode", path: input.path) }
                if drained { return false }
                let read = av_read_frame(format, packet)
                if read == ppc_averror_eof() {
                    drained = true
                    try check(avcodec_send_packet(decoder, nil), "decode", path: input.path)
                    continue
                }
                try check(read, "read", path: input.path)
                defer { av_packet_unref(packet) }
                if packet.pointee.stream_index != stream { continue }
                let sent = avcodec_send_packet(decoder, packet)
                if sent < 0 && sent != ppc_averror_eagain() { try check(sent, "decode", path: input.path) }
            }
        }

        /// The next frame of the part (owned by this source until the next call), nil at its end.
        func next() throws(MediaError) -> UnsafeMutablePointer<AVFrame>? {
            if held {
                held = false
                return frame
            }
            guard !ended else { return nil }
            av_frame_unref(frame)
            guard try decode() else {
                ended = true
                nextSeconds = .infinity
                return nil
            }
            return frame
        }
    }

    /// One libavfilter graph: filters made by name with their options, linked output 0 to an input pad, configured
    /// once; freed with it.
    final class FilterGraph {
        let graph: UnsafeMutablePointer<AVFilterGraph>
        var serial = 0

        init() throws(MediaError) {
            guard let g = avfilter_graph_alloc() else {
                throw MediaError(operation: "allocate filter graph", "out of memory")
            }
            graph = g
            g.pointee.nb_threads = 0
        }

        deinit {
            var g: UnsafeMutablePointer<AVFilterGraph>? = graph
            avfilter_graph_free(&g)
        }

        func add(_ name: String, _ args: String?) throws(MediaError) -> UnsafeMutablePointer<AVFilterContext> {
            guard let f = avfilter_get_by_name(name) else {
                throw MediaError(operation: "export", "libavfilter has no \(name) filter")
            }
            serial += 1
            var ctx: UnsafeMutablePointer<AVFilterContext>?
            try check(
                avfilter_graph_create_filter(&ctx, f, "\(name)\(serial)", args, nil, graph),
                "filter \(name)=\(args ?? "")")
            return ctx!
        }

        func link(
            _ a: UnsafeMutablePointer<AVFilterContext>, _ b: UnsafeMutablePointer<AVFilterContext>, _ pad: UInt32 = 0
        ) throws(MediaError) {
            try check(avfilter_link(a, 0, b, pad), "link filters")
        }

        func configure(_ what: String) throws(MediaError) {
            try check(avfilter_graph_config(graph, nil), "configure \(what)")
        }
    }

    /// The filter graph: per input, its pictures overlaid, its time slowed, its rate made the export's and its size
    /// the export's height; then the inputs stacked or blended.
    final class VideoGraph {
        var filters: FilterGraph?
        var sources: [UnsafeMutablePointer<AVFilterContext>] = []
        var sink: UnsafeMutablePointer<AVFilterContext>!
        var out: UnsafeMutablePointer<AVFrame>! = av_frame_alloc()
        var width = 0, height = 0

        /// The widest export: 8K across, whatever the angles side by side add up to.
        static let maxWidth = 7_680

        init(_ spec: Spec, _ inputs: [Source]) throws(MediaError) {
            guard out != nil else { throw MediaError(operation: "allocate frame", "out of memory") }
            let g = try FilterGraph()
            filters = g
            let make = g.add
            // The export's height, and each input's width at it (even; its aspect kept).
            let h = spec.height & ~1
            // Picture sources, fed once the graph is configured (a source takes frames only then).
            var feeds: [(Source, UnsafeMutablePointer<AVFilterContext>, (width: Int, height: Int))] = []
            let sizes = ClipComposer.outputSizes(spec, inputs: inputs.map { ($0.width, $0.height) })
            guard spec.layout != .sideBySide || sizes.reduce(0, { $0 + $1.width }) <= ClipComposer.maxWidth else {
                throw MediaError(
                    operation: "export",
                    "\(sizes.map { "\($0.width)" }.joined(separator: " + ")) pixels across: at most \(ClipComposer.maxWidth)"
                )
            }
            var ends: [UnsafeMutablePointer<AVFilterContext>] = []
            var widths: [Int] = []
            for (i, s) in inputs.enumerated() {
                let src = try make(
                    "buffer",
                    "video_size=\(s.width)x\(s.height):pix_fmt=\(s.pixelFormat):time_base=1/1000000:pixel_aspect=1/1")
                sources.append(src)
                var last = src
                if let slow = spec.slow, slow.factor < 1 {
                    let k = 1 / slow.factor - 1
                    let setpts = try make("setpts", "(T+\(k)*(clip(T\\,\(slow.from)\\,\(slow.to))-\(slow.from)))/TB")
                    try g.link(last, setpts)
                    last = setpts
                }
                let fps = try make("fps", "fps=\(spec.framesPerSecond)")
                try g.link(last, fps)
                let w = sizes[i].width
                widths.append(w)
                let scale = try make("scale", "w=\(w):h=\(h)")
                try g.link(fps, scale)
                let sar = try make("setsar", "1")
                try g.link(scale, sar)
                last = sar
                // The pictures over it, at its size in the export, on the export's clock (after the slowed span).
                if !s.input.pictures.isEmpty {
                    let pictures = try make(
                        "buffer",
                        "video_size=\(w)x\(h):pix_fmt=\(AV_PIX_FMT_BGRA.rawValue):time_base=1/1000000:pixel_aspect=1/1")
                    let over = try make("overlay", "eof_action=repeat:alpha=premultiplied:format=auto")
                    try g.link(last, over, 0)
                    try g.link(pictures, over, 1)
                    last = over
                    feeds.append((s, pictures, (w, h)))
                }
                ends.append(last)
            }
            var top: UnsafeMutablePointer<AVFilterContext>
            switch spec.layout {
            case .sideBySide where ends.count > 1:
                top = try make("hstack", "inputs=\(ends.count)")
                for (i, e) in ends.enumerated() { try g.link(e, top, UInt32(i)) }
                width = widths.reduce(0, +)
            case .sideBySide:
                top = ends[0]
                width = widths[0]
            case .overlay(let opacity):
                // blend's first input is the top layer; its opacity weighs it against the second.
                top = try make("blend", "all_mode=normal:all_opacity=\(opacity)")
                try g.link(ends[1], top, 0)
                try g.link(ends[0], top, 1)
                width = widths[0]
            }
            let format = try make("format", "pix_fmts=yuv420p")
            try g.link(top, format)
            sink = try make("buffersink", nil)
            try g.link(format, sink)
            height = h
            try g.configure("the export's filters")
            let cut = inputs.map { $0.input.end - $0.input.start }.min() ?? 0
            for (s, pictures, size) in feeds {
                // Within the cut, on the export's clock: a picture's frame after the video's last would have overlay
                // repeat that frame until it.
                let placed = s.input.pictures.map {
                    Picture(
                        from: ClipComposer.exportTime($0.from - s.input.start, spec.slow),
                        to: ClipComposer.exportTime(min($0.to, s.input.end) - s.input.start, spec.slow), bgra: $0.bgra,
                        stride: $0.stride, width: $0.width, height: $0.height)
                }
                try Self.feed(
                    placed, width: size.width, height: size.height, length: ClipComposer.exportTime(cut, spec.slow),
                    into: pictures, path: s.input.path)
            }
        }

        /// Pushes every picture (and, where none is shown, a clear one) into an input's picture source, then its end.
        static func feed(
            _ pictures: [Picture], width: Int, height: Int, length: Double,
            into src: UnsafeMutablePointer<AVFilterContext>, path: String
        ) throws(MediaError) {
            // Times where what is shown changes, each picture's own or clear between.
            var at = 0.0
            let sorted = pictures.sorted { $0.from < $1.from }
            func push(_ bytes: [UInt8]?, stride: Int, seconds: Double) throws(MediaError) {
                guard let f = av_frame_alloc() else { throw MediaError(operation: "allocate", "out of memory") }
                var fp: UnsafeMutablePointer<AVFrame>? = f
                defer { av_frame_free(&fp) }
                f.pointee.format = AV_PIX_FMT_BGRA.rawValue
                f.pointee.width = Int32(width)
                f.pointee.height = Int32(height)
                try check(av_frame_get_buffer(f, 0), "allocate a picture")
                let dst = f.pointee.data.0!
                let ls = Int(f.pointee.linesize.0)
                for y in 0..<height {
                    let row = dst + y * ls
                    if let bytes {
                        bytes.withUnsafeBufferPointer { b in
                            (row).update(from: b.baseAddress! + y * stride, count: min(width * 4, stride))
                        }
                    } else {
                        row.update(repeating: 0, count: width * 4)
                    }
                }
                f.pointee.pts = Int64((max(0, seconds) * 1e6).rounded())
                try check(av_buffersrc_add_frame_flags(src, f, 0), "picture over \(path)")
            }
            var lastPts = Int64.min
            for p in sorted {
                let from = max(p.from, at)
                guard p.to > from else { continue }
                guard p.width == width, p.height == height, p.stride >= width * 4, p.bgra.count >= p.stride * height
                else {
                    throw MediaError(
                        operation: "export", path: path,
                        "a picture of \(p.width)x\(p.height) (stride \(p.stride), \(p.bgra.count) bytes) over an angle shown at \(width)x\(height)"
                    )
                }
                let pts = Int64((max(0, from) * 1e6).rounded())
                if from > at, pts > lastPts {
                    try push(nil, stride: 0, seconds: at)
                    lastPts = Int64((max(0, at) * 1e6).rounded())
                }
                let fromPts = max(pts, lastPts + 1)
                try push(p.bgra, stride: p.stride, seconds: Double(fromPts) / 1e6)
                lastPts = fromPts
                at = p.to
            }
            // Clear after the last (and from the start, when none was shown at all).
            if (at > 0 && at < length - 1e-3) || lastPts == Int64.min {
                try push(nil, stride: 0, seconds: lastPts == Int64.min ? 0 : max(at, Double(lastPts + 1) / 1e6))
            }
            try check(av_buffersrc_add_frame_flags(src, nil, 0), "end of pictures over \(path)")
        }

        func push(_ frame: UnsafeMutablePointer<AVFrame>, input: Int) throws(MediaError) {
            try check(
                av_buffersrc_add_frame_flags(sources[input], frame, Int32(AV_BUFFERSRC_FLAG_KEEP_REF)),
                "feed the export's filters")
        }

        func end(input: Int) throws(MediaError) {
            try check(av_buffersrc_add_frame_flags(sources[input], nil, 0), "end the export's input")
        }

        /// The next finished frame (valid until unreferenced), nil when the graph wants more input or is done.
        func pull() throws(MediaError) -> UnsafeMutablePointer<AVFrame>? {
            let r = av_buffersink_get_frame(sink, out)
            if r == ppc_averror_eagain() || r == ppc_averror_eof() { return nil }
            try check(r, "take a frame from the export's filters")
            return out
        }

        /// The sink's clock (the fps filter's, 1/rate).
        var timeBase: AVRational { av_buffersink_get_time_base(sink) }

        deinit { av_frame_free(&out) }
    }

    /// The MP4: H.264 (libx264) at the export's rate, and the sound track when there is one, interleaved.
    final class Writer {
        let path: String
        var oc: UnsafeMutablePointer<AVFormatContext>?
        var encoder: UnsafeMutablePointer<AVCodecContext>!
        var stream: UnsafeMutablePointer<AVStream>!
        var packet: UnsafeMutablePointer<AVPacket>! = av_packet_alloc()
        var sound: ClipSoundTrack.Encoded?
        var opened = false

        init(
            _ path: String, width: Int, height: Int, framesPerSecond: Int, sound track: ClipSoundTrack?
        ) throws(MediaError) {
            self.path = path
            guard packet != nil else { throw MediaError(operation: "allocate packet", "out of memory") }
            try check(avformat_alloc_output_context2(&oc, nil, "mp4", path), "create MP4 muxer", path: path)
            guard let out = oc, let codec = avcodec_find_encoder_by_name("libx264") else {
                throw MediaError(operation: "export", path: path, "no libx264 in this FFmpeg")
            }
            encoder = avcodec_alloc_context3(codec)
            stream = avformat_new_stream(out, nil)
            guard let ctx = encoder, let s = stream else {
                throw MediaError(operation: "export", path: path, "out of memory")
            }
            ctx.pointee.width = Int32(width)
            ctx.pointee.height = Int32(height)
            ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            ctx.pointee.time_base = ppc_rational(1, Int32(framesPerSecond))
            ctx.pointee.framerate = ppc_rational(Int32(framesPerSecond), 1)
            ctx.pointee.gop_size = Int32(framesPerSecond)
            ctx.pointee.max_b_frames = 0
            ctx.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
            av_opt_set(ctx.pointee.priv_data, "preset", "veryfast", 0)
            av_opt_set(ctx.pointee.priv_data, "crf", "21", 0)
            try check(avcodec_open2(ctx, codec, nil), "open libx264 \(width)x\(height)", path: path)
            try check(avcodec_parameters_from_context(s.pointee.codecpar, ctx), "video codec parameters")
            s.pointee.time_base = ctx.pointee.time_base
            s.pointee.avg_frame_rate = ppc_rational(Int32(framesPerSecond), 1)
            sound = try track?.encode(into: out, path: path)
            try check(avio_open(&out.pointee.pb, path, AVIO_FLAG_WRITE), "create", path: path)
            opened = true
            var options: OpaquePointer?
            av_dict_set(&options, "movflags", "+faststart", 0)
            defer { av_dict_free(&options) }
            try check(avformat_write_header(out, &options), "write MP4 header", path: path)
        }

        func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws(MediaError) {
            frame?.pointee.pict_type = AV_PICTURE_TYPE_NONE
            try check(avcodec_send_frame(encoder, frame), "encode", path: path)
            while true {
                let r = avcodec_receive_packet(encoder, packet)
                if r == ppc_averror_eagain() || r == ppc_averror_eof() { return }
                try check(r, "encode", path: path)
                let at90k = av_rescale_q(packet.pointee.pts, encoder.pointee.time_base, mpegTimeBase)
                try sound?.write(until90k: at90k, into: oc!, path: path)
                packet.pointee.stream_index = stream.pointee.index
                av_packet_rescale_ts(packet, encoder.pointee.time_base, stream.pointee.time_base)
                try check(av_interleaved_write_frame(oc, packet), "write MP4 video packet", path: path)
            }
        }

        func finish() throws(MediaError) {
            try encode(nil)
            try sound?.write(until90k: .max, into: oc!, path: path)
            try check(av_write_trailer(oc), "finish MP4", path: path)
        }

        deinit {
            sound?.free()
            avcodec_free_context(&encoder)
            av_packet_free(&packet)
            if opened, let oc { avio_closep(&oc.pointee.pb) }
            avformat_free_context(oc)
        }
    }

    /// Sound slowed with its pitch kept: libavfilter's `atempo` (½× a stage, chained for ¼× and ⅛×).
    enum Tempo {
        static func stretch(_ samples: [Float], sampleRate: Int, factor: Double) throws(MediaError) -> [Float] {
            guard factor < 1, !samples.isEmpty else { return samples }
            guard let frame = av_frame_alloc() else { throw MediaError(operation: "allocate frame", "out of memory") }
            var fp: UnsafeMutablePointer<AVFrame>? = frame
            defer { av_frame_free(&fp) }
            let g = try FilterGraph()
            // The sink and source below are the graph's: it must outlive their last use, not just its own.
            defer { withExtendedLifetime(g) {} }
            let make = g.add
            let src = try make(
                "abuffer", "time_base=1/\(sampleRate):sample_rate=\(sampleRate):sample_fmt=flt:channel_layout=mono")
            var last = src
            var left = factor
            while left < 0.999 {
                let stage = max(0.5, left)
                let t = try make("atempo", "tempo=\(stage)")
                try g.link(last, t)
                last = t
                left /= stage
            }
            let fmt = try make("aformat", "sample_fmts=flt:channel_layouts=mono")
            try g.link(last, fmt)
            let sink = try make("abuffersink", nil)
            try g.link(fmt, sink)
            try g.configure("the sound's filters")
            var out: [Float] = []
            out.reserveCapacity(Int(Double(samples.count) / factor) + 4_096)
            func take() throws(MediaError) {
                while true {
                    let r = av_buffersink_get_frame(sink, frame)
                    if r == ppc_averror_eagain() || r == ppc_averror_eof() { return }
                    try check(r, "slow the sound")
                    let n = Int(frame.pointee.nb_samples)
                    let p = UnsafeRawPointer(frame.pointee.data.0!).assumingMemoryBound(to: Float.self)
                    out.append(contentsOf: UnsafeBufferPointer(start: p, count: n))
                    av_frame_unref(frame)
                }
            }
            var at = 0
            while at < samples.count {
                let n = min(4_096, samples.count - at)
                frame.pointee.nb_samples = Int32(n)
                frame.pointee.format = AV_SAMPLE_FMT_FLT.rawValue
                frame.pointee.sample_rate = Int32(sampleRate)
                av_channel_layout_default(&frame.pointee.ch_layout, 1)
                try check(av_frame_get_buffer(frame, 0), "allocate a sound frame")
                let p = UnsafeMutableRawPointer(frame.pointee.data.0!).assumingMemoryBound(to: Float.self)
                samples.withUnsafeBufferPointer { b in p.update(from: b.baseAddress! + at, count: n) }
                frame.pointee.pts = Int64(at)
                try check(av_buffersrc_add_frame_flags(src, frame, 0), "slow the sound")
                av_frame_unref(frame)
                try take()
                at += n
            }
            try check(av_buffersrc_add_frame_flags(src, nil, 0), "slow the sound")
            try take()
            return out
        }
    }
}
