import Catalogue
import Foundation
import TestSupport
import Testing

/// The field corpus (issue 35): what a coach marked — a swing kept or starred, a clip that was "not a swing" — exported
/// by `ppc-host corpus export` as labelled audio, and scored by `ppc-tool detect eval` on it: a round trip.
@Suite("ppc-host corpus export: the coach's labels become the detector's corpus")
struct CorpusToolTests {
    @Test func whatTheCoachMarkedRoundTripsThroughDetectEval() throws {
        let tmp = TemporaryDirectory("ppc-corpus")
        let library = tmp.sub("library")
        let run = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/short-session.json"), "--out", tmp.sub("out"), "--device-id", "bay-a",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        // The clips as a host's library holds them (LIBRARY/<device>/<clipId>/), catalogued from their files.
        try FileManager.default.createDirectory(atPath: library + "/bay-a", withIntermediateDirectories: true)
        let ids = try FileManager.default.contentsOfDirectory(atPath: tmp.sub("out/clips")).sorted()
        try #require(ids.count == 2, "\(ids)")
        for id in ids {
            try FileManager.default.moveItem(atPath: tmp.sub("out/clips/\(id)"), toPath: "\(library)/bay-a/\(id)")
        }
        let rebuilt = try ToolRunner.run(["catalogue", "rebuild", "--library", library], tool: "ppc-host")
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        let catalogue = try Catalogue(path: library + "/catalogue.sqlite")
        try catalogue.annotate(clipID: ids[0], flags: [.starred], notes: nil)
        try catalogue.annotate(clipID: ids[1], flags: [.discarded, .notASwing], notes: nil)
        #expect(throws: (any Error).self) { try catalogue.annotate(clipID: ids[1], flags: [.notASwing], notes: nil) }

        let corpus = tmp.sub("corpus")
        let exported = try ToolRunner.run(
            ["corpus", "export", corpus, "--library", library, "--json"], tool: "ppc-host")
        #expect(exported.status == 0, "\(exported.stderr)")
        let said = try #require(try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [String: Any])
        #expect(said["written"] as? [String: Int] == ["swing": 1, "falsetrigger": 1], "\(said)")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus).sorted()
        #expect(
            files == [
                "falsetrigger-\(ids[1]).truth.json", "falsetrigger-\(ids[1]).wav", "swing-\(ids[0]).truth.json",
                "swing-\(ids[0]).wav",
            ], "\(files)")

        // detect eval reads it: the confirmed swing is found on its sample; where it fired on the clip the coach called
        // no swing is a false positive, put down to the coach's label.
        let eval = try ToolRunner.run(["detect", "eval", corpus, "--json"])
        #expect(eval.status == 0, "\(eval.stderr)")
        let r = try #require(try JSONSerialization.jsonObject(with: Data(eval.stdout.utf8)) as? [String: Any])
        let byKind = try #require(r["byKind"] as? [String: [String: Any]], "\(eval.stdout)")
        #expect(byKind["swing"]?["recall"] as? Double == 1 && byKind["swing"]?["truePositives"] as? Int == 1)
        #expect(byKind["falsetrigger"]?["falsePositives"] as? Int == 1, "\(byKind)")
        let causes = r["falsePositivesByDistractor"] as? [String: Any] ?? [:]
        #expect(causes["not-a-swing"] != nil, "\(causes)")
    }
}
