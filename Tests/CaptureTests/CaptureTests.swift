import Foundation
import FragmentRing
import Media
import PayloadSource
import Pipeline
import Syscall
import TestSupport
import Testing
import TimelineIndex

@testable import Capture
@testable import LibavEncoder
@testable import Synthetic
@testable import ZstdCodec

/// Source → encoder → ring → clip, judged by ffprobe and ffmpeg, never by ppc's own decoder.
@Suite("Capture: fragments and clips that provably decode")
struct CaptureTests {
    struct Run {
        let tmp: TemporaryDirectory
        let ring: FragmentRing
        let index: TimelineIndex
        let source: SyntheticVideoSource
        let stats: CaptureSession.Statistics
        let format: VideoFormat
    }

    static let impactNs: Int64 = 2_004_000_000  // between frames 240 (2.0 s) and 241 at 120 fps

    static func capture(codec: EncoderSession.Settings.Codec, seconds: Double = 4, cutsAtNs: [Int64] = []) throws -> Run
    {
        let tmp = TemporaryDirectory("ppc-capture")
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "ts"))
        let index = TimelineIndex()
        let video = index.register(SourceID(1), name: "video", rateHz: 2, windowSeconds: 12)
        let format = VideoFormat(width: 320, height: 180, framesPerSecond: 120)
        let source = SyntheticVideoSource(format: format, script: SwingScript(impactsNs: [impactNs]), seconds: seconds)
        let encoder = LibavVideoEncoder(codec: codec, bitrateBps: 2_000_000, preset: "ultrafast", threads: 1)
        let session = CaptureSession(
            source: source, encoder: encoder, ring: ring, timeline: video, fragmentNs: 500_000_000)
        for cut in cutsAtNs { session.fragmentCuts.request(atNs: cut) }
        let stats = try session.run()
        return Run(tmp: tmp, ring: ring, index: index, source: source, stats: stats, format: format)
    }

    static func ffprobeFirstFrame(_ path: String) throws -> (keyframe: Bool, pictType: String) {
        let r = try ToolRunner.runProgram(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-read_intervals", "%+#1", "-show_entries",
                "frame=key_frame,pict_type", "-of", "csv=p=0", path,
            ])
        let line = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        let parts = line.split(separator: ",").map(String.init)
        return (parts.first == "1", parts.count > 1 ? parts[1] : "")
    }

    /// Decodes a file with the ffmpeg CLI into gray frames and reads each one's frame counter.
    static func decodedCounters(_ path: String, width: Int, height: Int) throws -> (
        counters: [Int64?], ballPresent: [Bool]
    ) {
        let r = try ToolRunner.runProgram(
            "ffmpeg", ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        let size = width * height
        let frames = r.stdout.count / size
        var counters: [Int64?] = []
        var ball: [Bool] = []
        let radius = max(2, height / 40)
        let ballOffset = (height - 2 * radius - 1) * width + width / 2
        r.stdout.withUnsafeBytes { all in
            for i in 0..<frames {
                let frame = UnsafeRawBufferPointer(rebasing: all[(i * size)..<((i + 1) * size)])
                counters.append(FrameCounter.read(from: frame, width: width, height: height, stride: width))
                ball.append(frame[ballOffset] > 150)
            }
        }
        return (counters, ball)
    }

    @Test(arguments: [EncoderSession.Settings.Codec.h264, .hevc])
    func everyFragmentStartsOnAKeyframeAndDecodesAlone(codec: EncoderSession.Settings.Codec) throws {
        let run = try Self.capture(codec: codec, seconds: 2)
        #expect(run.stats.framesEncoded == 240)
        #expect(run.stats.fragmentsPublished == 4)
        #expect(run.ring.fragments.map(\.frameCount) == [60, 60, 60, 60])
        for f in run.ring.fragments {
            let path = run.ring.path(of: f.sequence)
            let first = try Self.ffprobeFirstFrame(path)
            #expect(first.keyframe && first.pictType == "I", "fragment \(f.sequence) starts with \(first)")
            let decode = try ToolRunner.runProgram("ffmpeg", ["-v", "error", "-i", path, "-f", "null", "-"])
            #expect(decode.status == 0 && decode.stderr.isEmpty, "fragment \(f.sequence): \(decode.stderr)")
            let (counters, _) = try Self.decodedCounters(path, width: 320, height: 180)
            #expect(counters.count == 60)
        }
        // Fragments are on the timeline too.
        #expect(run.index.snapshot(startNs: 0, endNs: .max).entries(of: .videoFragment).count == 4)
    }

    /// A full disk is told apart from every other failure by its code, not by libav's or Foundation's wording: the
    /// session keeps such a shot and mints it again when there is room (IntegrityToolTests runs that end to end).
    @Test func aFullDiskIsKnownByItsCodeWhereverItIsMet() throws {
        let run = try Self.capture(codec: .h264)
        let live = RingPayloadSource(ring: run.ring, index: run.index)
        let window = try live.freeze(startNs: Self.impactNs - 500_000_000, endNs: Self.impactNs + 500_000_000)
        defer { try? live.release(window) }
        var files: [String] = []
        for f in window.fragments {
            let file = run.tmp.sub("\(f.info.sequence.hex).ts")
            _ = try window.backing.extract(f.handle, to: file)
            files.append(file)
        }
        // libav writing to a device that is always full.
        let media = #expect(throws: MediaError.self) {
            try ClipRemuxer.remux(fragments: files, to: "/dev/full", frameIntervalTicks: 1_500)
        }
        #expect(media.map(ClipMinter.isDiskFull) == true, "\(String(describing: media))")
        #expect(ClipMinter.isDiskFull(SystemError(errno: ENOSPC, operation: "write", path: "audio.wav.tmp")))
        #expect(ClipMinter.isDiskFull(CocoaError(.fileWriteOutOfSpace)))
        #expect(ClipMinter.isDiskFull(NSError(domain: NSPOSIXErrorDomain, code: Int(ENOSPC))))
        #expect(!ClipMinter.isDiskFull(SystemError(errno: EACCES, operation: "write", path: "audio.wav.tmp")))
        #expect(!ClipMinter.isDiskFull(MediaError(operation: "remux", "no fragments")))
        #expect(!ClipMinter.isDiskFull(CocoaError(.fileWriteNoPermission)))
    }

    @Test func theClipDecodesCleanlyWithEveryFrameInOrderAndTheImpactWhereT0Says() throws {
        let run = try Self.capture(codec: .h264)
        #expect(run.stats.framesEncoded == 480)
        #expect(run.stats.framesDroppedLate == 0 && run.stats.framesMissingAtSource == 0)
        let live = RingPayloadSource(ring: run.ring, index: run.index)
        let window = try live.freeze(startNs: Self.impactNs - 1_000_000_000, endNs: Self.impactNs + 1_000_000_000)
        defer { try? live.release(window) }
        let clipPath = run.tmp.sub("clip.mp4")
        let clip = try ClipMinter.mint(window, to: clipPath, frameIntervalNs: run.format.frameIntervalNs)
        #expect(clip.frames == window.frameCount)

        // 1. ffmpeg decodes it without a word.
        let decode = try ToolRunner.runProgram("ffmpeg", ["-v", "error", "-i", clipPath, "-f", "null", "-"])
        #expect(decode.status == 0)
        #expect(decode.stderr.isEmpty, "ffmpeg said: \(decode.stderr)")
        // 2. First frame a keyframe; timestamps start at 0.
        let first = try Self.ffprobeFirstFrame(clipPath)
        #expect(first.keyframe)
        let start = try ToolRunner.runProgram(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=start_time,nb_frames", "-of",
                "csv=p=0", clipPath,
            ])
        let fields = String(decoding: start.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            .split(separator: ",")
        #expect(Double(fields.first ?? "") == 0)
        #expect(Int(fields.last ?? "") == window.frameCount)
        // 3. Faststart: the moov box comes before mdat.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: clipPath))
        let moov = bytes.range(of: Data("moov".utf8))!.lowerBound
        let mdat = bytes.range(of: Data("mdat".utf8))!.lowerBound
        #expect(moov < mdat)
        // 4. Every frame decoded, counters contiguous from the window's first frame.
        let (counters, ball) = try Self.decodedCounters(clipPath, width: 320, height: 180)
        #expect(counters.count == window.frameCount)
        let firstCounter = try #require(counters.first ?? nil)
        #expect(firstCounter == run.source.firstFrame(atOrAfter: window.fragments[0].info.startNs))
        #expect(counters == (0..<Int64(counters.count)).map { Optional(firstCounter + $0) })
        // 5. The first frame without the ball is the first at or after t0, at the position t0 gives in the clip.
        let impactFrame = run.source.firstFrame(atOrAfter: Self.impactNs)
        let gone = try #require(ball.firstIndex(of: false))
        #expect(Int64(gone) == impactFrame - firstCounter)
        #expect(ball[..<gone].allSatisfy { $0 })
    }

    /// A shot's post-roll end cut (`capture.sealPostRollEarly`): the fragment holding it ends at the first frame at or
    /// after it, that frame opens the next on an IDR, and a clip ending there decodes as one on the grid does.
    @Test(arguments: [EncoderSession.Settings.Codec.h264, .hevc])
    func aCutAtAPostRollEndSealsItsFragmentThereAndAClipEndingThereDecodes(codec: EncoderSession.Settings.Codec) throws
    {
        let cut: Int64 = 2_904_000_000  // between frames 348 (2.8999 s) and 349 (2.9083 s)
        let run = try Self.capture(codec: codec, cutsAtNs: [cut])
        #expect(run.stats.fragmentCutsMade == 1 && run.stats.fragmentCutsMissed == 0)
        #expect(run.ring.fragments.map(\.frameCount) == [60, 60, 60, 60, 60, 49, 60, 60, 11])
        let afterCut = run.ring.fragments[6]
        #expect(afterCut.startNs == run.source.timeNs(ofFrame: 349))
        let first = try Self.ffprobeFirstFrame(run.ring.path(of: afterCut.sequence))
        #expect(first.keyframe && first.pictType == "I", "the fragment the cut opens starts with \(first)")

        // The window a mint takes for a post-roll ending at the cut ends with the fragment the cut sealed.
        let live = RingPayloadSource(ring: run.ring, index: run.index)
        let window = try live.freeze(startNs: Self.impactNs - 1_000_000_000, endNs: cut)
        defer { try? live.release(window) }
        #expect(window.fragments.last?.info.endNs == run.source.timeNs(ofFrame: 349))
        let clipPath = run.tmp.sub("clip.mp4")
        let clip = try ClipMinter.mint(window, to: clipPath, frameIntervalNs: run.format.frameIntervalNs)
        let decode = try ToolRunner.runProgram("ffmpeg", ["-v", "error", "-i", clipPath, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "ffmpeg said: \(decode.stderr)")
        let (counters, _) = try Self.decodedCounters(clipPath, width: 320, height: 180)
        #expect(counters.count == clip.frames && clip.frames == window.frameCount)
        let firstCounter = try #require(counters.first ?? nil)
        #expect(counters == (0..<Int64(counters.count)).map { Optional(firstCounter + $0) })
        #expect(counters.last == 348)
    }

    @Test func aWindowTheRingNoLongerHoldsIsRefused() throws {
        let run = try Self.capture(codec: .h264, seconds: 2)
        let live = RingPayloadSource(ring: run.ring, index: run.index)
        #expect(throws: PayloadError.self) { try live.freeze(startNs: 1_000_000_000, endNs: 5_000_000_000) }
    }
}

