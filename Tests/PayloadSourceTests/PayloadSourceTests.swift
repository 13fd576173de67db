import Checksum
import Foundation
import FragmentRing
import Syscall
import TestSupport
import Testing
import TimelineIndex

@testable import PayloadSource

/// A ring of 20 × 0.5 s fragments and a timeline with video, audio and IMU entries over the same 10 s.
func liveSession(_ tmp: TemporaryDirectory) throws -> RingPayloadSource {
    let ring = try FragmentRing(directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none))
    let index = TimelineIndex()
    let video = index.register(SourceID(1), name: "video", rateHz: 2, windowSeconds: 10)
    let audio = index.register(SourceID(2), name: "audio", rateHz: 100, windowSeconds: 10)
    let imu = index.register(SourceID(3), name: "imu", rateHz: 100, windowSeconds: 10)
    for i in 0..<20 {
        let start = Int64(i) * 500_000_000
        let f = try #require(try publishFragment(ring, startNs: start, size: 1000 + i).published)
        video.append(timeNs: start, kind: .videoFragment, reference: f.sequence.rawValue, value: 500_000_000)
    }
    for i in 0..<1000 {
        audio.append(timeNs: Int64(i) * 10_000_000, kind: .audioWindow, reference: UInt64(i * 480), value: 480)
        imu.append(timeNs: Int64(i) * 10_000_000, kind: .imuSample, reference: UInt64(i))
    }
    return RingPayloadSource(ring: ring, index: index)
}

