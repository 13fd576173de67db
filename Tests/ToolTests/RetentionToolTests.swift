import Catalogue
import Foundation
import TestSupport
import Testing

/// `ppc-host retention --discarded-after AGE`: frees space from discarded swings first, never a kept or starred one,
/// and says what it removed.
@Suite("ppc-host retention: discarded swings go first, and it says what went")
struct RetentionToolTests {
    @Test func discardedSwingsOlderThanTheAgeAreRemovedAndNothingElse() throws {
        let tmp = TemporaryDirectory("ppc-retention")
        let library = tmp.sub("library")
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        let catalogue = try Catalogue(path: library + "/catalogue.sqlite")
        let now = ISO8601DateFormatter().string(from: Date())
        // id, received, flags
        let clips: [(String, String, Set<ClipFlag>)] = [
            ("old-discarded", "2026-01-01T10:00:00Z", [.discarded]), ("new-discarded", now, [.discarded]),
            ("old-starred", "2026-01-01T10:00:00Z", [.discarded, .starred]), ("old-plain", "2026-01-01T10:00:00Z", []),
        ]
        for (i, (id, at, flags)) in clips.enumerated() {
            let dir = "\(library)/dev/\(id)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Data(count: 1000).write(to: URL(fileURLWithPath: dir + "/clip.mp4"))
            try catalogue.record(
                CatalogueClip(
                    clipID: id, device: "dev", session: "s", sessionID: "x", t0DeviceNs: Int64(i) * 10_000_000_000,
                    t0HostNs: nil, t0UncertaintyNs: nil, frames: 1, captureProfile: "p", belowPolicy: nil,
                    receivedAt: at, path: dir, bytes: 1000, receivedSeq: Int64(i + 1)),
                files: [])
            try catalogue.annotate(clipID: id, flags: flags, notes: nil)
        }
        let dry = try ToolRunner.run(
            ["retention", "--library", library, "--discarded-after", "7d", "--dry-run", "--json"], tool: "ppc-host")
        #expect(dry.status == 0, "\(dry.stderr)")
        let said = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any])
        #expect((said["removed"] as? [[String: Any]])?.compactMap { $0["swing"] as? String } == ["old-discarded"])
        #expect(FileManager.default.fileExists(atPath: "\(library)/dev/old-discarded"), "a dry run removes nothing")

        let r = try ToolRunner.run(["retention", "--library", library, "--discarded-after", "7d"], tool: "ppc-host")
        #expect(r.status == 0 && r.stdout.contains("removed swing old-discarded"), "\(r.stdout)\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(library)/dev/old-discarded"))
        #expect(try catalogue.clips().map(\.clipID).sorted() == ["new-discarded", "old-plain", "old-starred"])

        let bad = try ToolRunner.run(
            ["retention", "--library", library, "--discarded-after", "soon"], tool: "ppc-host")
        #expect(bad.status == 64 && bad.stderr.contains("--discarded-after 'soon'"), "\(bad.stderr)")
    }
}
