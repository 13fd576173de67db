import Foundation
import FragmentRing
import Glibc
import Media
import Pipeline
import TestSupport
import Testing

@testable import Capture
@testable import LibavEncoder
@testable import MediaSource

/// The `file` and `network` sources, fed by the ffmpeg CLI.
@Suite("file and network sources")
struct MediaSourceTests {
    static func makeFile(_ path: String, extra: [String]) throws {
        let r = try ToolRunner.runProgram(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=1000:sample_rate=48000", "-t", "2",
            ] + extra + [path])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
    }

    static func drain(_ source: MediaSource) throws -> (frames: [FrameInfo], samples: [Float]) {
        var frames: [FrameInfo] = []
        var planes = [UInt8](repeating: 0, count: source.format.frameBytes)
        while let f = try planes.withUnsafeMutableBytes({
            try source.readFrame(
                into: VideoFrameBuffer(
                    contiguous: $0.baseAddress!, width: source.format.width, height: source.format.height))
        }) {
            frames.append(f)
        }
        var samples: [Float] = []
        var block = [Float](repeating: 0, count: 4800)
        while let b = try block.withUnsafeMutableBufferPointer({ try source.read(into: $0) }) {
            samples += block[0..<b.count]
        }
        return (frames, samples)
    }

    @Test func aRecordedFileGivesItsVideoAndAudioTrack() throws {
        let tmp = TemporaryDirectory("ppc-file")
        let path = tmp.sub("session.mp4")
        try Self.makeFile(path, extra: ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac"])
        let source = try MediaSource(location: path, timeoutSeconds: 5)
        #expect(source.format == VideoFormat(width: 320, height: 180, framesPerSecond: 30))
        #expect(source.sampleRate == 48_000)
        let (frames, samples) = try Self.drain(source)
        #expect(frames.count == 60)
        #expect(frames.map(\.index) == Array(0..<60))
        for (a, b) in zip(frames, frames.dropFirst()) { #expect(b.timeNs > a.timeNs) }
        #expect(abs(frames[30].timeNs - 1_000_000_000) < 2_000_000)
        #expect(abs(samples.count - 96_000) < 4096)  // AAC adds priming and padding
        let rms = (samples.reduce(0) { $0 + $1 * $1 } / Float(samples.count)).squareRoot()
        #expect(rms > 0.05)  // the sine is there
    }

    @Test func nv12VideoIsCopiedThroughUnchanged() throws {
        let tmp = TemporaryDirectory("ppc-file")
        let path = tmp.sub("raw.nut")
        try Self.makeFile(path, extra: ["-c:v", "rawvideo", "-pix_fmt", "nv12", "-c:a", "pcm_s16le"])
        let reader = try MediaReader(path)
        #expect(reader.video?.sourcePixelFormat == "nv12")
        let reference = try ToolRunner.runProgram(
            "ffmpeg", ["-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "nv12", "-"])
        var planes = [UInt8](repeating: 0, count: 320 * 180 * 3 / 2)
        _ = try planes.withUnsafeMutableBytes { p in
            try reader.readVideo(
                luma: p.baseAddress!.assumingMemoryBound(to: UInt8.self), lumaStride: 320,
                chroma: p.baseAddress!.assumingMemoryBound(to: UInt8.self) + 320 * 180, chromaStride: 320)
        }
        #expect(planes == [UInt8](reference.stdout))
    }

    @Test func aFileRunsThroughTheEncoderIntoTheRing() throws {
        let tmp = TemporaryDirectory("ppc-file")
        let path = tmp.sub("session.mkv")
        try Self.makeFile(path, extra: ["-c:v", "mpeg4", "-c:a", "pcm_s16le"])
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "ts"))
        let session = CaptureSession(
            source: try MediaSource(location: path, timeoutSeconds: 5),
            encoder: LibavVideoEncoder(codec: .h264, bitrateBps: 1_000_000, preset: "ultrafast", threads: 1),
            ring: ring,
            timeline: nil, fragmentNs: 500_000_000)
        let stats = try session.run()
        #expect(stats.framesEncoded == 60)
        #expect(ring.fragments.map(\.frameCount) == [15, 15, 15, 15])
        let decode = try ToolRunner.runProgram(
            "ffmpeg", ["-v", "error", "-i", ring.path(of: ring.fragments[2].sequence), "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty)
    }

    @Test(arguments: ["not-media", "missing"])
    func badInputIsNamed(kind: String) throws {
        let tmp = TemporaryDirectory("ppc-file")
        let path = tmp.sub("\(kind).mp4")
        if kind == "not-media" { try Data("hello".utf8).write(to: URL(fileURLWithPath: path)) }
        let error = #expect(throws: MediaError.self) { try MediaSource(location: path, timeoutSeconds: 1) }
        #expect(error?.path == path)
    }

    @Test func aNetworkStreamOverUDPLoopback() throws {
        let port = freeLoopbackPort(SOCK_DGRAM)
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        sender.arguments = [
            "ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i",
            "sine=frequency=1000:sample_rate=48000", "-t", "4", "-c:v", "libx264", "-preset", "ultrafast", "-g", "15",
            "-pix_fmt", "yuv420p", "-c:a", "mp2", "-f", "mpegts", "udp://127.0.0.1:\(port)?pkt_size=1316",
        ]
        sender.standardOutput = FileHandle.nullDevice
        sender.standardError = FileHandle.nullDevice
        try sender.run()
        defer { sender.waitUntilExit() }
        // The stream is already flowing; opening joins it at the next keyframe, as a late viewer would.
        let source = try MediaSource(location: "udp://127.0.0.1:\(port)", timeoutSeconds: 2)
        #expect(source.format.width == 320 && source.format.height == 180 && source.format.framesPerSecond == 30)
        let (frames, samples) = try Self.drain(source)
        #expect(frames.count >= 30, "only \(frames.count) frames arrived")
        for (a, b) in zip(frames, frames.dropFirst()) { #expect(b.timeNs > a.timeNs) }
        #expect(samples.count >= 48_000 / 2)
    }
}
