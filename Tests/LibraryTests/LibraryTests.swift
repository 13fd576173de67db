import Catalogue
import Foundation
import PayloadSource
import Syscall
import TestSupport
import Testing

@testable import Library

/// Swings placed once and kept: a swing's id is its first angle's from then on, through later angles, a catalogue made
/// again, and a catalogue of the old schema migrated.
@Suite("Library: clip folders placed in swings that keep their id")
struct LibraryTests {
    /// A stored clip folder as ppc-host leaves it: meta.json (t0 on the device clock) and host-meta.json (the device's
    /// clock offset, when it arrived on which boot, its bay).
    static func store(
        _ library: String, device: String, clip: String, t0: Int64, offset: Int64 = 0, receivedNs: Int64,
        boot: String = "boot-a",
        bay: String? = nil
    ) throws -> String {
        let dir = "\(library)/\(device)/\(clip)"
        try FileSystem.makeDirectories(dir)
        var meta = ClipMeta.standIn(clipId: clip, device: device, files: [:])
        meta.t0Ns = .init(t0, "assumed")
        try FileSystem.writeAtomically(Array(try meta.encoded()), to: dir + "/meta.json")
        var host: [String: Any] = [
            "clockRelation": ["offsetNs": offset, "uncertaintyNs": 50_000], "receivedHostNs": receivedNs,
            "hostBoot": boot,
            "receivedAt": "2026-12-03T10:00:00Z",
        ]
        if let bay { host["bay"] = bay }
        try FileSystem.writeAtomically(
            Array(try JSONSerialization.data(withJSONObject: host)), to: dir + "/host-meta.json")
        return dir
    }

    /// Issue 32: a swing's id was the smallest of its clips' ids, so it changed when a second camera's clip landed —
    /// the open page said "no such swing" and the star and notes were gone from the list. Now the first angle names it
    /// for good, and a later angle takes the swing's marks.
    @Test func aSwingKeepsItsFirstAnglesIdAndMarksWhenAnotherArrives() throws {
        let tmp = TemporaryDirectory("ppc-library")
        let catalogue = try Catalogue(path: tmp.sub("catalogue.sqlite"))
        let dtl = try Self.store(
            tmp.path, device: "dtl", clip: "z-dtl-001", t0: 10_000_000_000, receivedNs: 100_000_000_000, bay: "bay-1")
        let first = try LibraryClip.place(dtl, in: catalogue).clip
        #expect(first.swingID == "z-dtl-001" && first.receivedSeq == 1)
        try catalogue.annotate(clipID: first.clipID, flags: [.starred], notes: "hips early")
        // Face-on's clip id sorts first, arrives second, heard the same impact 3 ms later on its own clock.
        let face = try Self.store(
            tmp.path, device: "face", clip: "a-face-001", t0: 20_003_000_000, offset: -10_000_000_000,
            receivedNs: 101_000_000_000, bay: "bay-1")
        let second = try LibraryClip.place(face, in: catalogue).clip
        #expect(second.swingID == "z-dtl-001" && second.receivedSeq == 2)
        #expect(second.flags == [.starred] && second.notes == "hips early", "the new angle takes the swing's marks")
        #expect(try ClipAnnotations.read(face)?.flags == [.starred], "and keeps them beside it")
        let swings = Catalogue.placedSwings(try catalogue.clips())
        #expect(swings.map { $0.map(\.clipID) } == [["z-dtl-001", "a-face-001"]])
    }

    /// Two runs' clips (minutes apart on the host's clock), two boots, two bays, or the same device twice never make one
    /// swing; of two swings an angle could join, the nearest in t0.
    @Test func onlyAnglesOfOneMomentOneBootAndOneBayJoin() throws {
        let tmp = TemporaryDirectory("ppc-library-apart")
        let catalogue = try Catalogue(path: tmp.sub("catalogue.sqlite"))
        func place(
            _ device: String, _ clip: String, t0: Int64, received: Int64, boot: String = "boot-a", bay: String? = nil
        ) throws -> String? {
            try LibraryClip.place(
                Self.store(tmp.path, device: device, clip: clip, t0: t0, receivedNs: received, boot: boot, bay: bay),
                in: catalogue
            ).clip.swingID
        }
        #expect(try place("a", "a-1", t0: 5_000_000_000, received: 10_000_000_000) == "a-1")
        #expect(try place("b", "b-1", t0: 5_002_000_000, received: 11_000_000_000) == "a-1")
        // The demo's second run: the same synthetic clock, three minutes later.
        #expect(try place("b", "b-2", t0: 5_001_000_000, received: 190_000_000_000) == "b-2")
        #expect(try place("c", "c-1", t0: 5_001_000_000, received: 12_000_000_000, boot: "boot-b") == "c-1")
        #expect(try place("d", "d-1", t0: 5_001_000_000, received: 12_000_000_000, bay: "bay-9") == "d-1")
        #expect(
            try place("a", "a-2", t0: 5_001_000_000, received: 12_000_000_000) == "a-2",
            "a device's second clip is a new swing")
        #expect(
            try place("e", "e-1", t0: 5_000_500_000, received: 13_000_000_000) == "a-1",
            "the nearest t0 of two swings it could join")
    }

    /// The folders are the truth: a catalogue made again from them (swing.json beside each) places every clip as before,
    /// in the same order of receipt.
    @Test func aCatalogueMadeAgainPlacesEveryClipAsBefore() throws {
        let tmp = TemporaryDirectory("ppc-library-rebuild")
        let first = try Catalogue(path: tmp.sub("one.sqlite"))
        for (n, (device, t0)) in [
            ("a", Int64(1_000_000_000)), ("b", 1_001_000_000), ("a", 9_000_000_000), ("b", 9_002_000_000),
        ].enumerated() {
            _ = try LibraryClip.place(
                Self.store(
                    tmp.path, device: device, clip: "\(device)-\(9 - n)", t0: t0,
                    receivedNs: Int64(n + 1) * 1_000_000_000), in: first)
        }
        let before = try first.clips().map { [$0.clipID, $0.swingID ?? "", "\($0.receivedSeq ?? 0)"] }.sorted {
            $0[0] < $1[0]
        }
        let again = try Catalogue(path: tmp.sub("two.sqlite"))
        let (recorded, skipped, _) = Library.place(Library.clipFolders(tmp.path), in: again)
        #expect(recorded == 4 && skipped.isEmpty, "\(skipped)")
        let after = try again.clips().map { [$0.clipID, $0.swingID ?? "", "\($0.receivedSeq ?? 0)"] }.sorted {
            $0[0] < $1[0]
        }
        #expect(after == before)
        #expect(Set(before.map { $0[1] }) == ["a-9", "a-7"])
    }

    /// A swing.json no host wrote is named, and the clip is not catalogued from it.
    @Test func aPlacementThatDoesNotReadIsNamed() throws {
        let tmp = TemporaryDirectory("ppc-library-bad")
        let catalogue = try Catalogue(path: tmp.sub("catalogue.sqlite"))
        let dir = try Self.store(tmp.path, device: "a", clip: "a-1", t0: 1, receivedNs: 1)
        for bad in [
            #"{"swingId": "../x", "receivedSeq": 1}"#, #"{"swingId": "a-1", "receivedSeq": 0}"#,
            "[" + String(repeating: "[", count: 100),
        ] {
            try FileSystem.writeAtomically(Array(bad.utf8), to: dir + "/swing.json")
            #expect(throws: LibraryError.self) { try LibraryClip.place(dir, in: catalogue) }
        }
    }
}
