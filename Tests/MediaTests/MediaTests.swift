import Foundation
import TestSupport
import Testing

@testable import Media

@Suite("Media: bad input gets an error naming the file")
struct MediaTests {
    @Test func aFileThatIsNotMediaIsNamed() throws {
        let tmp = TemporaryDirectory()
        let bogus = tmp.sub("not-video.ts")
        try Data("this is not an MPEG transport stream".utf8).write(to: URL(fileURLWithPath: bogus))
        let error = #expect(throws: MediaError.self) {
            try ClipRemuxer.remux(fragments: [bogus], to: tmp.sub("clip.mp4"), frameIntervalTicks: 750)
        }
        #expect(error?.path == bogus)
    }

    @Test func noFragmentsIsAnError() throws {
        let tmp = TemporaryDirectory()
        #expect(throws: MediaError.self) { try ClipRemuxer.remux(fragments: [], to: tmp.sub("clip.mp4"), frameIntervalTicks: 750) }
    }

    @Test func anUnwritableOutputIsNamed() throws {
        let tmp = TemporaryDirectory()
        let session = try EncoderSession(.init(codec: .h264, width: 64, height: 64, framesPerSecond: 30, bitrateBps: 200_000, gopFrames: 15))
        var fragment = [UInt8]()
        let muxer = try FragmentMuxer(encoder: session) { fragment += $0 }
        try muxer.begin()
        for i in 0..<15 {
            let planes = try session.nextFrame()
            planes.luma.update(repeating: UInt8(i * 8), count: planes.lumaStride * 64)
            planes.chroma.update(repeating: 128, count: planes.chromaStride * 32)
            try session.encode(pts: Int64(i) * 3000, forceKeyframe: i == 0) { try muxer.write($0) }
        }
        try muxer.end()
        #expect(fragment.count > 0 && fragment.count % 188 == 0)  // whole TS packets
        #expect(fragment[0] == 0x47)  // TS sync byte
        let ts = tmp.sub("f.ts")
        try Data(fragment).write(to: URL(fileURLWithPath: ts))
        let error = #expect(throws: MediaError.self) {
            try ClipRemuxer.remux(fragments: [ts], to: "/nonexistent-dir/clip.mp4", frameIntervalTicks: 3000)
        }
        #expect(error?.path == "/nonexistent-dir/clip.mp4")
    }
}
