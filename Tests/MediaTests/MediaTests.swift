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

    /// Issue 33: a Y4M header claiming 2 147 483 647 fps reached the encoder's setup and trapped `selftest` and `run`
    /// (SIGILL). Every figure a file declares is held to a range as it is read, and the refusal names the file.
    @Test(arguments: ["F2147483647:1", "F0:0", "F1:2147483647", "F30001:3"])
    func aFrameRateNoCameraHasIsRefusedNamingTheFile(rate: String) throws {
        let tmp = TemporaryDirectory()
        let path = tmp.sub("claim.y4m")
        let frame = Data("FRAME\n".utf8) + Data(count: 64 * 48 * 3 / 2)
        try (Data("YUV4MPEG2 W64 H48 \(rate) Ip A1:1 C420jpeg\n".utf8) + frame + frame).write(
            to: URL(fileURLWithPath: path))
        do {
            let r = try MediaReader(path, timeoutSeconds: 5)
            // A rate the reader takes is one a camera could have (or none declared, said by the source as such).
            let fps = r.video?.framesPerSecond ?? -1
            #expect(fps == 0 || MediaReader.frameRateRange.contains(fps), "\(rate): \(fps)")
        } catch {
            #expect(error.path == path && error.description.contains("frames per second"), "\(error)")
        }
    }

    @Test func noFragmentsIsAnError() throws {
        let tmp = TemporaryDirectory()
        #expect(throws: MediaError.self) {
            try ClipRemuxer.remux(fragments: [], to: tmp.sub("clip.mp4"), frameIntervalTicks: 750)
        }
    }

    @Test func anUnwritableOutputIsNamed() throws {
        let tmp = TemporaryDirectory()
        let session = try EncoderSession(
            .init(codec: .h264, width: 64, height: 64, framesPerSecond: 30, bitrateBps: 200_000, gopFrames: 15))
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