@Suite("PayloadSource: one SwingWindow API over the live ring and a bundle")
struct PayloadSourceTests {
    /// A ring read at rest (its directory only, as `ppc-tool payload` reads one after or beside its session) selects
    /// the same window as the ring in use, and hands over only bytes that match their record.
    @Test func aRingAtRestGivesTheWindowTheRingInUseGivesAndRefusesChangedBytes() throws {
        let tmp = TemporaryDirectory()
        let live = try liveSession(tmp)
        let rest = try RingAtRestPayloadSource(directory: tmp.sub("ring"))
        for (start, end) in [(2_600_000_000, 6_100_000_000), (0, 500_000_000), (9_000_000_000, 9_999_999_999)]
            as [(Int64, Int64)]
        {
            let a = try live.freeze(startNs: start, endNs: end)
            let b = try rest.freeze(startNs: start, endNs: end)
            #expect(a.fragments.map(\.info) == b.fragments.map(\.info) && a.gaps == b.gaps)
            for f in b.fragments {
                #expect(try b.bytes(of: f) == a.bytes(of: a.fragments.first { $0.info == f.info }!))
            }
            try live.release(a)
        }
        let w = try rest.freeze(startNs: 1_000_000_000, endNs: 2_000_000_000)
        let victim = try #require(w.fragments.first)
        let file = live.ring.path(of: victim.info.sequence)
        var bytes = try FileSystem.readSmallFile(file, limit: 1 << 20)
        bytes[7] ^= 0xFF
        // written anew, as a recycled-and-reused name would be (the ring never reuses one)
        try FileSystem.removeIfPresent(file)
        #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
        let refused = #expect(throws: PayloadError.self) {
            _ = try w.backing.extract(victim.handle, to: tmp.sub("copy.ts"))
        }
        #expect(
            refused?.code == .rolledAway && refused?.message.contains("do not match its record") == true,
            "\(refused?.message ?? "")")
        #expect(throws: PayloadError.self) { _ = try w.bytes(of: victim) }
        try FileSystem.removeIfPresent(file)
        let gone = #expect(throws: PayloadError.self) { _ = try w.bytes(of: victim) }
        #expect(gone?.message.contains("rolled away") == true)
    }

    @Test func ringToBundleToReadBackIsIdentical() throws {
        let tmp = TemporaryDirectory()
        let live = try liveSession(tmp)
        let w = try live.freeze(startNs: 2_600_000_000, endNs: 6_100_000_000)
        #expect(w.fragments.first?.info.startNs == 2_500_000_000)
        #expect(w.fragments.last?.info.endNs == 6_500_000_000)
        #expect(w.timeline.entries(of: .audioWindow).count == 351)

        let report = try BundleWriter.write(w, to: tmp.sub("bundle"), sync: false)
        #expect(report.fragments == w.fragments.count)
        #expect(report.methods.allSatisfy { $0 == .hardLink })

        let bundle = try BundlePayloadSource(path: tmp.sub("bundle"))
        let back = bundle.window()
        #expect(back.fragments.map(\.info) == w.fragments.map(\.info))
        #expect(back.timeline.entries == w.timeline.entries)
        for (a, b) in zip(w.fragments, back.fragments) {
            #expect(try w.bytes(of: a) == back.bytes(of: b))
        }
        // The same sub-window through either backing gives the same fragments and entries.
        let fromRing = try live.freeze(startNs: 3_000_000_000, endNs: 4_000_000_000)
        let fromBundle = try bundle.freeze(startNs: 3_000_000_000, endNs: 4_000_000_000)
        #expect(fromRing.fragments.map(\.info) == fromBundle.fragments.map(\.info))
        #expect(fromRing.timeline.entries == fromBundle.timeline.entries)
        try live.release(w)
        try live.release(fromRing)
    }

    @Test func aFrozenWindowIsPinnedUntilReleased() throws {
        let tmp = TemporaryDirectory()
        let live = try liveSession(tmp)
        let w = try live.freeze(startNs: 0, endNs: 900_000_000)
        #expect(w.pin != nil)
        // The ring is full: new fragments recycle the oldest *unpinned*, never the window's.
        for i in 20..<25 { try publishFragment(live.ring, startNs: Int64(i) * 500_000_000) }
        #expect(live.ring.fragments.prefix(2).map(\.sequence) == w.fragments.map(\.info.sequence))
        for f in w.fragments { #expect(try w.bytes(of: f).count == Int(f.info.byteLength)) }
        try live.release(w)
        try publishFragment(live.ring, startNs: 12_500_000_000)
        #expect(!live.ring.fragments.contains { $0.sequence == w.fragments[0].info.sequence })
    }

    @Test func aWindowNotYetWrittenSaysSo() throws {
        let tmp = TemporaryDirectory()
        let live = try liveSession(tmp)
        let error = #expect(throws: PayloadError.self) {
            try live.freeze(startNs: 9_000_000_000, endNs: 11_000_000_000)
        }
        #expect(error?.code == .notYetWritten)
    }

    @Test func aBundleIsNeverHalfWrittenUnderItsName() throws {
        let tmp = TemporaryDirectory()
        let live = try liveSession(tmp)
        let w = try live.freeze(startNs: 0, endNs: 900_000_000)
        try FileSystem.makeDirectory(tmp.sub("taken"))
        #expect(throws: PayloadError.self) { try BundleWriter.write(w, to: tmp.sub("taken"), sync: false) }
        // Only the pre-existing names: no partial directory left behind.
        #expect(try FileSystem.list(tmp.path).sorted() == ["ring", "taken"])
    }

    @Test func aDamagedBundleIsRefusedNamingTheFile() throws {
        let tmp = TemporaryDirectory()
        let live = try liveSession(tmp)
        let w = try live.freeze(startNs: 0, endNs: 900_000_000)
        _ = try BundleWriter.write(w, to: tmp.sub("b"), sync: false)
        let file = tmp.sub("b/fragments/\(w.fragments[0].info.sequence.hex).bin")
        try FileSystem.unlink(file)  // break the hard link so the ring's copy stays intact
        try Data(repeating: 7, count: Int(w.fragments[0].info.byteLength)).write(to: URL(fileURLWithPath: file))
        let bundle = try BundlePayloadSource(path: tmp.sub("b"))
        let error = #expect(throws: PayloadError.self) { try bundle.window().bytes(of: bundle.window().fragments[0]) }
        #expect(error?.message.contains(file) == true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: tmp.sub("b/bundle.json")))
        let bad = #expect(throws: PayloadError.self) { try BundlePayloadSource(path: tmp.sub("b")) }
        #expect(bad?.message.contains("bundle.json") == true)
    }
}

