import Audio
import Checksum
import Foundation
import PayloadSource
import Syscall
import TimelineIndex

/// A clip bundle put together where nothing reads it until it is whole: `OUT/.staging/<clipId>/` holds `clip.mp4`
/// (``ClipMinter``), `audio.wav`, `index.bin` (the window's timeline) and `meta.json` (``ClipMeta``, listing every other
/// file's size and XXH3). Each file is written whole or not at all, and a failure names the file (a full disk says
/// "write …/audio.wav.tmp: No space left on device"). Sinks then move or copy the finished directory.
public struct ClipBundleWriter: Sendable {
    /// The staging directory of this bundle.
    public let directory: String

    /// Where bundles of the run writing to `out` are put together: `OUT/.staging`.
    public static func stagingDirectory(out: String) -> String { "\(out)/.staging" }

    /// Makes `OUT/.staging/<clipID>/` anew (whatever an earlier try left there goes first).
    public init(out: String, clipID: String) throws {
        let staging = Self.stagingDirectory(out: out)
        directory = "\(staging)/\(clipID)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileSystem.makeDirectory(staging)
        try FileSystem.makeDirectory(directory)
    }

    /// Where the clip's video goes (``ClipMinter/mint(_:to:frameIntervalNs:fragmentExtension:)`` writes it).
    public var videoPath: String { "\(directory)/clip.mp4" }

    /// `audio.wav`: the candidate's window of mono samples.
    public func writeAudio(_ samples: [Float], sampleRate: Int) throws {
        try FileSystem.writeAtomically(
            WAVWriter.data(samples: samples, sampleRate: sampleRate), to: "\(directory)/audio.wav")
    }

    /// `index.bin`: the window's timeline snapshot.
    public func writeTimeline(_ snapshot: TimelineSnapshot) throws {
        try FileSystem.writeAtomically(snapshot.encoded(), to: "\(directory)/index.bin")
    }

    /// `meta.json`, last: every file staged so far is listed in `meta.files` with its size and XXH3, then it is written.
    /// Returns the bundle's files and their sizes (meta.json included).
    @discardableResult
    public func finish(_ meta: ClipMeta) throws -> [String: Int] {
        var meta = meta
        var sizes: [String: Int] = [:]
        for name in try FileSystem.list(directory).sorted() where name != "meta.json" {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)")))
            meta.files[name] = ClipMeta.File(bytes: bytes.count, xxh3: XXH3.hex(XXH3.hash(bytes)))
            sizes[name] = bytes.count
        }
        let json = [UInt8](try meta.encoded())
        try FileSystem.writeAtomically(json, to: "\(directory)/meta.json")
        sizes["meta.json"] = json.count
        return sizes
    }
}
