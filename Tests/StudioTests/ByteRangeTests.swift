import Catalogue
import Foundation
import TestSupport
import Testing

@testable import Studio
@testable import WebServer

/// What a `Range` header asks of a file, decided as RFC 9110 §14 says — the cases civetweb 1.15 answered wrongly first.
@Suite("ByteRange: a Range is answered as the RFC says, or the whole file is sent")
struct ByteRangeTests {
    @Test func aRangeWithinTheFileIsThatPart() {
        #expect(ByteRange.resolve("bytes=100-199", size: 1000) == .part(first: 100, last: 199))
        #expect(ByteRange.resolve("bytes=100-", size: 1000) == .part(first: 100, last: 999))
        #expect(ByteRange.resolve("bytes=0-0", size: 1000) == .part(first: 0, last: 0))
        #expect(ByteRange.resolve(" bytes = 5-9 ", size: 1000) == .part(first: 5, last: 9))
        #expect(ByteRange.resolve("Bytes=5-9", size: 1000) == .part(first: 5, last: 9))
    }

    @Test func aLastBytePastTheEndStopsAtTheEnd() {
        // civetweb 1.15 promised one byte more than it sent: the client waited for it, then failed.
        #expect(ByteRange.resolve("bytes=0-99999999999", size: 1000) == .part(first: 0, last: 999))
        #expect(ByteRange.resolve("bytes=900-1100", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange.resolve("bytes=0-99999999999999999999999999", size: 1000) == .part(first: 0, last: 999))
    }

    @Test func aSuffixIsTheLastBytes() {
        #expect(ByteRange.resolve("bytes=-100", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange.resolve("bytes=-5000", size: 1000) == .part(first: 0, last: 999))
        #expect(ByteRange.resolve("bytes=-0", size: 1000) == .unsatisfiable)
    }

    @Test func aRangePastTheEndIsUnsatisfiable() {
        #expect(ByteRange.resolve("bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=999999999-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=18446744073709551615-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=0-", size: 0) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=-10", size: 0) == .unsatisfiable)
    }

    @Test func anInvalidRangeOrSeveralAreIgnored() {
        for header in [
            "bytes=5-2", "bytes=abc", "items=0-5", "bytes=", "bytes=-", "bytes=1-2-3", "bytes=+1-2", "bytes=0-1,5-9",
            "bytes=0-1,", "0-5", "bytes=٣-٥",
        ] {
            #expect(ByteRange.resolve(header, size: 1000) == .whole, "\(header)")
        }
        #expect(ByteRange.resolve(nil, size: 1000) == .whole)
    }

