import Foundation
import FragmentRing
import Media
import PayloadSource
import Syscall

/// Turns a frozen window into `clip.mp4`: its fragments, remuxed (not re-encoded) into a faststart MP4 whose
/// timestamps start at the clip's first frame, which is a keyframe because every fragment starts on one.
public enum ClipMinter {
    public struct Clip: Sendable {
        public let path: String
        public let frames: Int
        /// Capture-clock time of the clip's first frame (its time 0), ns.
        public let firstFrameNs: Int64
        public let report: ClipRemuxer.Report
    }

    /// The sound a clip carries: mono samples, their rate, and the capture-clock time of the first.
    public struct Sound: Sendable {
        public var samples: [Float]
        public var sampleRate: Int
        public var firstSampleNs: Int64
        public init(samples: [Float], sampleRate: Int, firstSampleNs: Int64) {
            self.samples = samples
            self.sampleRate = sampleRate
            self.firstSampleNs = firstSampleNs
        }
    }

    /// Writes the clip of `window` to `path`. The fragments are first linked beside it (zero-copy, and safe from the
    /// ring recycling them mid-remux), then remuxed; the links are removed after. With `sound`, the clip carries it as a
    /// track placed on the same capture clock as its frames (`ClipSoundTrack`).
    public static func mint<B: PayloadBacking>(
        _ window: SwingWindow<B>, to path: String, frameIntervalNs: Int64, fragmentExtension: String = "ts",
        sound: Sound? = nil
    ) throws -> Clip {
        guard let first = window.fragments.first else {
            throw MediaError(operation: "mint clip", path: path, "the window has no fragments")
        }
        let staging = path + ".fragments"
        try? FileManager.default.removeItem(atPath: staging)
        try FileSystem.makeDirectory(staging)
        defer { try? FileManager.default.removeItem(atPath: staging) }
        var files: [String] = []
        for f in window.fragments {
            let file = "\(staging)/\(f.info.sequence.hex).\(fragmentExtension)"
            _ = try window.backing.extract(f.handle, to: file)
            files.append(file)
        }
        let track = sound.map {
            ClipSoundTrack(
                samples: $0.samples, sampleRate: $0.sampleRate, startNs: $0.firstSampleNs - first.info.startNs)
        }
        let report = try ClipRemuxer.remux(
            fragments: files, to: path, frameIntervalTicks: ticks90k(frameIntervalNs), audio: track)
        return Clip(path: path, frames: report.frames, firstFrameNs: first.info.startNs, report: report)
    }
}

extension ClipMinter {
    /// Where `clip`'s sound track really puts the moment `sound`'s fractional sample `index` holds, against where it
    /// belongs (`expectedNs` on the clip's timeline): ns late, or nil when the track holds no clear copy of it
    /// (`ClipSoundCheck`).
    public static func soundOffsetNs(_ clip: Clip, sound: Sound, index: Double, expectedNs: Int64) -> Int64? {
        (try? ClipSoundCheck.offsetNs(
            clip: clip.path, original: sound.samples, index: index, sampleRate: sound.sampleRate, expectedNs: expectedNs
        )) ?? nil
    }

    /// True when `error`, from minting a clip or writing its bundle, says the disk was full: ENOSPC from a system call
    /// (`SystemError`), from libav (`MediaError`, AVERROR(ENOSPC)) or from Foundation (a POSIX error, alone or under a
    /// `CocoaError`). A caller can then keep the shot and mint it again when there is room, rather than lose it.
    public static func isDiskFull(_ error: any Error) -> Bool {
        if let e = error as? SystemError { return e.errno == ENOSPC }
        if let e = error as? MediaError { return e.code == -ENOSPC }
        if let e = error as? CocoaError, e.code == .fileWriteOutOfSpace { return true }
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return ns.code == Int(ENOSPC) }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying !== ns {
            return isDiskFull(underlying)
        }
        return false
    }
}