@Suite("ClipMeta: meta.json as one Codable type")
struct ClipMetaTests {
    static let sample: ClipMeta = {
        var m = ClipMeta.standIn(clipId: "s-20261201T091500Z-9f3c01ab-001", device: "bay-1", files: [:])
        m.files = ["clip.mp4": .init(bytes: 10, xxh3: "00")]
        return m
    }()

    @Test func itRoundTripsAndSaysNoAudioAndNoCorrectionAsNull() throws {
        let data = try Self.sample.encoded()
        #expect(try JSONDecoder().decode(ClipMeta.self, from: data) == Self.sample)
        let o = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(o["audio"] is NSNull)
        #expect((o["tof_correction"] as? [String: Any])?["samples"] is NSNull)
        #expect(((o["t0Ns"] as? [String: Any])?["value"] as? NSNumber)?.int64Value == 2_500_000_000)
        #expect((o["window"] as? [String: Any])?["clipTimeZeroNs"] != nil)
    }

    @Test func aFileThatIsNotAClipsMetaIsRefusedNamingIt() throws {
        let tmp = TemporaryDirectory()
        try Data(#"{"clipId": "x"}"#.utf8).write(to: URL(fileURLWithPath: tmp.sub("meta.json")))
        #expect(throws: PayloadError.self) { try ClipMeta.read(tmp.sub("meta.json")) }
        do { _ = try ClipMeta.read(tmp.sub("meta.json")) } catch { #expect("\(error)".contains(tmp.sub("meta.json"))) }
    }

    /// A bundle as minted, then each way it can be damaged since: each is named, file and what is wrong.
    /// A meta.json no capture could have written is refused by `read`, naming the field: a host reads what a device
    /// sent and does arithmetic on it (a clip's bytes summed, t0 less time zero, t0 onto the host clock). Before, a
    /// bundle listing two files of 2^63 − 808 bytes trapped `ppc-host catalogue rebuild` and every host start after.
    @Test func aMetaNoCaptureCouldWriteIsRefusedByField() throws {
        let tmp = TemporaryDirectory()
        let cases: [(String, (inout ClipMeta) -> Void)] = [
            (
                "files.clip.mp4.bytes 9223372036854775000 is out of range",
                { $0.files["clip.mp4"]?.bytes = 9_223_372_036_854_775_000 }
            ),
            ("files.clip.mp4.bytes -1 is out of range", { $0.files["clip.mp4"]?.bytes = -1 }),
            ("t0Ns.value 9223372036854775807 is out of range", { $0.t0Ns.value = .max }),
            ("window.clipTimeZeroNs -9223372036854775808 is out of range", { $0.window.clipTimeZeroNs = .min }),
            ("captureProfile.framesPerSecond 0 is out of range", { $0.captureProfile.framesPerSecond = 0 }),
            (
                "files: a name '../../etc/passwd' has '/'",
                { $0.files["../../etc/passwd"] = .init(bytes: 1, xxh3: "00") }
            ),
            ("files lists meta.json itself", { $0.files["meta.json"] = .init(bytes: 1, xxh3: "00") }),
            (
                "files (how many) 17 is out of range",
                { m in for i in 0..<16 { m.files["f\(i)"] = .init(bytes: 1, xxh3: "00") } }
            ),
            ("audio.nsPerSample.value 0.0 is out of range", { $0.audio = audio(rate: 48_000, nsPerSample: 0) }),
            ("audio.sampleRate 0 is out of range", { $0.audio = audio(rate: 0, nsPerSample: 20_833) }),
        ]
        func audio(rate: Int, nsPerSample: Double) -> ClipMeta.Audio {
            .init(
                file: "audio.wav", sampleRate: rate, firstSample: 0, samples: 96_000, missingSamples: 0,
                windowNs: .init(2_000_000_000, "assumed"),
                preNs: .init(1_000_000_000, "assumed"), firstSampleNs: .init(0, "derived"),
                nsPerSample: .init(nsPerSample, "derived"))
        }
        var whole = Self.sample
        whole.audio = audio(rate: 48_000, nsPerSample: 1e9 / 48_000)
        #expect(Self.sample.problem == nil && whole.problem == nil)
        for (said, harm) in cases {
            var meta = Self.sample
            harm(&meta)
            try meta.encoded().write(to: URL(fileURLWithPath: tmp.sub("meta.json")))
            do {
                _ = try ClipMeta.read(tmp.sub("meta.json"))
                Issue.record("\(said): read")
            } catch let e as PayloadError {
                #expect(e.code == .badBundle && e.message.contains("meta.json: \(said)"), "\(e.message)")
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func aBundleIsCheckedAgainstWhatItsMetaRecordedAtMint() throws {
        let tmp = TemporaryDirectory()
        let video: [UInt8] = Array((0..<5000).map { UInt8($0 % 251) })
        func mint() throws {
            try? FileManager.default.removeItem(atPath: tmp.sub("b"))
            try FileManager.default.createDirectory(atPath: tmp.sub("b"), withIntermediateDirectories: true)
            var meta = Self.sample
            meta.files = ["clip.mp4": .init(bytes: video.count, xxh3: XXH3.hex(XXH3.hash(video)))]
            try Data(video).write(to: URL(fileURLWithPath: tmp.sub("b/clip.mp4")))
            try meta.encoded().write(to: URL(fileURLWithPath: tmp.sub("b/meta.json")))
        }
        try mint()
        #expect(try ClipMeta.verifyBundle(tmp.sub("b")).clipId == Self.sample.clipId)
        let damage: [(String, () throws -> Void)] = [
            (
                "its bytes are not those minted",
                {
                    var v = video
                    v[2500] ^= 1
                    try Data(v).write(to: URL(fileURLWithPath: tmp.sub("b/clip.mp4")))
                }
            ),
            (
                "4999 bytes, but meta.json recorded 5000",
                { try Data(video.dropLast()).write(to: URL(fileURLWithPath: tmp.sub("b/clip.mp4"))) }
            ),
            ("clip.mp4: missing", { try FileManager.default.removeItem(atPath: tmp.sub("b/clip.mp4")) }),
            (
                "view.mp4: not among the files meta.json recorded",
                { try Data([1]).write(to: URL(fileURLWithPath: tmp.sub("b/view.mp4"))) }
            ),
            (
                "meta.json: cannot read (missing)",
                { try FileManager.default.removeItem(atPath: tmp.sub("b/meta.json")) }
            ),
            (
                "meta.json: not a clip's meta.json",
                { try Data("{".utf8).write(to: URL(fileURLWithPath: tmp.sub("b/meta.json"))) }
            ),
            // A FIFO where a file should be is named at once; before, reading it waited for a writer for ever.
            (
                "clip.mp4: open (a FIFO, not a regular file)",
                {
                    try FileManager.default.removeItem(atPath: tmp.sub("b/clip.mp4"))
                    try #require(mkfifo(tmp.sub("b/clip.mp4"), 0o600) == 0)
                }
            ),
            (
                "meta.json: cannot read (open (a FIFO, not a regular file)",
                {
                    try FileManager.default.removeItem(atPath: tmp.sub("b/meta.json"))
                    try #require(mkfifo(tmp.sub("b/meta.json"), 0o600) == 0)
                }
            ),
        ]
        for (said, harm) in damage {
            try mint()
            try harm()
            do {
                _ = try ClipMeta.verifyBundle(tmp.sub("b"))
                Issue.record("\(said): passed")
            } catch {
                #expect(error.code == .badBundle && error.message.contains(said), "\(error.message)")
            }
        }
    }
}
