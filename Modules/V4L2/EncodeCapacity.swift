import Foundation
import JSONInput
import Syscall

/// How many pixels a second this machine's encoder sustained, as `ppc-tool selftest` measured it: the figure that
/// decides between a camera's raw mode (ppc encodes) and its Motion JPEG mode (passed through). Kept in the state
/// directory, so every later mode choice on this machine uses it and says where it came from.
public struct EncodeCapacity: Codable, Sendable, Equatable {
    public var pixelsPerSecond: Double
    /// measured (a self-test) or assumed (a person's figure in a manifest).
    public var provenance: String
    /// What: encoder and preset, format, date, build — or where a person declared it.
    public var what: String

    public init(pixelsPerSecond: Double, provenance: String, what: String) {
        self.pixelsPerSecond = pixelsPerSecond
        self.provenance = provenance
        self.what = what
    }

    /// One line for a card: "measured: x264 ultrafast 1280x720@120 nv12, selftest 2026-12-01T12:00:00Z, release build".
    public var basis: String { "\(provenance): \(what)" }

    /// `$XDG_STATE_HOME/ppc/encode-capacity.json`, or `~/.local/state/ppc/…`.
    public static var defaultPath: String { StateDirectory.resolve(app: "ppc") + "/encode-capacity.json" }

    /// The recorded figure, or nil when none was recorded or the file is not one (never trusted blindly: a value that is
    /// not a positive finite number is ignored).
    public static func load(_ path: String = defaultPath) -> EncodeCapacity? {
        guard let bytes = try? FileSystem.readSmallFile(path, limit: 1 << 20, regularFileOnly: true),
            let c = try? JSONInput.decode(EncodeCapacity.self, from: Data(bytes)),
            c.pixelsPerSecond.isFinite, c.pixelsPerSecond > 0
        else { return nil }
        return c
    }

    /// Records the figure (atomically).
    public func save(_ path: String = defaultPath) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try FileSystem.writeAtomically([UInt8](try encoder.encode(self)), to: path)
    }
}
