import Catalogue
import Foundation
import TestSupport
import Testing

@testable import Studio
@testable import WebServer

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
