import Foundation
import FragmentRing
import Media
import PayloadSource
import Pipeline
import TestSupport
import Testing
import TimelineIndex

@testable import Capture
@testable import LibavEncoder
@testable import MediaSource
@testable import Synthetic

/// Motion JPEG through the ring without a decode or an encode: the camera's (here synthetic.mjpeg's) JPEG bytes are
/// the clip's, every frame is there in order, and ffmpeg says so.
@Suite("Passthrough: Motion JPEG as the camera sent it")
struct PassthroughTests {
    static let impactNs: Int64 = 1_504_000_000

    static func capture(seconds: Double = 3) throws -> (
        TemporaryDirectory, FragmentRing, TimelineIndex, SyntheticMJPEGSource, CaptureSession.Statistics
    ) {
        let tmp = TemporaryDirectory("ppc-mjpeg")
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "nut"))
        let index = TimelineIndex()
        let video = index.register(SourceID(1), name: "video", rateHz: 2, windowSeconds: 12)
        let source = try SyntheticMJPEGSource(
            width: 320, height: 180, framesPerSecond: 120, script: SwingScript(impactsNs: [impactNs]), startNs: 0,
            seconds: seconds,
            pace: .asap, texture: .flat, quality: 5, distinctSeconds: 0)
        let session = CaptureSession(
            source: source, encoder: PassthroughEncoder(), ring: ring, timeline: video, fragmentNs: 500_000_000)
        let stats = try session.run()
        return (tmp, ring, index, source, stats)
    }

    @Test func fragmentsSplitOnTheTimeGridAndEachDecodesAloneAsMJPEG() throws {
        let (tmp, ring, _, _, stats) = try Self.capture(seconds: 2)
        defer { withExtendedLifetime(tmp) {} }
        #expect(stats.framesEncoded == 240)
        #expect(ring.fragments.map(\.frameCount) == [60, 60, 60, 60])
        #expect(ring.fragments.allSatisfy { $0.codec == .mjpeg && $0.startsWithKeyframe })
        for f in ring.fragments {
            let path = ring.path(of: f.sequence)
            #expect(path.hasSuffix(".nut"))
            let probe = try ToolRunner.runProgram(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                    "stream=codec_name,nb_read_frames", "-of", "csv=p=0", path,
                ])
            #expect(
                String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                    == "mjpeg,60", "\(probe.stderr)")
        }
    }

    @Test func theClipIsTheCamerasOwnJPEGsInOrderAndDecodesWithTheImpactWhereT0Says() throws {
        let (tmp, ring, index, source, _) = try Self.capture()
        let live = RingPayloadSource(ring: ring, index: index)
        let window = try live.freeze(startNs: Self.impactNs - 1_000_000_000, endNs: Self.impactNs + 1_000_000_000)
        defer { try? live.release(window) }
        let clipPath = tmp.sub("clip.mp4")
        let clip = try ClipMinter.mint(
            window, to: clipPath, frameIntervalNs: source.format.frameIntervalNs, fragmentExtension: "nut")
        #expect(clip.frames == window.frameCount)
        let probe = try ToolRunner.runProgram(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries",
                "stream=codec_name,codec_tag_string,r_frame_rate,start_time", "-of", "csv=p=0", clipPath,
            ])
        #expect(
            String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                == "mjpeg,mp4v,120/1,0.000000")
        let decode = try ToolRunner.runProgram("ffmpeg", ["-v", "error", "-i", clipPath, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "ffmpeg said: \(decode.stderr)")
        // Byte for byte the JPEGs the source made: frame k of the clip is the source's frame first + k.
        let firstFrame = source.picture.firstFrame(atOrAfter: window.fragments[0].info.startNs)
        let reader = try MediaReader(clipPath)
        var buffer = [UInt8](repeating: 0, count: source.format.frameBytes)
        var k: Int64 = 0
        while let p = try buffer.withUnsafeMutableBytes({ try reader.readVideoPacket(into: $0) }) {
            let i = Int(firstFrame + k)
            let expected = Array(source.jpegs[source.offsets[i]..<source.offsets[i + 1]])
            #expect(Array(buffer[0..<p.byteCount]) == expected, "frame \(k) of the clip is not the source's frame \(i)")
            k += 1
        }
        #expect(k == Int64(window.frameCount))
        // Decoded, the counters run on without a gap, and the ball leaves at the frame t0 gives.
        let (counters, ball) = try CaptureTests.decodedCounters(clipPath, width: 320, height: 180)
        #expect(counters == (0..<Int64(counters.count)).map { Optional(firstFrame + $0) })
        let gone = try #require(ball.firstIndex(of: false))
        #expect(Int64(gone) == source.picture.firstFrame(atOrAfter: Self.impactNs) - firstFrame)
    }

    @Test func anMJPEGFilePassesThroughUndecodedAndOtherSourcesAreRefusedByName() throws {
        let tmp = TemporaryDirectory("ppc-mjpeg-file")
        let path = tmp.sub("camera.mkv")
        try MediaSourceTests.makeFile(path, extra: ["-c:v", "mjpeg", "-q:v", "5", "-c:a", "pcm_s16le"])
        let file = try MediaSource(location: path, timeoutSeconds: 5)
        #expect(file.format.pixelFormat == .mjpeg)
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "nut"))
        let stats = try CaptureSession(
            source: file, encoder: PassthroughEncoder(), ring: ring, timeline: nil, fragmentNs: 500_000_000
        ).run()
        #expect(stats.framesEncoded == 60)
        // The fragments hold the file's packets unchanged: ffmpeg's own copy of the stream hashes the same.
        let ours = try ToolRunner.runProgram(
            "ffmpeg",
            ["-v", "error"] + ring.fragments.flatMap { ["-i", ring.path(of: $0.sequence)] }.prefix(2) + [
                "-map", "0:v", "-c", "copy", "-f", "hash", "-hash", "md5", "-",
            ])
        let theirs = try ToolRunner.runProgram(
            "ffmpeg",
            [
                "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-t",
                String(format: "%.6f", Double(ring.fragments[0].frameCount) / 30), "-f", "hash", "-hash", "md5", "-",
            ])
        #expect(
            ours.status == 0
                && String(decoding: ours.stdout, as: UTF8.self) == String(decoding: theirs.stdout, as: UTF8.self),
            "\(ours.stderr) \(theirs.stderr)")
        // Decoded instead when asked.
        #expect(try MediaSource(location: path, timeoutSeconds: 5, passthrough: false).format.pixelFormat == .nv12)
        // NV12 into passthrough, and MJPEG into x264, are refused with the reason.
        let nv12 = SyntheticVideoSource(
            format: VideoFormat(width: 320, height: 180, framesPerSecond: 30), script: SwingScript(impactsNs: []),
            seconds: 1)
        #expect(throws: MediaError.self) {
            _ = try CaptureSession(
                source: nv12, encoder: PassthroughEncoder(), ring: ring, timeline: nil, fragmentNs: 500_000_000
            ).run()
        }
        let again = try MediaSource(location: path, timeoutSeconds: 5)
        #expect(throws: MediaError.self) {
            _ = try CaptureSession(
                source: again,
                encoder: LibavVideoEncoder(codec: .h264, bitrateBps: 1_000_000, preset: "ultrafast", threads: 1),
                ring: ring, timeline: nil, fragmentNs: 500_000_000
            ).run()
        }
    }

    /// Motion JPEG frames as given, one every 33 ms: what a camera (or a careless one) hands the encoder.
    final class Frames: VideoSource {
        let format = VideoFormat(width: 320, height: 180, framesPerSecond: 30, pixelFormat: .mjpeg)
        let frames: [[UInt8]]
        var i = 0
        init(_ frames: [[UInt8]]) { self.frames = frames }
        func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo? {
            guard i < frames.count else { return nil }
            defer { i += 1 }
            for (k, b) in frames[i].enumerated() { frame.bytes.storeBytes(of: b, toByteOffset: k, as: UInt8.self) }
            return FrameInfo(index: Int64(i), timeNs: Int64(i) * 33_333_333, byteCount: frames[i].count)
        }
    }

    /// A frame that starts as a JPEG but ends without its end marker (FF D9, perhaps followed by a camera's zero
    /// padding) was cut short on its way: stored as it came, and counted for the report.
    @Test func aFrameCutShortIsStoredAndCounted() throws {
        let tmp = TemporaryDirectory("ppc-mjpeg-cut")
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "nut"))
        // Whole; whole and padded with zeros; cut short.
        let frames: [[UInt8]] = [
            [0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9], [0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9, 0, 0, 0], [0xFF, 0xD8, 1, 2, 3, 4, 5],
        ]
        let encoder = PassthroughEncoder()
        _ = try CaptureSession(
            source: Frames(frames), encoder: encoder, ring: ring, timeline: nil, fragmentNs: 500_000_000
        ).run()
        #expect(encoder.framesRefused == 0 && (encoder as FrameRefusing).framesUnended == 1)
        #expect(!ring.fragments.isEmpty)
    }

    @Test func aTornFrameIsRefusedNotStored() throws {
        let tmp = TemporaryDirectory("ppc-mjpeg-torn")
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "nut"))
        let encoder = PassthroughEncoder()
        let notJPEG = [UInt8](repeating: 0, count: 100)  // not a JPEG's FF D8
        _ = try CaptureSession(
            source: Frames([notJPEG, notJPEG, notJPEG]), encoder: encoder, ring: ring, timeline: nil,
            fragmentNs: 500_000_000
        ).run()
        #expect(encoder.framesRefused == 3)
        #expect((encoder as FrameRefusing).framesRefused == 3, "the session's report reads it through FrameRefusing")
        #expect(ring.fragments.isEmpty)
    }

    @Test func theHostsViewingCopyIsH264WithEveryFrameAndTheOriginalUntouched() throws {
        let (tmp, ring, index, source, _) = try Self.capture(seconds: 2)
        let live = RingPayloadSource(ring: ring, index: index)
        let window = try live.freeze(startNs: 0, endNs: 1_000_000_000)
        defer { try? live.release(window) }
        let clipPath = tmp.sub("clip.mp4")
        _ = try ClipMinter.mint(
            window, to: clipPath, frameIntervalNs: source.format.frameIntervalNs, fragmentExtension: "nut")
        let before = try Data(contentsOf: URL(fileURLWithPath: clipPath))
        #expect(ViewTranscoder.needsViewingCopy(clipPath))
        let view = tmp.sub("view.mp4")
        let r = try ViewTranscoder.transcode(clipPath, to: view)
        #expect(r.frames == window.frameCount && r.sourceCodec == "mjpeg")
        let probe = try ToolRunner.runProgram(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                "stream=codec_name,nb_read_frames", "-of", "csv=p=0", view,
            ])
        #expect(
            String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                == "h264,\(window.frameCount)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: clipPath)) == before)
        #expect(!ViewTranscoder.needsViewingCopy(view))
        let (counters, _) = try CaptureTests.decodedCounters(view, width: 320, height: 180)
        #expect(counters.first == Optional(0) && counters.last == Optional(Int64(window.frameCount - 1)))
    }

    /// A viewing copy fits 1920×1080 (either way round), its aspect kept and its sides even; a clip that fits keeps its
    /// size. An odd-sized clip, refused before, gets one too.
    @Test func theViewingCopyFitsFullHDWithItsAspectKept() throws {
        #expect(ViewTranscoder.viewingSize(width: 320, height: 180) == (320, 180))
        #expect(ViewTranscoder.viewingSize(width: 3840, height: 2160) == (1920, 1080))
        #expect(ViewTranscoder.viewingSize(width: 1080, height: 1920) == (1080, 1920))
        #expect(ViewTranscoder.viewingSize(width: 16000, height: 16000) == (1080, 1080))
        #expect(ViewTranscoder.viewingSize(width: 65, height: 49) == (64, 48))
        let tmp = TemporaryDirectory("ppc-view-size")
        for (size, expected) in [("2000x200", "1920,192"), ("65x49", "64,48")] {
            let path = tmp.sub("\(size).mkv")
            let made = try ToolRunner.runProgram(
                "ffmpeg",
                [
                    "-v", "error", "-f", "lavfi", "-i", "testsrc=size=\(size):rate=30", "-t", "0.2", "-c:v", "mjpeg",
                    "-y", path,
                ])
            try #require(made.status == 0, "\(made.stderr)")
            let view = tmp.sub("\(size).view.mp4")
            let r = try ViewTranscoder.transcode(path, to: view)
            let probe = try ToolRunner.runProgram(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                    view,
                ])
            #expect(
                String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                    == expected && r.frames == 6, "\(size)")
        }
    }

    @Test func hevcAndLosslessClipsGetAViewingCopyTooAndH264DoesNot() throws {
        let tmp = TemporaryDirectory("ppc-view-codecs")
        for (codec, args) in [
            ("hevc", ["-c:v", "libx265", "-x265-params", "log-level=error"]), ("ffv1", ["-c:v", "ffv1"]),
            ("h264", ["-c:v", "libx264"]),
        ] {
            let path = tmp.sub("\(codec).\(codec == "ffv1" ? "mkv" : "mp4")")
            let made = try ToolRunner.runProgram(
                "ffmpeg",
                ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=30", "-t", "0.5", "-pix_fmt", "yuv420p"]
                    + args + ["-y", path])
            try #require(made.status == 0, "\(made.stderr)")
            #expect(ViewTranscoder.needsViewingCopy(path) == (codec != "h264"), "\(codec)")
        }
        let view = tmp.sub("view.mp4")
        let r = try ViewTranscoder.transcode(tmp.sub("hevc.mp4"), to: view)
        #expect(r.sourceCodec == "hevc" && r.frames == 15)
        #expect(!ViewTranscoder.needsViewingCopy(view))
    }
}
