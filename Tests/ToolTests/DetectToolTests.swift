import Foundation
import TestSupport
import Testing

@Suite("ppc-tool detect: a file, a corpus, an evaluation")
struct DetectToolTests {
    @Test func theIndependentGeneratorWritesEitherSplitAndNamesBadChoices() throws {
        let tmp = TemporaryDirectory("ppc-detect-room")
        let r = try ToolRunner.run([
            "detect", "corpus", tmp.path, "--generator", "room", "--split", "held-out", "--sessions", "1", "--seconds",
            "6",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let truth = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: tmp.sub("hard-700001.truth.json")))) as? [String: Any])
        #expect((truth["generator"] as? String)?.contains("RoomCorpus") == true)
        let eval = try ToolRunner.run(["detect", "eval", "--json", tmp.path])
        #expect(eval.status == 0, "\(eval.stderr)")
        // Impacts are not counted among the distractors, whatever their model.
        let o = try #require(try JSONSerialization.jsonObject(with: Data(eval.stdout.utf8)) as? [String: Any])
        #expect((o["distractorEvents"] as? [String: Any])?.keys.contains { $0.hasPrefix("impact") } == false)

        let badGenerator = try ToolRunner.run(["detect", "corpus", tmp.path, "--generator", "tape"])
        #expect(badGenerator.status != 0 && badGenerator.stderr.contains("--generator tape"))
        let badSplit = try ToolRunner.run(["detect", "corpus", tmp.path, "--generator", "room", "--split", "test"])
        #expect(badSplit.status != 0 && badSplit.stderr.contains("--split test"))
    }

    /// What a change to the detector is fitted on: every decided event as a CSV row, and one truth row per impact of
    /// the tuning sessions (their count from the generator itself, run again here).
    @Test func theDecidedEventsAreWrittenWithATruthRowPerImpact() throws {
        let tmp = TemporaryDirectory("ppc-detect-events")
        let r = try ToolRunner.run([
            "detect", "events", tmp.sub("events.csv"), "--impact-sessions", "1", "--room-sessions", "0",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try String(contentsOfFile: tmp.sub("events.csv"), encoding: .utf8).split(separator: "\n")
        #expect(rows.first?.hasPrefix("generator,session,trigger,impact,kind,accepted,snr") == true)
        let truth = rows.filter { $0.split(separator: ",", omittingEmptySubsequences: false)[safe: 3] == "2" }
        let sessions = try ToolRunner.run(["detect", "corpus", tmp.sub("corpus"), "--sessions", "1"])
        #expect(sessions.status == 0, "\(sessions.stderr)")
        var expected = 0
        for kind in ["clean", "hard"] {
            let t = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: tmp.sub("corpus/\(kind)-1.truth.json"))))
                    as? [String: Any])
            expected += (t["impacts"] as? [Any])?.count ?? -1
        }
        #expect(truth.count == expected && expected > 0, "\(truth.count) truth rows, \(expected) impacts")
        #expect(rows.count > truth.count + 1, "events were decided")
        let bad = try ToolRunner.run(["detect", "misses", "--generator", "tape"])
        #expect(bad.status == 64 && bad.stderr.contains("--generator tape"))
    }

    @Test func corpusThenEvalThenOneFile() throws {
        let tmp = TemporaryDirectory("ppc-detect")
        let corpus = try ToolRunner.run([
            "detect", "corpus", tmp.path, "--sessions", "2", "--seconds", "8", "--seed", "3",
        ])
        #expect(corpus.status == 0, "\(corpus.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: tmp.path).sorted()
        #expect(
            files.filter { $0.hasSuffix(".wav") }.count == 4 && files.filter { $0.hasSuffix(".truth.json") }.count == 4)

        let eval = try ToolRunner.run(["detect", "eval", "--json", tmp.path])
        #expect(eval.status == 0, "\(eval.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(eval.stdout.utf8)) as? [String: Any])
        let clean = try #require((o["byKind"] as? [String: Any])?["clean"] as? [String: Any])
        #expect((clean["f"] as? NSNumber)?.doubleValue ?? 0 >= 0.99)
        #expect(o["provenance"] as? String == "measured")
        #expect(((o["maxDecisionLatencyMs"] as? NSNumber)?.doubleValue ?? 99) <= 40)
        // Recall by how far each impact stood over the room's noise: every labelled impact counted once, per kind.
        let byProminence = try #require(o["recallByProminence"] as? [String: [[String: Any]]])
        let labelledImpacts = byProminence.values.joined().map { ($0["labelled"] as? NSNumber)?.intValue ?? 0 }.reduce(
            0, +)
        let foundImpacts = byProminence.values.joined().map { ($0["found"] as? NSNumber)?.intValue ?? 0 }.reduce(0, +)
        let scored = ["clean", "hard"].compactMap { (o["byKind"] as? [String: [String: Any]])?[$0] }
        #expect(
            labelledImpacts
                == scored.map {
                    (($0["truePositives"] as? NSNumber)?.intValue ?? 0)
                        + (($0["falseNegatives"] as? NSNumber)?.intValue ?? 0)
                }.reduce(0, +))
        #expect(foundImpacts == scored.map { ($0["truePositives"] as? NSNumber)?.intValue ?? 0 }.reduce(0, +))

        // One file: every truth impact found, sample indices from the file's first sample.
        let truth = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: tmp.sub("clean-3.truth.json")))) as? [String: Any])
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
        let first = try #require(
            (try JSONSerialization.jsonObject(with: Data(tof.stdout.utf8)) as? [[String: Any]])?.first)
        let onset = try #require((first["onsetSample"] as? NSNumber)?.doubleValue)
        let impact = try #require((first["impactSample"] as? NSNumber)?.doubleValue)
        #expect(abs(onset - impact - 209.656) < 0.01)
    }

    /// A WAV of `samples` silent samples at 48 kHz.
    static func wav(_ path: String, samples: Int) throws {
        var b = Array("RIFF".utf8)
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { b += $0 } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { b += $0 } }
        u32(36 + 2 * samples)
        b += Array("WAVEfmt ".utf8)
        u32(16)
        u16(1)
        u16(1)
        u32(48_000)
        u32(96_000)
        u16(2)
        u16(16)
        b += Array("data".utf8)
        u32(2 * samples)
        b += [UInt8](repeating: 0, count: 2 * samples)
        try Data(b).write(to: URL(fileURLWithPath: path))
    }

    @Test(arguments: [0, 1, 100])
    func tooLittleAudioIsSaidNotPassedOver(samples: Int) throws {
        let tmp = TemporaryDirectory("ppc-detect")
        try Self.wav(tmp.sub("short.wav"), samples: samples)
        let r = try ToolRunner.run(["detect", tmp.sub("short.wav")])
        #expect(r.status == 65)
        #expect(r.stderr.contains("\(samples) samples at 48000 Hz is no audio to judge"), "\(r.stderr)")
    }

    @Test func libavSpeaksThroughPPCsOwnMessage() throws {
        // A file that claims to be MP4 and is not: libav's own complaint is part of ppc's one error line, never a raw
        // libav log line of its own.
        let tmp = TemporaryDirectory("ppc-detect")
        try Data([0, 0, 0, 0x18] + Array("ftypmp42".utf8) + [0, 0, 0, 0] + Array("mp42isomjunkjunk".utf8)).write(
            to: URL(fileURLWithPath: tmp.sub("junk.mp4")))
        let r = try ToolRunner.run(["detect", tmp.sub("junk.mp4")])
        #expect(r.status == 65)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("ppc-tool: error: open \(tmp.sub("junk.mp4"))"), "\(r.stderr)")
        #expect(r.stderr.contains("(libav: moov atom not found)") && !r.stderr.contains(" @ 0x"), "\(r.stderr)")
    }

    @Test(arguments: [["detect", "/nonexistent.wav"], ["detect", "eval", "/nonexistent-dir"]])
    func missingInputIsBadData(args: [String]) throws {
        let r = try ToolRunner.run(args)
        #expect(r.status == 65)
        #expect(r.stderr.contains("/nonexistent"))
    }
}

