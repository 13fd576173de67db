import FragmentRing
import Foundation
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

    /// Writes the clip of `window` to `path`. The fragments are first linked beside it (zero-copy, and safe from the
    /// ring recycling them mid-remux), then remuxed; the links are removed after.
    public static func mint<B: PayloadBacking>(
        _ window: SwingWindow<B>, to path: String, frameIntervalNs: Int64, fragmentExtension: String = "ts"
    ) throws -> Clip {
        guard let first = window.fragments.first else { throw MediaError(operation: "mint clip", path: path, "the window has no fragments") }
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
        let report = try ClipRemuxer.remux(fragments: files, to: path, frameIntervalTicks: ticks90k(frameIntervalNs))
        return Clip(path: path, frames: report.frames, firstFrameNs: first.info.startNs, report: report)
    }
}

extension ClipMinter {
    /// True when `error`, from minting a clip or writing its bundle, says the disk was full: ENOSPC from a system call
    /// (`SystemError`), from libav (`MediaError`, AVERROR(ENOSPC)) or from Foundation (a POSIX error, alone or under a
    /// `CocoaError`). A caller can then keep the shot and mint it again when there is room, rather than lose it.
    public static func isDiskFull(_ error: any Error) -> Bool {
        if let e = error as? SystemError { return e.errno == ENOSPC }
        if let e = error as? MediaError { return e.code == -ENOSPC }
        if let e = error as? CocoaError, e.code == .fileWriteOutOfSpace { return true }
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return ns.code == Int(ENOSPC) }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying !== ns { return isDiskFull(underlying) }
        return false
    }
}
