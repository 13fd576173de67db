import CLI
import Capture
import Config
import Foundation
import FragmentRing
import Glibc
import LibavEncoder
import Pipeline
import Synthetic
import Syscall

/// `ppc-tool bench encode`: our source → encoder → ring path against the ffmpeg CLI encoding the same raw frames
/// with identical x264 settings into 0.5 s segments, in the same run.
enum BenchEncode {
    static let command = Command(
        "encode",
        abstract:
            "ppc's encode path vs the ffmpeg CLI on the same frames and x264 settings (target ratio ≥ 1.0); Motion JPEG passthrough beside it.",
        options: [
            Option.json, .value("size", "WxH", help: "Frame size (default 1280x720)."),
            .value("fps", "n", help: "Frame rate (default 120)."), .value("frames", "n", help: "Frames (default 360)."),
            .value("dir", "dir", help: "Where fragments and segments are written (default /var/tmp)."),
            .value("frames-dir", "dir", help: "Where the raw frames are staged (default /dev/shm)."),
            .value("mjpeg-size", "WxH", help: "Frame size of the passthrough run beside x264 (default 1920x1080)."),
        ], run: run)

    /// Reads raw NV12 frames from a file straight into the encoder's planes.
    final class RawNV12File: VideoSource {
        let format: VideoFormat
        let fd: FileDescriptor
        let frames: Int64
        var next: Int64 = 0
        init(path: String, format: VideoFormat) throws {
            self.format = format
            fd = try FileDescriptor.open(path, O_RDONLY)
            frames = try fd.size() / Int64(format.frameBytes)
        }
        func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo? {
            guard next < frames else { return nil }
            let w = format.width
            let h = format.height
            var offset = next * Int64(format.frameBytes)
            // One read per plane when rows are packed (the usual case), else one per row.
            if frame.lumaStride == w && frame.chromaStride == w {
                _ = try fd.read(into: UnsafeMutableRawBufferPointer(start: frame.luma, count: w * h), at: offset)
                _ = try fd.read(
                    into: UnsafeMutableRawBufferPointer(start: frame.chroma, count: w * h / 2),
                    at: offset + Int64(w * h))
            } else {
                for row in 0..<h {
                    _ = try fd.read(
                        into: UnsafeMutableRawBufferPointer(start: frame.luma + row * frame.lumaStride, count: w),
                        at: offset)
                    offset += Int64(w)
                }
                for row in 0..<(h / 2) {
                    _ = try fd.read(
                        into: UnsafeMutableRawBufferPointer(start: frame.chroma + row * frame.chromaStride, count: w),
                        at: offset)
                    offset += Int64(w)
                }
            }
            let info = FrameInfo(index: next, timeNs: next * 1_000_000_000 / Int64(format.framesPerSecond))
            next += 1
            return info
        }
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let frame = try inv.frameSize("size", default: "1280x720", even: true, minimumWidth: 160)!
        let size = [frame.width, frame.height]
        let fps = try inv.parsed("fps", in: 1...10_000) ?? 120
        let count = try inv.parsed("frames", in: 1...1_000_000) ?? 360
        let config = Configuration.defaults
        let bitrate = Int(config[.videoBitrateBps])
        let fragmentNs = config[.fragmentNs]
        let gop = fps * Int(fragmentNs) / 1_000_000_000
        let format = VideoFormat(width: size[0], height: size[1], framesPerSecond: fps)
        let base = "\(inv.value("dir") ?? "/var/tmp")/ppc-bench-encode-\(getpid())"
        let stage =
            "\(inv.value("frames-dir") ?? (FileSystem.exists("/dev/shm") ? "/dev/shm" : "/tmp"))/ppc-bench-frames-\(getpid()).nv12"
        try FileSystem.makeDirectory(base)
        defer {
            try? FileManager.default.removeItem(atPath: base)
            try? FileSystem.unlink(stage)
        }
        // Stage the frames once: both sides read exactly these bytes.
        do {
            let synth = SyntheticVideoSource(
                format: format, script: SwingScript(impactSeconds: [1.5], startNs: 0),
                seconds: Double(count) / Double(fps),
                texture: .noise)
            var buffer = [UInt8](repeating: 0, count: format.frameBytes)
            let out = try FileDescriptor.open(stage, O_WRONLY | O_CREAT | O_TRUNC)
            while try buffer.withUnsafeMutableBytes({
                try synth.readFrame(
                    into: VideoFrameBuffer(contiguous: $0.baseAddress!, width: format.width, height: format.height))
            }) != nil {
                try buffer.withUnsafeBytes { try out.writeAll($0) }
            }
        }