    /// Whatever the header, a part lies inside the file and is not empty.
    @Test func anyHeaderGivesAPartInsideTheFile() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("bytes=0123456789-, 9999999999999999999")
        for _ in 0..<20_000 {
            let header = String(
                (0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            let size = Int64.random(in: 0...5_000, using: &rng)
            if case .part(let first, let last) = ByteRange.resolve(header, size: size) {
                #expect(0 <= first && first <= last && last < size, "\(header) of \(size): \(first)-\(last)")
            }
        }
    }
}

extension StudioTests {
    /// The same cases over HTTP, against a clip in the library: each answer's length is what it sends.
    @Test func mediaRangesAreAnsweredAsTheRFCSays() throws {
        let s = try studio()
        defer { s.stop() }
        let id = try #require(try Self.catalogued().clips().first?.clipID)
        let whole = try Data(contentsOf: URL(fileURLWithPath: "\(Self.library.path)/clips/\(id)/clip.mp4"))
        let size = whole.count
        let url = "/media/\(id)/clip.mp4"

        let past = try get(s, url, headers: ["Range": "bytes=0-99999999999"])
        #expect(past.status == 206 && past.body == whole, "\(past.status) \(past.body.count) of \(size)")
        #expect(past.headers["content-range"] == "bytes 0-\(size - 1)/\(size)")
        let end = try get(s, url, headers: ["Range": "bytes=\(size - 10)-\(size + 10)"])
        #expect(end.status == 206 && end.body == whole[(size - 10)...])
        let suffix = try get(s, url, headers: ["Range": "bytes=-100"])
        #expect(suffix.status == 206 && suffix.body == whole[(size - 100)...])
        #expect(suffix.headers["content-range"] == "bytes \(size - 100)-\(size - 1)/\(size)")
        for header in ["bytes=\(size)-", "bytes=-0"] {
            let r = try get(s, url, headers: ["Range": header])
            #expect(
                r.status == 416 && r.headers["content-range"] == "bytes */\(size)",
                "\(header): \(r.status) \(r.headers)")
            #expect(String(decoding: r.body, as: UTF8.self).contains("\(size) bytes"))
        }
        for header in ["bytes=5-2", "bytes=0-1,5-9"] {
            let r = try get(s, url, headers: ["Range": header])
            #expect(r.status == 200 && r.body == whole, "\(header): \(r.status) \(r.body.count)")
        }
        // Validators: the range's answer carries civetweb's, so each revalidates the other.
        let plain = try get(s, url)
        let ranged = try get(s, url, headers: ["Range": "bytes=0-9"])
        #expect(plain.headers["etag"] != nil && ranged.headers["etag"] == plain.headers["etag"])
        #expect(ranged.headers["last-modified"] == plain.headers["last-modified"])
        let etag = try #require(plain.headers["etag"])
        #expect(try get(s, url, headers: ["Range": "bytes=0-9", "If-Range": etag]).status == 206)
        #expect(try get(s, url, headers: ["Range": "bytes=0-9", "If-Range": "\"another\""]).body == whole)
        #expect(try get(s, url, headers: ["Range": "bytes=0-9", "If-None-Match": etag]).status == 304)
        let head = try request(s, "HEAD", url, headers: ["Range": "bytes=0-9"])
        #expect(head.status == 206 && head.body.isEmpty && head.headers["content-length"] == "10")
    }

    @Test func aQueryNumberOutOfItsRangeIsRefusedByName() throws {
        let s = try studio()
        defer { s.stop() }
        let id = try #require(try Self.catalogued().clips().first?.clipID)
        for (path, name) in [
            ("/api/swings?limit=-5", "limit=-5"), ("/api/swings?limit=1e9", "limit=1e9"),
            ("/api/clips/\(id)/waveform?buckets=abc", "buckets=abc"),
            ("/api/clips/\(id)/waveform?buckets=99999999999", "buckets=99999999999"),
        ] {
            let r = try get(s, path)
            #expect(r.status == 400 && String(decoding: r.body, as: UTF8.self).contains(name), "\(path): \(r.status)")
        }
        #expect(try get(s, "/api/swings?limit=1").status == 200)
        #expect(try get(s, "/api/clips/\(id)/waveform?buckets=20000").status == 200)
    }
}

extension StudioTests {
    /// A clip's audio is seconds long; an audio.wav of gigabytes (a device's bug, or worse) is refused by its size, not
    /// read whole into a page's request.
    @Test func aWaveformIsNotDrawnFromAnAudioFileNoClipWouldHave() throws {
        let tmp = TemporaryDirectory("ppc-studio-huge")
        let dir = tmp.sub("dev/huge-001")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let fd = open(dir + "/audio.wav", O_CREAT | O_WRONLY, 0o644)
        #expect(ftruncate(fd, off_t(Studio.maxWaveformFileBytes + 1)) == 0)  // sparse: no disk spent
        close(fd)
        let catalogue = try Catalogue(path: tmp.sub("catalogue.sqlite"))
        try catalogue.record(
            CatalogueClip(
                clipID: "huge-001", device: "dev", session: "huge", sessionID: "x", t0DeviceNs: 0, t0HostNs: nil,
                t0UncertaintyNs: nil, frames: 1,
                captureProfile: "320x180@120 h264", belowPolicy: nil, receivedAt: "2026-12-02T10:00:00Z", path: dir,
                bytes: 1),
            files: [])
        let s = try Studio(host: "127.0.0.1", port: 0, library: tmp.path, catalogue: catalogue, live: { [] })
        defer { s.stop() }
        let r = try get(s, "/api/clips/huge-001/waveform")
        #expect(
            r.status == 422 && String(decoding: r.body, as: UTF8.self).contains("more than a clip's audio"),
            "\(r.status) \(String(decoding: r.body, as: UTF8.self))")
    }
}
