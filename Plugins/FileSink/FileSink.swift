import Config
import Foundation
import Glibc
import Pipeline
import Syscall

/// `file`: bundles under `DIR/clips/<clipID>/` (DIR: the `dir` parameter, else the session's output directory).
///
/// Atomic: the bundle is staged complete and fsynced beside the destination, then renamed into place and the parent
/// directory fsynced — a half-written bundle never appears under its final name.
public final class FileSink: ClipSink {
    let directory: String?
    var clips = ""

    public init(directory: String?) { self.directory = directory }

    public func open(_ context: SessionContext) throws {
        clips = "\(directory ?? context.outputDirectory)/clips"
        try FileSystem.makeDirectory(directory ?? context.outputDirectory)
        try FileSystem.makeDirectory(clips)
    }

    public func deliver(staged: String, clipID: String) throws -> String {
        let destination = "\(clips)/\(clipID)"
        guard !FileSystem.exists(destination) else {
            throw SystemError(errno: EEXIST, operation: "deliver clip", path: destination)
        }
        try Self.syncTree(staged)
        if try !Self.renameWithinFilesystem(staged, destination) {
            // Another filesystem: copy aside there, sync, then rename within it.
            let aside = "\(clips)/.\(clipID).partial"
            try? FileManager.default.removeItem(atPath: aside)
            try FileManager.default.copyItem(atPath: staged, toPath: aside)
            try Self.syncTree(aside)
            try FileSystem.rename(aside, destination)
            try? FileManager.default.removeItem(atPath: staged)
        }
        try FileSystem.syncDirectory(clips)
        return destination
    }

    /// Fsyncs every file in a bundle directory, then the directory.
    static func syncTree(_ directory: String) throws {
        for name in try FileSystem.list(directory) {
            let fd = try FileDescriptor.open("\(directory)/\(name)", O_RDONLY)
            try fd.sync()
        }
        try FileSystem.syncDirectory(directory)
    }

    /// rename(2); false when the two paths are on different filesystems (EXDEV), any other failure thrown.
    static func renameWithinFilesystem(_ from: String, _ to: String) throws -> Bool {
        do {
            try FileSystem.rename(from, to)
            return true
        } catch  where error.errno == EXDEV {
            return false
        }
    }

    public func finish() throws {}

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "file", kind: .sink,
            summary:
                "Clip bundles (clip.mp4, audio.wav, index.bin, meta.json) written atomically under DIR/clips/<clipId>/.",
            parameters: [.init("dir", .string, default: .string(""), "Where (empty: the run's --out directory).")]),
        make: { p, _ in FileSink(directory: p.string("dir").isEmpty ? nil : p.string("dir")) })
}
