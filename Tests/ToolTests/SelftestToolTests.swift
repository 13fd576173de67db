import Foundation
import TestSupport
import Testing

@Suite("ppc-tool selftest: measured, drops counted, plain verdict")
struct SelftestToolTests {
    @Test func everyFigureIsMarkedMeasuredAndEveryFrameIsAccountedFor() throws {
        let r = try ToolRunner.run(["selftest", "--source", "synthetic:320x180@30", "--seconds", "1", "--json"])
        // Whether this format is sustained depends on the machine's load: 0 or 1, never a crash or a usage error.
        #expect(r.status == 0 || r.status == 1, "\(r.stderr)\(r.stdout)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["provenance"] as? String == "measured")
        #expect(o["date"] is String && o["machine"] is [String: Any])
        #expect((o["requestedFps"] as? NSNumber)?.doubleValue == 30)
        #expect(o["sustained"] is Bool)
        #expect((o["sustained"] as? Bool) == (r.status == 0))
        // Every frame offered is either encoded or counted as dropped: nothing vanishes.
        let offered = (o["framesOffered"] as? NSNumber)?.intValue ?? -1
        let encoded = (o["framesEncoded"] as? NSNumber)?.intValue ?? -2
        let dropped = (o["framesDroppedLate"] as? NSNumber)?.intValue ?? -3
        #expect(offered == encoded + dropped && offered >= 30)
        #expect(((o["encodeMsPerFrame"] as? [String: Any])?["p95"] as? NSNumber) != nil)
        #expect((o["capturePriority"] as? String)?.hasPrefix("nice") == true)
    }

    @Test func anImpossibleFormatSaysSoAndSuggestsOneThatFits() throws {
        let r = try ToolRunner.run(["selftest", "--json", "--source", "synthetic:320x180@5000", "--seconds", "1"])
        #expect(r.status == 1)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["sustained"] as? Bool == false && ((o["framesDroppedLate"] as? NSNumber)?.intValue ?? 0) > 0, "\(o)")
        #expect((o["verdict"] as? String)?.contains("cannot sustain 320x180@5000") == true, "\(o)")
        #expect((o["suggestion"] as? String)?.isEmpty == false, "a format that fits is suggested: \(o)")
    }

    @Test(arguments: [["--source", "bogus"], ["--source", "synthetic:big"], ["--seconds", "0"]])
    func badArgumentsAreUsageErrors(args: [String]) throws {
        #expect(try ToolRunner.run(["selftest"] + args).status == 64)
    }

    /// Issue 33: `selftest` and `run` trapped (SIGILL) on a Y4M claiming 2 147 483 647 fps; now a data error naming it.
    @Test func aFileClaimingAnImpossibleRateIsRefusedNotATrap() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.sub("fast.y4m")
        let frame = Data("FRAME\n".utf8) + Data(count: 320 * 180 * 3 / 2)
        try (Data("YUV4MPEG2 W320 H180 F2147483647:1 Ip A1:1 C420jpeg\n".utf8) + frame + frame).write(
            to: URL(fileURLWithPath: path))
        let r = try ToolRunner.run(["selftest", "--source", "file:\(path)", "--seconds", "1"])
        #expect(
            r.status == 65 && r.stderr.contains(path) && r.stderr.contains("2147483647/1 frames per second"),
            "\(r.status) \(r.stderr)")
    }

    @Test func anUnknownEncoderIsNamed() throws {
        let r = try ToolRunner.run(["selftest", "--encoder", "x266", "--seconds", "1"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("x266") && r.stderr.contains("x264"))
    }
}
