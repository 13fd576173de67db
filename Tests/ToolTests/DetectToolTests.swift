import Foundation
import TestSupport
import Testing

@Suite("ppc-tool detect: a file, a corpus, an evaluation")
struct DetectToolTests {
    @Test func corpusThenEvalThenOneFile() throws {
        let tmp = TemporaryDirectory("ppc-detect")
        let corpus = try ToolRunner.run(["detect", "corpus", tmp.path, "--sessions", "2", "--seconds", "8", "--seed", "3"])
        #expect(corpus.status == 0, "\(corpus.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: tmp.path).sorted()
        #expect(files.filter { $0.hasSuffix(".wav") }.count == 4 && files.filter { $0.hasSuffix(".truth.json") }.count == 4)

        let eval = try ToolRunner.run(["detect", "eval", "--json", tmp.path])
        #expect(eval.status == 0, "\(eval.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(eval.stdout.utf8)) as? [String: Any])
        let clean = try #require((o["byKind"] as? [String: Any])?["clean"] as? [String: Any])
        #expect((clean["f"] as? NSNumber)?.doubleValue ?? 0 >= 0.99)
        #expect(o["provenance"] as? String == "measured")
        #expect(((o["maxDecisionLatencyMs"] as? NSNumber)?.doubleValue ?? 99) <= 40)

        // One file: every truth impact found, sample indices from the file's first sample.
        let truth = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: tmp.sub("clean-3.truth.json")))) as? [String: Any])
        let impacts = (truth["impacts"] as? [NSNumber] ?? []).map(\.int64Value)
        let r = try ToolRunner.run(["detect", "--json", tmp.sub("clean-3.wav")])
        #expect(r.status == 0)
        let found = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        let onsets = found.compactMap { ($0["onsetSample"] as? NSNumber)?.int64Value }
        #expect(onsets.count == impacts.count)
        for (a, b) in zip(onsets, impacts) { #expect(abs(a - b) <= 4) }
        for c in found {
            for key in ["onsetSample", "impactSample", "t0Ns", "score"] { #expect(c[key] != nil) }
            #expect(c["tofProvenance"] as? String == "no tof_correction: the session declared no mic-to-ball distance")
        }
        // A declared distance subtracts the time of flight: 1.5 m at 343.42 m/s is 209.7 samples at 48 kHz.
        let tof = try ToolRunner.run(["detect", "--json", "--mic-to-ball", "1.5", tmp.sub("clean-3.wav")])
        let first = try #require((try JSONSerialization.jsonObject(with: Data(tof.stdout.utf8)) as? [[String: Any]])?.first)
        let onset = try #require((first["onsetSample"] as? NSNumber)?.doubleValue)
        let impact = try #require((first["impactSample"] as? NSNumber)?.doubleValue)
        #expect(abs(onset - impact - 209.656) < 0.01)
    }

    @Test(arguments: [["detect", "/nonexistent.wav"], ["detect", "eval", "/nonexistent-dir"]])
    func missingInputIsBadData(args: [String]) throws {
        let r = try ToolRunner.run(args)
        #expect(r.status == 65)
        #expect(r.stderr.contains("/nonexistent"))
    }
}
