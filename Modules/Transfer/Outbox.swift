import Foundation
import Syscall

/// A device's durable queue of clips owed to a host: `OUT/outbox/<clipId>/`, each a finished bundle moved in before
/// its transfer starts and removed only when the host has confirmed it. A device that dies, or whose host is down,
/// keeps its clips here; the next `ppc-tool transfer drain` (or the next session's network sink) sends them, and the
/// host's exactly-once rule makes a clip sent twice arrive once.
public struct Outbox: Sendable {
    public let directory: String

    public init(directory: String) throws {
        self.directory = directory
        try FileSystem.makeDirectory(directory)
    }

    /// Moves a staged bundle in (one rename, then the directory fsynced); returns its queued path. A clip already queued
    /// under that id is never replaced: it is still owed to a host.
    public func enqueue(staged: String, clipID: String) throws -> String {
        let path = "\(directory)/\(clipID)"
        if staged != path {
            if FileSystem.exists(path) {
                throw SystemError(
                    errno: EEXIST, operation: "queue clip (a clip with this id is still owed to a host; it is kept)",
                    path: path)
            }
            try FileSystem.rename(staged, path)
            try FileSystem.syncDirectory(directory)
        }
        return path
    }

    /// Clips owed, in name order.
    public var pending: [String] {
        ((try? FileSystem.list(directory)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    public func path(of clipID: String) -> String { "\(directory)/\(clipID)" }

    /// The host confirmed it: it leaves the queue.
    public func remove(_ clipID: String) throws {
        try FileManager.default.removeItem(atPath: path(of: clipID))
        try FileSystem.syncDirectory(directory)
    }
}
