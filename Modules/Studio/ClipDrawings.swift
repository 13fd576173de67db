import Foundation
import JSONInput
import Syscall

/// What a coach drew on a clip's frames to measure the swing — a line (its tilt from the horizontal: a shaft, a spine)
/// or an angle (three points, the middle one its vertex: a wrist, a knee) — kept beside the clip
/// (`LIBRARY/<device>/<clipId>/drawings.json`, written whole or not at all). Points are fractions of the video frame
/// (0…1 across, 0…1 down), so a drawing stays on the body whatever size the page shows the video at; each drawing
/// belongs to the video time (s) it was drawn at.
public enum ClipDrawings {
    public static let fileName = "drawings.json"
    /// The most drawings a clip keeps, and the largest file read back.
    public static let maxDrawings = 500, maxFileBytes = 1 << 20

    public struct Drawing: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable { case line, angle }
        public var kind: Kind
        /// Video time of the frame it was drawn on, s.
        public var t: Double
        /// [x, y] fractions of the frame: two for a line, three for an angle (the vertex in the middle).
        public var points: [[Double]]

        public init(kind: Kind, t: Double, points: [[Double]]) {
            self.kind = kind
            self.t = t
            self.points = points
        }
    }

    /// Why `drawings` cannot be kept, naming the drawing and field; nil when they can.
    public static func problem(_ drawings: [Drawing]) -> String? {
        guard drawings.count <= maxDrawings else { return "\(drawings.count) drawings: at most \(maxDrawings) a clip" }
        for (i, d) in drawings.enumerated() {
            guard d.t.isFinite, (0...86_400).contains(d.t) else {
                return "drawings[\(i)].t \(d.t): a video time in seconds, 0…86400"
            }
            let want = d.kind == .line ? 2 : 3
            guard d.points.count == want else {
                return "drawings[\(i)]: a \(d.kind) has \(want) points, not \(d.points.count)"
            }
            for (k, p) in d.points.enumerated() {
                guard p.count == 2, p.allSatisfy({ $0.isFinite && (0...1).contains($0) }) else {
                    return "drawings[\(i)].points[\(k)] \(p): [x, y], each a fraction of the frame from 0 to 1"
                }
            }
        }
        return nil
    }

    /// The drawings beside the clip in `directory` ([] when none). A file that does not read as drawings is an error
    /// naming it.
    public static func read(_ directory: String) throws -> [Drawing] {
        let path = "\(directory)/\(fileName)"
        guard FileSystem.exists(path) else { return [] }
        let drawings: [Drawing]
        do {
            let bytes = try FileSystem.readSmallFile(path, limit: maxFileBytes, regularFileOnly: true)
            drawings = try JSONInput.decode(File.self, from: Data(bytes)).drawings
        } catch { throw DrawingsError("\(path): not a clip's drawings (\(error))") }
        if let why = problem(drawings) { throw DrawingsError("\(path): \(why)") }
        return drawings
    }

    /// Writes `drawings` beside the clip in `directory`, whole or not at all and durably.
    public static func write(_ drawings: [Drawing], to directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try FileSystem.writeAtomically(
            [UInt8](try encoder.encode(File(drawings: drawings))), to: "\(directory)/\(fileName)")
    }

    struct File: Codable {
        var format = "ppc-clip-drawings"
        var version = 1
        var drawings: [Drawing]
    }

    public struct DrawingsError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }
}