@Suite("zstd: lossless fragments")
struct ZstdFragmentTests {
    @Test func framesComeBackBitExactWithTheirTimes() throws {
        let tmp = TemporaryDirectory("ppc-zstd")
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "zst"))
        let format = VideoFormat(width: 160, height: 90, framesPerSecond: 60)
        let source = SyntheticVideoSource(
            format: format, script: SwingScript(impactsNs: [500_000_000]), seconds: 1, texture: .noise)
        let encoder = ZstdFragmentEncoder(level: 1)
        let stats = try CaptureSession(
            source: source, encoder: encoder, ring: ring, timeline: nil, fragmentNs: 500_000_000
        ).run()
        #expect(stats.framesEncoded == 60)
        #expect(ring.fragments.map(\.frameCount) == [30, 30])
        #expect(ring.fragments.allSatisfy { $0.codec == .zstdNV12 })
        // Render the same frames again and compare byte for byte.
        let again = SyntheticVideoSource(
            format: format, script: SwingScript(impactsNs: [500_000_000]), seconds: 1, texture: .noise)
        var expected = [UInt8](repeating: 0, count: format.frameBytes)
        for f in ring.fragments {
            let decoded = try ZstdFragmentEncoder.decode(try ring.read(f.handle))
            #expect(decoded.width == 160 && decoded.height == 90 && decoded.frames.count == 30)
            for frame in decoded.frames {
                let info = try #require(
                    try expected.withUnsafeMutableBytes {
                        try again.readFrame(into: VideoFrameBuffer(contiguous: $0.baseAddress!, width: 160, height: 90))
                    })
                #expect(frame.timeNs == info.timeNs)
                #expect(frame.nv12 == expected)
            }
        }
    }

    @Test func aDamagedFragmentIsNamedNotCrashed() throws {
        #expect(throws: ZstdCodecError.self) { try ZstdFragmentEncoder.decode(Array("PPCZ".utf8)) }
        var bytes =
            Array("PPCZ".utf8) + [1, 1, 0, 0] + [UInt8](repeating: 0, count: 12) + [
                1, 0, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0,
            ]
        #expect(throws: ZstdCodecError.self) { try ZstdFragmentEncoder.decode(bytes) }
        bytes += [UInt8](repeating: 9, count: 200)
        #expect(throws: (any Error).self) { try ZstdFragmentEncoder.decode(bytes) }
    }
}