extension DetectToolTests {
    /// `detect eval` says what fooled the detector: a detection no impact accounts for is put down to the distractor that
    /// began just before it. Here an impact is struck from the truth and a thud said to precede it: one false positive,
    /// a thud's.
    @Test func evalReportsFalsePositivesByTheDistractorThatPrecededThem() throws {
        let tmp = TemporaryDirectory("ppc-detect-fp")
        let dir = tmp.sub("corpus")
        #expect(try ToolRunner.run(["detect", "corpus", dir, "--sessions", "1", "--seconds", "12"]).status == 0)
        let truthPath = dir + "/clean-1.truth.json"
        var truth = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: truthPath))) as? [String: Any])
        var impacts = truth["impacts"] as? [Int] ?? []
        let struck = try #require(impacts.first)
        impacts.removeFirst()
        truth["impacts"] = impacts
        var events = truth["events"] as? [[String: Any]] ?? []
        events.append(["kind": "thud", "sample": struck - 4800, "levelDbfs": -20])
        truth["events"] = events
        try JSONSerialization.data(withJSONObject: truth).write(to: URL(fileURLWithPath: truthPath))
        for f in try FileManager.default.contentsOfDirectory(atPath: dir) where f.hasPrefix("hard-") {
            try FileManager.default.removeItem(atPath: dir + "/" + f)
        }
        let r = try ToolRunner.run(["detect", "eval", "--json", dir])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let byDistractor = o["falsePositivesByDistractor"] as? [String: [String: Any]] ?? [:]
        #expect(byDistractor["thud"]?["count"] as? Int == 1, "\(byDistractor)")
        #expect((byDistractor["thud"]?["perMinute"] as? Double ?? 0) > 0)
        #expect((o["distractorEvents"] as? [String: Int])?["thud"] == 1)
    }
}

extension Array {
    fileprivate subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}
