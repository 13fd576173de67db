import Foundation
import FuzzDriver
import Glibc
import Media

/// A media file as a user may hand one in (WAV for `detect`, MP4/TS for the `file` source), any bytes at all. libav
/// parses the container; this fuzzes ppc's front door around it, read block by block and whole. Properties held for
/// every input:
/// - `MediaReader` opens it or refuses it with a ``MediaError`` naming the file; it never traps;
/// - reading audio and (small) video to the end never traps, never reports more samples than its buffer holds, and
///   sample positions never go backwards.
@_cdecl("FuzzMedia_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMedia(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let bytes = fuzzInput(data, size)
    let ext = ["wav", "mp4", "ts", "mkv"][Int(bytes[0]) % 4]
    let path = scratchFile(bytes.dropFirst(), name: "media", ext: ext)
    defer { unlink(path) }
    // Read whole (detect's recordings, the studio's waveform of a clip's audio.wav): refuses or reads, never traps.
    if let whole = try? MediaReader.wholeAudio(path) {
        precondition(whole.sampleRate > 0, "audio read at \(whole.sampleRate) Hz")
    }
    // What a host measures a device's clip.mp4 by (demux only): refuses or says, never traps.
    if ext != "wav", let facts = try? ClipProbe.facts(path) {
        precondition(
            facts.frames >= 0 && facts.framesPerSecond.isFinite && facts.framesPerSecond >= 0, "probed \(facts)")
    }
    guard let reader = try? MediaReader(path, timeoutSeconds: 1) else { return 0 }
    if reader.audioSampleRate != nil {
        var block = [Float](repeating: 0, count: 4096)
        var last: Int64 = .min
        for _ in 0..<256 {
            guard let b = try? block.withUnsafeMutableBufferPointer({ try reader.readAudio(into: $0) }) else { break }
            precondition(b.count <= block.count, "\(b.count) samples reported into a buffer of \(block.count)")
            precondition(b.firstSample >= last, "sample position went back from \(last) to \(b.firstSample)")
            last = b.firstSample
        }
    }
    if let v = reader.video, v.width > 0, v.height > 0, v.width * v.height <= 640 * 480 {
        let luma = UnsafeMutablePointer<UInt8>.allocate(capacity: v.width * v.height)
        let chroma = UnsafeMutablePointer<UInt8>.allocate(capacity: v.width * ((v.height + 1) / 2) + v.width)
        defer {
            luma.deallocate()
            chroma.deallocate()
        }
        for _ in 0..<32 {
            guard (try? reader.readVideo(luma: luma, lumaStride: v.width, chroma: chroma, chromaStride: v.width)) != nil
            else { break }
        }
    }
    return 0
}