        // ppc: raw file → x264 → MPEG-TS fragments → FragmentRing (no sync, like the CLI's segment files).
        let ring = try FragmentRing(
            directory: "\(base)/ring", configuration: .init(capacity: 20, durability: .none, fileExtension: "ts"))
        let encoder = LibavVideoEncoder(codec: .h264, bitrateBps: bitrate, preset: "ultrafast", threads: 0)
        let session = CaptureSession(
            source: try RawNV12File(path: stage, format: format), encoder: encoder, ring: ring, timeline: nil,
            fragmentNs: fragmentNs)
        let stats = try session.run()
        let oursFps = Double(stats.framesEncoded) * 1e9 / Double(stats.wallNs)

        // The ffmpeg CLI: the same frames, the same x264 settings, 0.5 s segments.
        try FileSystem.makeDirectory("\(base)/cli")
        let args = [
            "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "nv12", "-s", "\(format.width)x\(format.height)",
            "-r", "\(fps)", "-i", stage, "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
            "-x264-params", "keyint=\(gop * 2):min-keyint=\(gop):scenecut=0:bframes=0:repeat-headers=1", "-forced-idr",
            "1",
            "-force_key_frames", "expr:gte(t,n_forced*\(Double(fragmentNs) / 1e9))", "-b:v", "\(bitrate)", "-maxrate",
            "\(bitrate)",
            "-bufsize", "\(bitrate / 2)", "-f", "segment", "-segment_time", "\(Double(fragmentNs) / 1e9)",
            "-segment_format", "mpegts",
            "\(base)/cli/seg%05d.ts",
        ]
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["ffmpeg"] + args
        p.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        let t0 = monotonicNowNs()
        do { try p.run() } catch {
            throw CommandFailure.failure("cannot run ffmpeg (the Debian package ffmpeg): \(error)")
        }
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let cliNs = monotonicNowNs() - t0
        guard p.terminationStatus == 0 else { throw CommandFailure.failure("ffmpeg failed: \(errText)") }
        let cliFps = Double(count) * 1e9 / Double(cliNs)
        let segments = (try? FileSystem.list("\(base)/cli").count) ?? 0

        // Passthrough beside it: Motion JPEG as a camera sends it (synthetic.mjpeg, sensor-like noise texture,
        // prepared before the clock starts) through the passthrough encoder into a ring that fsyncs as a session's does.
        let mj = try passthrough(inv, config: config, base: base)

        var result = BenchCommand.provenance()
        result["area"] = "encode"
        result["passthrough"] = mj.json
        result["workload"] = [
            "format": "\(format)", "frames": count, "bitrateBps": bitrate, "fragmentSeconds": Double(fragmentNs) / 1e9,
            "x264":
                "ultrafast, zerolatency, keyint \(gop * 2), min-keyint \(gop), scenecut 0, bframes 0, repeat-headers, forced IDR every fragment",
            "frames source": "synthetic.video texture=noise staged as raw NV12 in \(stage)",
        ]
        result["ppcFps"] = oursFps
        result["ppcFragments"] = stats.fragmentsPublished
        result["ffmpegCliFps"] = cliFps
        result["ffmpegCliSegments"] = segments
        result["ratio"] = oursFps / cliFps
        result["target"] = ["ratio": 1.0]
        result["baseline"] =
            "ffmpeg \(ffmpegVersion()) CLI, same raw frames, same x264 settings, -f segment 0.5 s MPEG-TS, same run (process start included)"
        try BenchCommand.emit(
            result, json: inv.flag("json"),
            lines: [
                "ppc:    \(String(format: "%.1f", oursFps)) fps (\(stats.fragmentsPublished) fragments into the ring)",
                "ffmpeg: \(String(format: "%.1f", cliFps)) fps (\(segments) segments), same frames and x264 settings",
                "ratio:  \(String(format: "%.3f", oursFps / cliFps))  (target ≥ 1.0)",
            ] + mj.lines)
        return .success
    }

