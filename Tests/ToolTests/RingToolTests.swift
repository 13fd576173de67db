import Foundation
import FragmentRing
import TestSupport
import Testing
import TimelineIndex

@Suite("ppc-tool ring / index: inspect, verify, damaged input")
struct RingToolTests {
    @Test func fillInspectVerify() throws {
        let tmp = TemporaryDirectory()
        let fill = try ToolRunner.run([
            "ring", "fill", tmp.path, "--count", "7", "--capacity", "5", "--bytes", "2000", "--durability", "none",
        ])
        #expect(fill.status == 0)
        #expect(fill.stdout.split(separator: "\n").last == "published 7")

        let inspect = try ToolRunner.run(["ring", "inspect", "--json", tmp.path])
        #expect(inspect.status == 0)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])
        let fragments = try #require(o["fragments"] as? [[String: Any]])
        #expect(fragments.compactMap { ($0["sequence"] as? NSNumber)?.intValue } == [3, 4, 5, 6, 7])
        for f in fragments {
            for key in ["path", "sequence", "startNs", "endNs", "keyframe", "bytes", "checksum", "pins"] {
                #expect(f[key] != nil, "fragment lacks \(key)")
            }
            #expect(FileManager.default.fileExists(atPath: f["path"] as? String ?? ""))
        }
        #expect(try ToolRunner.run(["ring", "verify", tmp.path]).status == 0)
    }

    @Test func verifyNamesEachBadFragment() throws {
        let tmp = TemporaryDirectory()
        _ = try ToolRunner.run(["ring", "fill", tmp.path, "--count", "3", "--bytes", "500", "--durability", "none"])
        let victim = tmp.sub("fragments/0000000000000002.bin")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: victim)))
        bytes[0] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: victim))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: tmp.sub("fragments/0000000000000009.bin")))
        let r = try ToolRunner.run(["ring", "verify", tmp.path, "--json"])
        #expect(r.status == 65)
        let o = try #require(
            try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
        #expect(
            (o["problems"] as? [String])?.contains { $0.contains("0000000000000002.bin: checksum") } == true, "\(o)")
        // A file numbered after every durable record is what a crash leaves: listed as recoverable, not as damage.
        #expect(
            (o["recoverable"] as? [String])?.contains {
                $0.hasPrefix("\(tmp.sub("fragments/0000000000000009.bin")): orphan")
            }
                == true && o["clean"] as? Bool == false, "\(o)")
        // inspect changed nothing: verify still finds both.
        _ = try ToolRunner.run(["ring", "inspect", tmp.path])
        #expect(try ToolRunner.run(["ring", "verify", tmp.path]).status == 65)
    }

    @Test func aDeletedFragmentIsDamageNotRecycling() throws {
        let tmp = TemporaryDirectory()
        _ = try ToolRunner.run(["ring", "fill", tmp.path, "--count", "4", "--bytes", "500", "--durability", "none"])
        try FileManager.default.removeItem(atPath: tmp.sub("fragments/0000000000000003.bin"))
        let r = try ToolRunner.run(["ring", "verify", tmp.path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("0000000000000003.bin: missing"), "\(r.stderr)")
    }

    @Test func anEmptiedFragmentsDirectoryIsDamage() throws {
        let tmp = TemporaryDirectory()
        _ = try ToolRunner.run(["ring", "fill", tmp.path, "--count", "3", "--bytes", "500", "--durability", "none"])
        for f in try FileManager.default.contentsOfDirectory(atPath: tmp.sub("fragments")) {
            try FileManager.default.removeItem(atPath: tmp.sub("fragments/\(f)"))
        }
        let r = try ToolRunner.run(["ring", "verify", tmp.path])
        #expect(r.status == 65)
        #expect(r.stderr.split(separator: "\n").filter { $0.contains(": missing") }.count == 3, "\(r.stderr)")
    }

    @Test(arguments: [
        (#""capacity": -5"#, "'capacity' -5 is not a whole number"), (#""capacity": 1e30"#, "'capacity'"),
        (#""fileExtension": "../../x""#, "'fileExtension' '../../x'"),
    ])
    func aRingJSONOutOfBoundsIsRefusedNamingTheField(field: String, message: String) throws {
        let tmp = TemporaryDirectory()
        _ = try ToolRunner.run(["ring", "fill", tmp.path, "--count", "1", "--bytes", "500", "--durability", "none"])
        let key = field.split(separator: ":")[0]
        let text = try String(contentsOfFile: tmp.sub("ring.json"), encoding: .utf8)
        let edited = text.split(separator: "\n").map { $0.contains(key) ? "  \(field)," : String($0) }.joined(
            separator: "\n")
        try edited.write(toFile: tmp.sub("ring.json"), atomically: false, encoding: .utf8)
        for command in ["verify", "inspect"] {
            let r = try ToolRunner.run(["ring", command, tmp.path])
            #expect(r.status == 65)
            #expect(r.stderr.contains(message), "\(r.stderr)")
        }
    }

    @Test func whatACrashLeavesIsRecoverableNotDamage() throws {
        let tmp = TemporaryDirectory()
        _ = try ToolRunner.run(["ring", "fill", tmp.path, "--count", "3", "--bytes", "500", "--durability", "none"])
        // The fragment in flight (numbered after the newest record) and a torn append at the end of the log.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: tmp.sub("fragments/0000000000000004.bin")))
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: tmp.sub("index.log")))
        let end = try log.seekToEnd()
        try log.write(contentsOf: Data([0xAB, 0xCD, 0xEF]))
        try log.close()
        let r = try ToolRunner.run(["ring", "verify", tmp.path, "--json"])
        #expect(r.status == 75, "\(r.stdout)\(r.stderr)")
        let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let recoverable = o?["recoverable"] as? [String] ?? []
        // Two leftovers of a crash (the orphan fragment, the torn tail of the index), no damage.
        #expect((o?["problems"] as? [String])?.isEmpty == true && recoverable.count == 2, "\(r.stdout)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        _ = end
        // Opening the ring (as the next run does) repairs it: verify is then clean.
        _ = try ToolRunner.run(["ring", "fill", tmp.path, "--count", "0", "--durability", "none"])
        #expect(try ToolRunner.run(["ring", "verify", tmp.path]).status == 0)
    }

    @Test func aDirectoryThatIsNotARingIsBadData() throws {
        let tmp = TemporaryDirectory()
        let r = try ToolRunner.run(["ring", "inspect", tmp.path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("not a fragment ring"))
    }

    @Test func indexInspectReadsASnapshotAndRefusesADamagedOne() throws {
        let tmp = TemporaryDirectory()
        let index = TimelineIndex()
        let audio = index.register(SourceID(2), name: "audio", minimumCapacity: 16)
        audio.append(timeNs: 5, kind: .audioWindow, reference: 0, value: 480)
        audio.append(timeNs: 15, kind: .candidate, reference: 1, value: 720)
        var bytes = index.snapshot(startNs: 0, endNs: 100).encoded()
        try Data(bytes).write(to: URL(fileURLWithPath: tmp.sub("index.bin")))
        let r = try ToolRunner.run(["index", "inspect", "--json", tmp.sub("index.bin")])
        #expect(r.status == 0)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(
            (o["entries"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } == ["audio-window", "candidate"])
        bytes[bytes.count / 2] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: tmp.sub("bad.bin")))
        let bad = try ToolRunner.run(["index", "inspect", tmp.sub("bad.bin")])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("bad.bin: checksum mismatch"))
    }
}
