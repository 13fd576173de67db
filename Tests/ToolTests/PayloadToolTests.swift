import Foundation
import Syscall
import TestSupport
import Testing

@testable import Synthetic

/// `ppc-tool payload`: a clip cut from a session's ring after it ended, around any instant the ring still holds —
/// judged by ffmpeg and the synthetic frames' own counters.
@Suite("ppc-tool payload: a clip from a ring at rest, around any instant it holds", .serialized)
struct PayloadToolTests {
    /// A finished short session (5 s at 120 fps, 0.5 s fragments on the grid alone: no cut at its shots' post-roll
    /// ends, so the windows below fall where the grid says) and its ring.
    static let session: (ring: String, keep: TemporaryDirectory) = {
        let tmp = TemporaryDirectory("ppc-payload")
        let r = try? ToolRunner.run([
            "run", ToolRunner.fixture("manifests/short-session.json"), "--out", tmp.sub("out"),
            "--set", "capture.sealPostRollEarly=false",
        ])
        precondition(r?.status == 0, "ppc-tool run failed: \(r?.stderr ?? "")")
        return (tmp.sub("out/ring"), tmp)
    }()

    /// The frame counters ffmpeg decodes from a clip, in order.
    func counters(_ clip: String) throws -> [Int64?] {
        let raw = try ToolRunner.runProgram(
            "ffmpeg", ["-v", "error", "-i", clip, "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        #expect(raw.status == 0 && raw.stderr.isEmpty, "\(raw.stderr)")
        let size = 320 * 180
        return raw.stdout.withUnsafeBytes { all in
            (0..<(all.count / size)).map { i in
                FrameCounter.read(
                    from: UnsafeRawBufferPointer(rebasing: all[(i * size)..<((i + 1) * size)]), width: 320, height: 180,
                    stride: 320)
            }
        }
    }

    @Test func aClipAroundAnyInstantDecodesWithExactlyTheFramesOfItsWindow() throws {
        let tmp = TemporaryDirectory("ppc-payload-mint")
        // 2.7 s is no impact: a swing the detector did not hear. 0.5 s each side; the window starts on the keyframe of
        // the fragment holding 2.2 s (2.0 s) and ends with the one holding 3.2 s (3.5 s).
        let r = try ToolRunner.run([
            "payload", "mint", Self.session.ring, "--t0-ns", "2700000000", "--pre", "0.5", "--post", "0.5", "--out",
            tmp.sub("a.mp4"), "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect((o["firstFrameNs"] as? NSNumber)?.int64Value == 2_000_000_000 && o["frames"] as? Int == 180, "\(o)")
        #expect((o["gaps"] as? [Any])?.isEmpty == true)
        let c = try counters(tmp.sub("a.mp4"))
        #expect(c == (240..<420).map { Optional(Int64($0)) }, "\(c.prefix(3))…\(c.suffix(3))")

        // The last two seconds, as a replay buffer keeps them: the ring ends at 4.999999999 s, so from the keyframe of the
        // fragment holding 2.999999999 s (2.5 s).
        let last = try ToolRunner.run([
            "payload", "mint", Self.session.ring, "--last", "2", "--out", tmp.sub("last.mp4"), "--json",
        ])
        let minted = try JSONSerialization.jsonObject(with: Data(last.stdout.utf8)) as? [String: Any]
        #expect(
            last.status == 0 && minted?["clip"] as? String == tmp.sub("last.mp4") && minted?["frames"] as? Int == 300,
            "\(last.stdout)\(last.stderr)")
        #expect(try counters(tmp.sub("last.mp4")) == (300..<600).map { Optional(Int64($0)) })

        // A window past what the ring holds is cut there, and said; t0 stays where it is in the clip.
        let edge = try ToolRunner.run(["payload", "window", Self.session.ring, "--t0-ns", "4800000000", "--json"])
        let w = try JSONSerialization.jsonObject(with: Data(edge.stdout.utf8)) as? [String: Any]
        let into = ((w?["t0Ns"] as? Int64) ?? 0) - ((w?["firstFrameNs"] as? Int64) ?? 0)
        #expect(
            edge.status == 0 && edge.stderr.contains("the window is cut there") && into == 1_800_000_000,
            "t0 is 1.8 s into the clip: \(edge.stdout)\(edge.stderr)")
    }

    @Test func whatTheRingCannotGiveIsNamedAndNothingIsWritten() throws {
        let tmp = TemporaryDirectory("ppc-payload-refuse")
        let cases: [([String], Int32, String)] = [
            (["--t0-ns", "9000000000"], 65, "t0 9000000000 ns is not in the ring, which holds 0…4999999999 ns"),
            (["--t0-ns", "1", "--last", "2"], 64, "give one of --t0-ns or --last"),
            (["--last", "nan"], 64, "--last"),
            (["--t0-ns", "1000000000", "--pre", "-1"], 64, "--pre"),
        ]
        for (args, status, said) in cases {
            let r = try ToolRunner.run(["payload", "mint", Self.session.ring, "--out", tmp.sub("x.mp4")] + args)
            #expect(r.status == status && r.stderr.contains(said), "\(args): \(r.status) \(r.stderr)")
        }
        let notRing = try ToolRunner.run(["payload", "window", tmp.path, "--last", "1"])
        #expect(notRing.status == 65 && notRing.stderr.contains("not a fragment ring"), "\(notRing.stderr)")
        // An existing file is never written over.
        #expect(FileManager.default.createFile(atPath: tmp.sub("taken.mp4"), contents: Data("mine".utf8)))
        let taken = try ToolRunner.run([
            "payload", "mint", Self.session.ring, "--last", "1", "--out", tmp.sub("taken.mp4"),
        ])
        #expect(taken.status == 65 && (try? String(contentsOfFile: tmp.sub("taken.mp4"), encoding: .utf8)) == "mine")

        // A fragment changed on disk (a session recycling it, or damage) is refused by its record; nothing is left.
        let ring = tmp.sub("ring")
        #expect(try ToolRunner.runProgram("cp", ["-a", Self.session.ring, ring]).status == 0)
        let inspect = try ToolRunner.run(["ring", "inspect", "--json", ring])
        let fragments =
            (try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])?["fragments"]
            as? [[String: Any]] ?? []
        let path = try #require(fragments.last?["path"] as? String)
        var bytes = try FileSystem.readSmallFile(path, limit: 16 << 20)
        bytes[bytes.count / 2] ^= 0xFF
        try FileSystem.removeIfPresent(path)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let damaged = try ToolRunner.run(["payload", "mint", ring, "--last", "0.4", "--out", tmp.sub("d.mp4")])
        #expect(damaged.status == 1 && damaged.stderr.contains("do not match its record"), "\(damaged.stderr)")
        #expect(!FileSystem.exists(tmp.sub("d.mp4")) && !FileSystem.exists(tmp.sub("d.mp4.partial.mp4")))
    }
}

/// Issue 35, point 8: a swing cut by hand from the ring is a labelled miss — its sound from the session's audio at rest,
/// its impact at t0's sample — and `detect eval` scores the detector on it.
extension PayloadToolTests {
    @Test func aSwingCutByHandIsALabelledMissThatDetectEvalScores() throws {
        let tmp = TemporaryDirectory("ppc-payload-miss")
        let corpus = tmp.sub("corpus")
        // 3.304 s is the short session's second impact (its synthetic truth, on the capture clock).
        let r = try ToolRunner.run([
            "payload", "mint", Self.session.ring, "--t0-ns", "3304000000", "--pre", "1.5", "--post", "1",
            "--out", tmp.sub("hand.mp4"), "--miss", corpus, "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["miss"] as? String == corpus + "/miss-hand", "\(o)")
        let truth = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: corpus + "/miss-hand.truth.json")))
                as? [String: Any])
        #expect((truth["impacts"] as? [Int]) == [72_000], "\(truth)")  // 1.5 s into the window at 48 kHz
        let eval = try ToolRunner.run(["detect", "eval", corpus, "--json"])
        #expect(eval.status == 0, "\(eval.stderr)")
        let scored = try #require(try JSONSerialization.jsonObject(with: Data(eval.stdout.utf8)) as? [String: Any])
        let miss = try #require((scored["byKind"] as? [String: Any])?["miss"] as? [String: Any])
        #expect(miss["truePositives"] as? Int == 1 && miss["falseNegatives"] as? Int == 0, "\(miss)")
        // Without t0 there is no impact to label; a label is never written over.
        let noT0 = try ToolRunner.run([
            "payload", "mint", Self.session.ring, "--last", "1", "--out", tmp.sub("x.mp4"), "--miss", corpus,
        ])
        #expect(noT0.status != 0 && noT0.stderr.contains("--t0-ns"), "\(noT0.stderr)")
        let again = try ToolRunner.run([
            "payload", "mint", Self.session.ring, "--t0-ns", "3304000000", "--out", tmp.sub("other.mp4"), "--miss",
            corpus,
        ])
        #expect(again.status == 0)
        try FileManager.default.createDirectory(atPath: tmp.sub("sub"), withIntermediateDirectories: true)
        let twice = try ToolRunner.run([
            "payload", "mint", Self.session.ring, "--t0-ns", "3304000000", "--out", tmp.sub("sub/hand.mp4"),
            "--miss", corpus,
        ])
        #expect(twice.status != 0 && twice.stderr.contains("never written over"), "\(twice.stderr)")
    }
}