    /// The passthrough path at `--mjpeg-size` (default 1920x1080) and `--fps`: frames a second and CPU when run as
    /// fast as it goes, and what a session at the nominal rate writes (MB/s) against what the path sustained.
    static func passthrough(_ inv: Invocation, config: Configuration, base: String) throws -> (
        json: [String: Any], lines: [String]
    ) {
        let frame = try inv.frameSize("mjpeg-size", default: "1920x1080", even: true, minimumWidth: 160)!
        let size = [frame.width, frame.height]
        let fps = try inv.parsed("fps", in: 1...10_000) ?? 120
        let count = try inv.parsed("frames", in: 1...1_000_000) ?? 360
        let source = try SyntheticMJPEGSource(
            width: size[0], height: size[1], framesPerSecond: fps,
            script: SwingScript(impactSeconds: [1.5], startNs: 0),
            startNs: 0, seconds: Double(count) / Double(fps), pace: .asap, texture: .noise, quality: 5,
            distinctSeconds: 0)
        let ring = try FragmentRing(
            directory: "\(base)/mjpeg-ring",
            configuration: .init(capacity: 20, durability: .fsync, fileExtension: "nut"))
        var bytes: Int64 = 0
        let session = CaptureSession(
            source: source, encoder: PassthroughEncoder(), ring: ring, timeline: nil, fragmentNs: config[.fragmentNs])
        session.onPublish = { bytes += $0.byteLength }
        let cpu0 = processCPUNs()
        let stats = try session.run()
        let cpu = processCPUNs() - cpu0
        let seconds = Double(stats.wallNs) / 1e9
        let achieved = Double(stats.framesEncoded) / seconds
        let perFrame = Double(bytes) / Double(max(1, stats.framesEncoded))
        let needMBs = perFrame * Double(fps) / 1e6
        let sustainedMBs = Double(bytes) / seconds / 1e6
        let clipSeconds = Double(config[.clipPreNs] + config[.clipPostNs]) / 1e9
        let json: [String: Any] = [
            "format": "\(source.format)", "frames": stats.framesEncoded, "framesPerSecond": achieved,
            "cpuPercentOfOneCore": Double(cpu) * 100 / Double(stats.wallNs),
            "cpuMsPerFrame": Double(cpu) / Double(max(1, stats.framesEncoded)) / 1e6,
            "bytesPerFrame": perFrame, "fragments": stats.fragmentsPublished,
            "diskMBpsAtNominalRate": needMBs, "ringMBpsSustained": sustainedMBs,
            "headroom": sustainedMBs / max(needMBs, 1e-9),
            "clipMBAtDefaultWindow": perFrame * Double(fps) * clipSeconds / 1e6,
            "frames source":
                "synthetic.mjpeg texture=noise quality=5 (sensor-like JPEG sizes), prepared before the clock started (\(String(format: "%.1f", Double(source.preparationNs) / 1e9)) s)",
            "ring": "fsync durability, as a session's",
        ]
        let lines = [
            "passthrough \(source.format): \(String(format: "%.0f", achieved)) fps as fast as it goes, \(String(format: "%.3f", Double(cpu) / Double(max(1, stats.framesEncoded)) / 1e6)) ms CPU a frame (\(String(format: "%.0f", Double(cpu) * 100 / Double(stats.wallNs))) % of one core)",
            "  \(String(format: "%.0f", perFrame / 1000)) kB a frame: \(String(format: "%.1f", needMBs)) MB/s to disk at \(fps) fps; the path sustained \(String(format: "%.1f", sustainedMBs)) MB/s into the fsynced ring (\(String(format: "%.1f", sustainedMBs / max(needMBs, 1e-9)))× headroom); a \(ParameterValue.format(clipSeconds)) s clip ≈ \(String(format: "%.0f", perFrame * Double(fps) * clipSeconds / 1e6)) MB",
        ]
        return (json, lines)
    }

    static func ffmpegVersion() -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["ffmpeg", "-version"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return "unknown" }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return text.split(separator: " ").dropFirst(2).first.map(String.init) ?? "unknown"
    }
}
