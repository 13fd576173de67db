import Checksum
import Foundation
import TestSupport
import Testing

@testable import Synthetic

/// `ppc-tool run`: the main job, end to end, judged by ffprobe/ffmpeg and the synthetic session's truth.
@Suite("ppc-tool run: sound in, clips out", .serialized)
struct RunToolTests {
    static let impacts: [Double] = [1.6, 3.304]

    @Test func theShortSessionMintsAClipPerImpactThatDecodesWithTheImpactWhereTruthSays() throws {
        let tmp = TemporaryDirectory("ppc-run")
        let out = tmp.sub("out")
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/short-session.json"), "--out", out, "--device-id", "bay-3",
        ])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")

        let report = try sessionReport(out)
        #expect(report.framesEncoded.value == 600 && report.framesDropped.value == 0)
        #expect(report.candidates.value == 2 && report.shots.value == 2)
        #expect(report.framesEncoded.provenance == .measured)
        // The audio source is read ahead on its own queue (2 s of 10 ms blocks): how far detection fell behind is a
        // measured figure within it.
        #expect(report.audioBacklogMaxMs.provenance == .measured)
        #expect(
            report.audioBacklogMaxMs.value.map { (10...2000).contains($0) } == true, "\(report.audioBacklogMaxMs)")
        let clips = report.clips
        #expect(clips.count == 2)
        #expect(report.device == "bay-3")

        for (n, clip) in clips.enumerated() {
            let dir = clip.path
            #expect(dir == clipPath("\(out)/clips", shot: n + 1))
            #expect(dir.hasPrefix("\(out)/clips/short-"), "a clip id begins with its session's name: \(dir)")
            // The report gives the window as minted: it starts on a frame at or before t0 − clipPre (a keyframe) and ends
            // at or after t0 + clipPost — the timeline draws exactly that.
            let (clipT0, start, end) = (clip.t0Ns, clip.startNs, clip.endNs)
            #expect(start <= clipT0 - 1_500_000_000 && end >= clipT0 + 1_500_000_000, "\(start) \(clipT0) \(end)")
            #expect(end - start == Int64(clip.frames) * (1_000_000_000 / 120), "\(start) \(end)")
            let meta = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/meta.json")))
                    as? [String: Any])
            // Every file's XXH3 is the one meta.json states.
            let files = try #require(meta["files"] as? [String: [String: Any]])
            #expect(Set(files.keys) == ["clip.mp4", "audio.wav", "index.bin"])
            for (name, entry) in files {
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(name)")))
                #expect(entry["xxh3"] as? String == XXH3.hex(XXH3.hash(bytes)), "\(name)")
                #expect((entry["bytes"] as? NSNumber)?.intValue == bytes.count)
            }
            #expect((meta["tof_correction"] as? [String: Any])?["samples"] is NSNull)
            // The clip decodes without a word; frames as meta.json says.
            let decode = try ToolRunner.runProgram(
                "ffmpeg", ["-v", "error", "-i", "\(dir)/clip.mp4", "-f", "null", "-"])
            #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
            let frames = (meta["frames"] as? NSNumber)?.intValue ?? -1
            // Decoded frame counters are contiguous, and the ball is gone from the frame t0 says.
            let raw = try ToolRunner.runProgram(
                "ffmpeg", ["-v", "error", "-i", "\(dir)/clip.mp4", "-f", "rawvideo", "-pix_fmt", "gray", "-"])
            let size = 320 * 180
            #expect(raw.stdout.count == frames * size)
            var counters: [Int64?] = []
            var ball: [Bool] = []
            raw.stdout.withUnsafeBytes { all in
                for i in 0..<(all.count / size) {
                    let f = UnsafeRawBufferPointer(rebasing: all[(i * size)..<((i + 1) * size)])
                    counters.append(FrameCounter.read(from: f, width: 320, height: 180, stride: 320))
                    ball.append(f[(180 - 2 * 4 - 1) * 320 + 160] > 150)
                }
            }
            let first = try #require(counters.first ?? nil)
            #expect(counters == (0..<Int64(counters.count)).map { Optional(first + $0) })
            let impactNs = Int64(Self.impacts[n] * 1e9)
            let truthFrame = (impactNs * 120 + 999_999_999) / 1_000_000_000  // first frame at or after the impact
            // The ball leaves (present → absent) on the truth frame. (A window can also hold an earlier swing's impact,
            // so the transition is looked for, not the first frame without a ball.)
            let leaves = (1..<ball.count).filter { ball[$0 - 1] && !ball[$0] }
            let gone = try #require(
                leaves.first { first + Int64($0) == truthFrame },
                "ball leaves at clip frames \(leaves.map { first + Int64($0) }), truth \(truthFrame)")
            // t0 (from the audio) puts the impact in the same frame.
            let t0 = try #require(((meta["t0Ns"] as? [String: Any])?["value"] as? NSNumber)?.int64Value)
            let window = try #require(meta["window"] as? [String: Any])
            let zero = try #require((window["clipTimeZeroNs"] as? NSNumber)?.int64Value)
            let t0Frame = (t0 - zero + 8_333_333) * 120 / 1_000_000_000
            #expect(
                abs(t0Frame - Int64(gone)) <= 1,
                "t0 \(t0) is frame \(t0Frame) of the clip; the ball leaves at frame \(gone)")
            // audio.wav: the 2 s window at 48 kHz.
            let probe = try ToolRunner.runProgram(
                "ffprobe",
                ["-v", "error", "-show_entries", "stream=sample_rate,duration", "-of", "csv=p=0", "\(dir)/audio.wav"])
            #expect(String(decoding: probe.stdout, as: UTF8.self).hasPrefix("48000,2.000000"))
            // clip.mp4 carries the sound too (issue 32): an AAC track from the clip's time 0, whose strike — as ffmpeg
            // decodes it, independently — is within 1 ms of t0 (an eighth of a frame at 120 fps: on the impact frame);
            // meta.json says where the mint measured it.
            let streams = try ToolRunner.runProgram(
                "ffprobe",
                [
                    "-v", "error", "-show_entries", "stream=codec_type,codec_name,start_time", "-of", "csv=p=0",
                    "\(dir)/clip.mp4",
                ])
            let lines = String(decoding: streams.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(lines.contains("aac,audio,0.000000"), "\(lines)")
            let pcm = try ToolRunner.runProgram(
                "ffmpeg",
                ["-v", "error", "-i", "\(dir)/clip.mp4", "-map", "0:a", "-f", "f32le", "-ac", "1", "-ar", "48000", "-"])
            let sound: [Float] = pcm.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let loudest = sound.map(abs).max() ?? 0
            let onset = try #require(sound.firstIndex { abs($0) > 0.3 * loudest })
            let onsetNs = Int64(onset) * 1_000_000_000 / 48_000
            #expect(
                abs(onsetNs - (t0 - zero)) <= 1_000_000,
                "the strike is heard at \(onsetNs) ns of the clip, t0 is at \(t0 - zero) ns")
            let track = try #require(meta["soundTrack"] as? [String: Any])
            let offset = try #require(track["strikeOffsetNs"] as? [String: Any])
            #expect(offset["provenance"] as? String == "measured")
            #expect(abs((offset["value"] as? NSNumber)?.int64Value ?? .max) <= 1_000_000, "\(offset)")
        }
        let svg = try String(contentsOfFile: "\(out)/timeline.svg", encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n") && svg.contains("shot 2"))
        #expect(!FileManager.default.fileExists(atPath: "\(out)/.staging"))
        let names = try FileManager.default.contentsOfDirectory(atPath: "\(out)/clips").sorted()
        #expect(
            names.count == 2 && names.allSatisfy(isSessionClipID) && names[0].hasSuffix("-001")
                && names[1].hasSuffix("-002"), "\(names)")
        // Every clip of one run carries the same session id, and meta.json and the report say which.
        #expect(Set(names.map { $0.dropLast(4) }).count == 1)
        #expect(names[0].contains(report.sessionId))
    }

    /// A recorded IMU (CoreMotion's export: seconds, g) rides in each clip's timeline beside the video and audio, read no
    /// faster than the video it belongs with, each sample as the file gave it; a line that does not read ends the IMU
    /// only, named, and the run says so by its exit.
    @Test func aRecordedIMURidesInEachClipAsTheFileGaveIt() throws {
        let tmp = TemporaryDirectory("ppc-run-imu")
        var csv = "# exported from a phone\ntimeSeconds,ax,ay,az,gx,gy,gz\n"
        // 200 Hz for 5 s; gx marks each sample
        for i in 0..<1000 { csv += "\(Double(i) / 200),0,0,1,\(Double(i % 50) / 1000),0,0\n" }
        #expect(FileManager.default.createFile(atPath: tmp.sub("imu.csv"), contents: Data(csv.utf8)))
        let fixture = try String(contentsOfFile: ToolRunner.fixture("manifests/short-session.json"), encoding: .utf8)
        let imu = #"{ "plugin": "file.imu", "params": { "path": "\#(tmp.sub("imu.csv"))", "accelerationUnit": "g" } }"#
        let manifest = fixture.replacingOccurrences(
            of: #"{ "plugin": "synthetic.imu", "params": { "seconds": 5, "impacts": [1.6, 3.304] } }"#, with: imu)
        #expect(manifest.contains("file.imu"))
        #expect(FileManager.default.createFile(atPath: tmp.sub("m.json"), contents: Data(manifest.utf8)))
        let r = try ToolRunner.run(["run", tmp.sub("m.json"), "--out", tmp.sub("out")])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        #expect(try sessionReport(tmp.sub("out")).clips.count == 2)
        for shot in 1...2 {
            let inspect = try ToolRunner.run([
                "index", "inspect", "--json", clipPath(tmp.sub("out/clips"), shot: shot) + "/index.bin",
            ])
            let entries =
                (try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])?["entries"]
                as? [[String: Any]] ?? []
            let samples = entries.filter { $0["kind"] as? String == "imu-sample" }
            // The clip's window (pre + post = 3 s) at 200 Hz, each value the file's gx in mrad/s at its own time.
            #expect(samples.count >= 600, "shot \(shot): \(samples.count) IMU samples")
            for e in samples {
                let t = (e["timeNs"] as? NSNumber)?.int64Value ?? -1
                let v = (e["value"] as? NSNumber)?.intValue ?? -1
                #expect(t % 5_000_000 == 0 && Int64(v) == (t / 5_000_000) % 50, "sample at \(t) ns: \(v)")
            }
        }

        let report = try sessionReport(tmp.sub("out"))
        #expect(report.imuSamples.value == 1000 && report.imuSamplesBeforeVideo.value == 0, "\(report.imuSamples)")
        #expect(!r.stdout.contains("⚠ imu"))

        // A recording on another clock than the video's: its samples reach no clip, and the run says so either way.
        for (offset, said) in [
            ("-100000000000", "all 1000 samples are timed before the video's first frame"),
            ("100000000000", "no sample within the capture"),
        ] {
            let other = manifest.replacingOccurrences(
                of: #""accelerationUnit": "g""#, with: #""accelerationUnit": "g", "offsetNs": \#(offset)"#)
            #expect(FileManager.default.createFile(atPath: tmp.sub("other.json"), contents: Data(other.utf8)))
            let o = try ToolRunner.run(["run", tmp.sub("other.json"), "--out", tmp.sub("other\(offset)")])
            #expect(o.status == 0 && o.stdout.contains("⚠ imu:") && o.stdout.contains(said), "\(offset): \(o.stdout)")
            let seen = try sessionReport(tmp.sub("other\(offset)"))
            #expect(
                offset.hasPrefix("-")
                    ? seen.imuSamplesBeforeVideo.value == 1000 && seen.imuSamples.value == 1000
                    : seen.imuSamples.value == 0, "\(offset): \(seen.imuSamples) \(seen.imuSamplesBeforeVideo)")
        }

        let broken = csv.replacingOccurrences(of: "\n2.5,0,0,1,0.0,0,0\n", with: "\n2.5,0,0,1,zz,0,0\n")
        #expect(broken != csv)
        #expect(FileManager.default.createFile(atPath: tmp.sub("imu.csv"), contents: Data(broken.utf8)))
        let b = try ToolRunner.run(["run", tmp.sub("m.json"), "--out", tmp.sub("out2")])
        #expect(
            b.status == 1 && b.stdout.contains("imu: \(tmp.sub("imu.csv")):503: gx 'zz': not a number"),
            "\(b.stderr)\n\(b.stdout)")
        #expect(try sessionReport(tmp.sub("out2")).clips.count == 2)
    }

    @Test func aBadManifestIsRefusedBeforeAnythingRuns() throws {
        let tmp = TemporaryDirectory("ppc-run")
        let r = try ToolRunner.run(["run", ToolRunner.fixture("manifests/wrong-type.json"), "--out", tmp.sub("out")])
        #expect(r.status == 65)
        #expect(!FileManager.default.fileExists(atPath: tmp.sub("out")))
    }

    /// A microphone pulled out for a second and put back (synthetic.audio's awayAt, the test double for a card's
    /// outage): the run says so, skips the samples it missed on the sample clock, and goes on hearing — the swing in the
    /// outage is not invented, the one after it is minted; an interruption is not an error.
    @Test func aMicrophonePulledOutAndPutBackIsAnInterruptionAndTheNextSwingIsStillMinted() throws {
        let tmp = TemporaryDirectory("ppc-run-away")
        let manifest = try Self.flatManifest(
            tmp.path, session: "away", fps: 120, seconds: 8, impacts: "[1.6, 3.3, 5.0]",
            audio: #", "awayAt": [3.0], "awaySeconds": 1.0"#)
        let out = tmp.sub("out")
        let r = try ToolRunner.run(["run", manifest, "--out", out, "--device-id", "bay-3"])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        let report = try sessionReport(out)
        let list = report.interruptionList
        #expect(list.count == 1 && list[0].source == "audio" && list[0].verified, "\(list)")
        #expect(list[0].reason.contains("pulled out"), "\(list)")
        #expect(list[0].startNs == 3_000_000_000 && list[0].endNs == 4_000_000_000)
        let gaps = try #require(report.audioGaps.value)
        #expect(gaps.count == 1 && gaps[0].samples == 48_000, "\(gaps)")
        #expect(gaps[0].reason.contains("its device was away"), "\(gaps)")
        let t0s = report.clips.map(\.t0Ns)
        #expect(
            t0s.count == 2 && abs(t0s[0] - 1_600_000_000) < 1_000_000 && abs(t0s[1] - 5_000_000_000) < 1_000_000,
            "\(t0s)")
    }

    /// A swing heard sooner after arming than the pre-roll (found 2026-12-02: a shot at 1.5 s with the default 1.5 s
    /// pre-roll was lost, its window starting 21 µs before the first frame): minted from the first frame, and said.
    @Test func aShotSoonerAfterArmingThanItsPreRollIsMintedFromTheFirstFrame() throws {
        let tmp = TemporaryDirectory("ppc-run-early")
        // The picture paced as a camera's: the shot is heard (the sound is read as fast as it can be) long before the
        // picture reaches its post-roll's end, as at a bay, so the cut there is always asked for in time.
        let manifest = try Self.flatManifest(
            tmp.path, session: "early", fps: 60, seconds: 4, impacts: "[0.6]", video: #", "pace": "realtime""#)
        let out = tmp.sub("out")
        let r = try ToolRunner.run(["run", manifest, "--out", out, "--device-id", "bay-3"])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        let report = try sessionReport(out)
        #expect(
            report.policy.contains { $0.contains("pre-roll cut to 0.600 s by the start of capture") },
            "\(report.policy)")
        let clips = report.clips
        #expect(clips.count == 1)
        #expect(clips.first?.startNs == 0)
        let path = try #require(clips.first?.path)
        // The clip ends where its post-roll does: the frame before the first at or after t0 + 3 s, where the session
        // cut a fragment (capture.sealPostRollEarly).
        let t0 = try #require(clips.first?.t0Ns)
        let frames = ((t0 + 3_000_000_000) * 60 + 999_999_999) / 1_000_000_000
        let probe = try ToolRunner.runProgram(
            "/usr/bin/ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries", "stream=nb_read_frames",
                "-of", "csv=p=0", "\(path)/clip.mp4",
            ])
        #expect(
            probe.status == 0
                && String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                    == "\(frames)",
            "\(probe)")  // every frame: 0.6 s before t0 and 3 s after it
        #expect(try sessionReport(out).fragmentsCutAtPostRoll.value == 1)
    }

    /// A synthetic session to a file sink: flat 320×180 video and its audio (`audio`: more of the audio's parameters).
    static func flatManifest(
        _ dir: String, session: String, fps: Int, seconds: Double, impacts: String, audio: String = "",
        video: String = ""
    ) throws -> String {
        let manifest = "\(dir)/\(session).json"
        try """
        {
          "session": "\(session)",
          "sources": [
            { "plugin": "synthetic.video", "params": { "width": 320, "height": 180, "fps": \(fps), "seconds": \(seconds), "texture": "flat", "impacts": \(impacts)\(video) } },
            { "plugin": "synthetic.audio", "params": { "seconds": \(seconds), "impacts": \(impacts)\(audio) } }
          ],
          "encoder": { "plugin": "x264", "params": { "threads": 1 } },
          "detector": { "plugin": "impact" },
          "sinks": [ { "plugin": "file" } ]
        }
        """.write(toFile: manifest, atomically: false, encoding: .utf8)
        return manifest
    }
}
