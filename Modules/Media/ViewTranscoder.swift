import CFFmpeg
import Foundation

/// Makes a viewing copy of a clip a browser cannot play (Motion JPEG): decoded, encoded to H.264 (libx264, one IDR a
/// second, no B-frames) at the clip's own frame times, and written as a faststart MP4 — through the same TS fragment
/// muxer and MP4 remuxer as the capture path, so the copy meets the same checks — with the clip's sound track, when it
/// has one, in the same place. The original is never touched.
///
/// For a host, off its receive path (seed 000: a device runs one encode session while armed; transcoding is the
/// host's work).
public enum ViewTranscoder {
    public struct Report: Sendable, Equatable {
        public let frames: Int
        public let sourceCodec: String
        public let width: Int
        public let height: Int
        public let framesPerSecond: Int
    }

    /// The largest viewing copy: 1920×1080 (either way round). A browser plays it at any pace a coach steps through, the
    /// original stays for anything finer, and a clip claiming 16000×16000 (a careless or hostile device) cannot have the
    /// host encode frames of 384 MB each.
    public static let maxViewingSide = (long: 1920, short: 1080)

    /// The viewing copy's size for a `width`×`height` clip: its own when it fits `maxViewingSide`, else scaled to fit with
    /// its aspect kept; always even (H.264 4:2:0) and at least 2×2.
    public static func viewingSize(width: Int, height: Int) -> (width: Int, height: Int) {
        let (maxW, maxH) =
            width >= height ? (maxViewingSide.long, maxViewingSide.short) : (maxViewingSide.short, maxViewingSide.long)
        let scale = min(1, Double(maxW) / Double(width), Double(maxH) / Double(height))
        func even(_ x: Double) -> Int { max(2, Int(x) & ~1) }
        return (even(Double(width) * scale), even(Double(height) * scale))
    }

    /// Whether `clip` (an MP4) holds video a browser does not play, so a viewing copy is worth making.
    public static func needsViewingCopy(_ clip: String) -> Bool {
        guard let r = try? MediaReader(clip) else { return false }
        // Browsers play H.264; Motion JPEG, HEVC and lossless clips get a copy. (A clip with no video needs none.)
        guard let codec = r.videoCodec else { return false }
        return codec != "h264"
    }

    /// Writes `output` (H.264 MP4) from `input`'s video. The copy is built beside `output` and renamed into place only
    /// when whole, so a crash leaves either no copy or a complete one.
    public static func transcode(_ input: String, to output: String) throws -> Report {
        let reader = try MediaReader(input)
        guard let v = reader.video else { throw MediaError(operation: "transcode", path: input, "no video stream") }
        guard v.width > 0, v.height > 0, v.framesPerSecond > 0 else {
            throw MediaError(
                operation: "transcode", path: input,
                "video is \(v.width)x\(v.height)@\(v.framesPerSecond); a viewing copy needs a size and a rate")
        }
        let size = viewingSize(width: v.width, height: v.height)
        reader.outputSize = size
        // About 0.1 bit a pixel: a viewing copy, not an archive (the original stays).
        let bitrate = max(500_000, min(50_000_000, size.width * size.height * v.framesPerSecond / 10))
        let encoder = try EncoderSession(
            .init(
                codec: .h264, width: size.width, height: size.height, framesPerSecond: v.framesPerSecond,
                bitrateBps: bitrate,
                gopFrames: v.framesPerSecond, preset: "veryfast"))
        let ts = output + ".ts.partial"
        let partial = output + ".partial"
        guard FileManager.default.createFile(atPath: ts, contents: nil), let file = FileHandle(forWritingAtPath: ts)
        else {
            throw MediaError(operation: "create", path: ts, "cannot write")
        }
        defer {
            try? file.close()
            try? FileManager.default.removeItem(atPath: ts)
            try? FileManager.default.removeItem(atPath: partial)
        }
        let muxer = try FragmentMuxer(encoder: encoder) { bytes in file.write(Data(bytes)) }
        try muxer.begin()
        var frames = 0
        var lastPts = Int64.min
        while true {
            let planes = try encoder.nextFrame()
            guard
                let f = try reader.readVideo(
                    luma: planes.luma, lumaStride: planes.lumaStride, chroma: planes.chroma,
                    chromaStride: planes.chromaStride)
            else { break }
            let pts = max(ticks90k(f.timeNs), lastPts + 1)
            lastPts = pts
            try encoder.encode(pts: pts, forceKeyframe: frames % v.framesPerSecond == 0) { try muxer.write($0) }
            frames += 1
        }
        try encoder.flush { try muxer.write($0) }
        try muxer.end()
        try file.synchronize()
        guard frames > 0 else { throw MediaError(operation: "transcode", path: input, "no frames decoded") }
        // The clip's sound track goes along (decoded and encoded again: a copy for viewing), so the strike is heard there too.
        let sound = reader.audioSampleRate == nil ? nil : try MediaReader.wholeAudioTimed(input)
        _ = try ClipRemuxer.remux(
            fragments: [ts], to: partial, frameIntervalTicks: 90_000 / Int64(v.framesPerSecond),
            audio: sound.map { ClipSoundTrack(samples: $0.samples, sampleRate: $0.sampleRate, startNs: $0.firstNs) })
        if FileManager.default.fileExists(atPath: output) { try FileManager.default.removeItem(atPath: output) }
        try FileManager.default.moveItem(atPath: partial, toPath: output)
        return Report(
            frames: frames, sourceCodec: reader.videoCodec ?? "?", width: size.width, height: size.height,
            framesPerSecond: v.framesPerSecond)
    }
}
