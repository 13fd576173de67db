import Foundation
import TestSupport
import Testing

@testable import Media

/// An export made by ClipComposer, judged by ffprobe and ffmpeg (the independent judge of media in tests).
@Suite("Media: an export of angles side by side or overlaid, slowed, with pictures and sound")
struct ClipComposerTests {
    /// A clip made by ffmpeg: `video` a lavfi source (testsrc2, color=…), with a 440 Hz tone when `sound`.
    static func clip(_ path: String, video: String, sound: Bool) throws {
        var args = ["-v", "error", "-y", "-f", "lavfi", "-i", video]
        if sound { args += ["-f", "lavfi", "-i", "sine=f=440:d=3:sample_rate=48000"] }
        args += ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "30"]
        if sound { args += ["-c:a", "aac", "-shortest"] }
        let r = try ToolRunner.runProgram("ffmpeg", args + [path])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
    }

    struct Probe: Decodable {
        struct Stream: Decodable {
            let codecType: String
            let width: Int?
            let height: Int?
            enum CodingKeys: String, CodingKey {
                case codecType = "codec_type"
                case width, height
            }
        }
        struct Format: Decodable { let duration: String }
        let streams: [Stream]
        let format: Format
    }

    static func probe(_ path: String) throws -> Probe {
        let r = try ToolRunner.runProgram(
            "ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", path])
        try #require(r.status == 0, "ffprobe \(path): \(r.stderr)")
        return try JSONDecoder().decode(Probe.self, from: r.stdout)
    }

    /// One frame of `path` at `seconds`, as RGB24 bytes `width` × `height`.
    static func frame(_ path: String, at seconds: Double, width: Int, height: Int) throws -> [UInt8] {
        let r = try ToolRunner.runProgram(
            "ffmpeg",
            [
                "-v", "error", "-ss", String(seconds), "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt",
                "rgb24", "-",
            ])
        try #require(r.status == 0, "ffmpeg frame of \(path): \(r.stderr)")
        try #require(r.stdout.count == width * height * 3)
        return [UInt8](r.stdout)
    }

    @Test func twoAnglesSideBySideSlowedWithSoundAndALineBurnedIn() throws {
        let tmp = TemporaryDirectory()
        let a = tmp.sub("a.mp4")
        let b = tmp.sub("b.mp4")
        try Self.clip(a, video: "testsrc2=s=640x360:r=120:d=3", sound: true)
        try Self.clip(b, video: "testsrc2=s=320x240:r=60:d=3", sound: false)
        // A red horizontal line across the middle of the first angle, for the whole clip (BGRA, premultiplied).
        let stride = 640 * 4
        var picture = [UInt8](repeating: 0, count: stride * 360)
        for y in 178..<182 {
            for x in 0..<640 {
                picture.replaceSubrange((y * stride + x * 4)..<(y * stride + x * 4 + 4), with: [0, 0, 255, 255])
            }
        }
        let spec = ClipComposer.Spec(
            inputs: [
                .init(
                    path: a, start: 0.5, end: 2.5,
                    pictures: [.init(from: 0, to: 3, bgra: picture, stride: stride, width: 640, height: 360)]),
                .init(path: b, start: 0.5, end: 2.5),
            ], height: 360, framesPerSecond: 30, slow: .init(from: 0.5, to: 1.0, factor: 0.25), soundFrom: 0)
        #expect(abs(spec.durationSeconds - 3.5) < 1e-9)  // 2 s cut, its 0.5 s slowed four times: + 1.5 s
        let out = tmp.sub("export.mp4")
        var seen: [Double] = []
        let report = try ClipComposer.compose(spec, to: out, progress: { seen.append($0) })
        #expect(report.width == 640 + 480)
        #expect(report.height == 360)
        #expect(report.hasSound)
        #expect(seen.last == 1)
        let p = try Self.probe(out)
        let video = try #require(p.streams.first { $0.codecType == "video" })
        #expect(video.width == 1120 && video.height == 360)
        #expect(p.streams.contains { $0.codecType == "audio" })
        let duration = try #require(Double(p.format.duration))
        let streams = String(
            decoding: try ToolRunner.runProgram(
                "ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,duration,nb_frames", "-of", "csv", out]
            ).stdout, as: UTF8.self)
        #expect(abs(duration - 3.5) < 0.15, "duration \(duration) s; \(report); \(streams)")
        // The line's pixels are red in a frame (the left angle's middle row), not in the right angle.
        let rgb = try Self.frame(out, at: 1.0, width: 1120, height: 360)
        let left = (180 * 1120 + 100) * 3
        #expect(rgb[left] > 200 && rgb[left + 1] < 60 && rgb[left + 2] < 60, "left: \(rgb[left..<(left + 3)])")
        #expect(!FileManager.default.fileExists(atPath: out + ".partial"))
    }

    @Test func anOverlayIsTheMeanOfTwoSwingsAtHalfOpacity() throws {
        let tmp = TemporaryDirectory()
        let a = tmp.sub("red.mp4")
        let b = tmp.sub("blue.mp4")
        try Self.clip(a, video: "color=c=red:s=320x240:r=60:d=2", sound: false)
        try Self.clip(b, video: "color=c=blue:s=640x480:r=120:d=2", sound: false)
        let out = tmp.sub("overlay.mp4")
        let report = try ClipComposer.compose(
            .init(
                inputs: [.init(path: a, start: 0, end: 1.5), .init(path: b, start: 0, end: 1.5)],
                layout: .overlay(opacity: 0.5), height: 240, soundFrom: nil), to: out)
        #expect(report.width == 320 && !report.hasSound)
        let rgb = try Self.frame(out, at: 0.5, width: 320, height: 240)
        let mid = (120 * 320 + 160) * 3
        // Red over blue at ½: about (128, 0, 128) — each within a codec's rounding.
        #expect(
            abs(Int(rgb[mid]) - 128) < 24 && rgb[mid + 1] < 30 && abs(Int(rgb[mid + 2]) - 128) < 24,
            "\(rgb[mid..<(mid + 3)])")
    }

    @Test func aSpecThatCannotBeMadeIsRefusedNamingTheField() throws {
        let tmp = TemporaryDirectory()
        let bad = ClipComposer.Spec(inputs: [.init(path: tmp.sub("x.mp4"), start: 1, end: 0.5)])
        #expect(ClipComposer.problem(bad)?.contains("inputs[0]") == true)
        let slow = ClipComposer.Spec(
            inputs: [.init(path: "x", start: 0, end: 1)], slow: .init(from: 0, to: 1, factor: 0.01))
        #expect(ClipComposer.problem(slow)?.contains("slow factor") == true)
        let overlay = ClipComposer.Spec(inputs: [.init(path: "x", start: 0, end: 1)], layout: .overlay(opacity: 0.5))
        #expect(ClipComposer.problem(overlay)?.contains("two inputs") == true)
        // A file that is not media is named.
        let junk = tmp.sub("junk.mp4")
        try Data("not a clip".utf8).write(to: URL(fileURLWithPath: junk))
        let error = #expect(throws: MediaError.self) {
            try ClipComposer.compose(.init(inputs: [.init(path: junk, start: 0, end: 1)]), to: tmp.sub("o.mp4"))
        }
        #expect(error?.path == junk)
    }

    @Test func aPictureOfAnotherSizeIsRefusedAndAStoppedExportLeavesNothing() throws {
        let tmp = TemporaryDirectory()
        let a = tmp.sub("a.mp4")
        try Self.clip(a, video: "testsrc2=s=320x240:r=30:d=2", sound: false)
        let wrong = ClipComposer.Spec(
            inputs: [
                .init(
                    path: a, start: 0, end: 1,
                    pictures: [
                        .init(
                            from: 0, to: 1, bgra: [UInt8](repeating: 0, count: 64 * 64 * 4), stride: 256, width: 64,
                            height: 64)
                    ])
            ], height: 240, soundFrom: nil)
        let error = #expect(throws: MediaError.self) { try ClipComposer.compose(wrong, to: tmp.sub("w.mp4")) }
        #expect(error?.message.contains("64x64") == true, "\(String(describing: error))")
        let out = tmp.sub("stopped.mp4")
        var frames = 0
        let stopped = #expect(throws: MediaError.self) {
            try ClipComposer.compose(
                .init(inputs: [.init(path: a, start: 0, end: 1.5)], height: 240, soundFrom: nil), to: out,
                stop: { frames >= 5 }, progress: { _ in frames += 1 })
        }
        #expect(stopped?.message.contains("stopped") == true)
        #expect(
            !FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: out + ".partial"))
        // Pictures past the budget are refused before anything is made.
        let big = ClipComposer.Spec(
            inputs: [
                .init(
                    path: a, start: 0, end: 1,
                    pictures: [
                        .init(
                            from: 0, to: 1, bgra: [UInt8](repeating: 0, count: ClipComposer.maxPictureBytes + 4),
                            stride: 4, width: 1, height: 1)
                    ])
            ])
        #expect(ClipComposer.problem(big)?.contains("MiB") == true)
    }
}
