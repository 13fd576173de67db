import Foundation
import JSONInput
import Library
import Syscall

/// What a coach drew on a clip's frames — a line (its tilt from the horizontal: a shaft, a spine), an angle (three
/// points, the middle one its vertex: a wrist, a knee), a circle (centre and a point on it: the head), an arrow, a
/// text, a freehand stroke — kept beside the clip (`LIBRARY/<device>/<clipId>/drawings.json`, written whole or not at
/// all) with the states before and after each change, so undo and redo outlast a reload. Points are fractions of the
/// video frame (0…1 across, 0…1 down), so a drawing stays on the body whatever size the page shows the video at; each
/// drawing belongs to the video time (s) it was drawn at, and shows near it — or, drawn for the whole clip (a reference
/// line), all through it.
public enum ClipDrawings {
    public static let fileName = "drawings.json"
    /// The most drawings a clip keeps, points a freehand stroke keeps, states undo keeps, and the largest file read.
    public static let maxDrawings = 500, maxStrokePoints = 500, maxHistory = 50, maxFileBytes = 8 << 20

    public struct Drawing: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable, CaseIterable { case line, angle, circle, arrow, text, freehand }
        /// Shown near the frame it was drawn on (`frame`), or all through the clip (`clip`).
        public enum Span: String, Codable, Sendable { case frame, clip }
        public var kind: Kind
        /// Video time of the frame it was drawn on, s.
        public var t: Double
        /// [x, y] fractions of the frame: two for a line, an arrow (tail, head) or a circle (centre, a point on it),
        /// three for an angle (the vertex in the middle), one for a text, 2…500 for a freehand stroke.
        public var points: [[Double]]
        /// `#rrggbb`; nil: the studio's yellow.
        public var color: String?
        /// nil: `frame`.
        public var span: Span?
        /// A text's words.
        public var text: String?

        public init(
            kind: Kind, t: Double, points: [[Double]], color: String? = nil, span: Span? = nil, text: String? = nil
        ) {
            self.kind = kind
            self.t = t
            self.points = points
            self.color = color
            self.span = span
            self.text = text
        }

        /// How many points the kind takes.
        var pointCounts: ClosedRange<Int> {
            switch kind {
            case .line, .arrow, .circle: 2...2
            case .angle: 3...3
            case .text: 1...1
            case .freehand: 2...ClipDrawings.maxStrokePoints
            }
        }
    }

    /// Why `drawings` cannot be kept, naming the drawing and field; nil when they can.
    public static func problem(_ drawings: [Drawing]) -> String? {
        guard drawings.count <= maxDrawings else { return "\(drawings.count) drawings: at most \(maxDrawings) a clip" }
        for (i, d) in drawings.enumerated() {
            guard d.t.isFinite, (0...86_400).contains(d.t) else {
                return "drawings[\(i)].t \(d.t): a video time in seconds, 0…86400"
            }
            let want = d.pointCounts
            guard want.contains(d.points.count) else {
                let n =
                    want.lowerBound == want.upperBound ? "\(want.lowerBound)" : "\(want.lowerBound)…\(want.upperBound)"
                return "drawings[\(i)]: a \(d.kind) has \(n) points, not \(d.points.count)"
            }
            for (k, p) in d.points.enumerated() {
                guard p.count == 2, p.allSatisfy({ $0.isFinite && (0...1).contains($0) }) else {
                    return "drawings[\(i)].points[\(k)] \(p): [x, y], each a fraction of the frame from 0 to 1"
                }
            }
            if let c = d.color, !Self.isHexColour(c) { return "drawings[\(i)].color '\(c.prefix(20))': #rrggbb" }
            switch (d.kind, d.text) {
            case (.text, nil): return "drawings[\(i)]: a text has its words (text)"
            case (.text, let s?):
                guard !s.isEmpty, s.utf8.count <= 200, !s.unicodeScalars.contains("\u{0}") else {
                    return "drawings[\(i)].text: 1…200 bytes, no NUL"
                }
            case (_, nil): break
            case (_, _?): return "drawings[\(i)].text: only a text has words"
            }
        }
        return nil
    }

    /// `#rrggbb`: a hash and six hexadecimal digits, either case.
    static func isHexColour(_ c: String) -> Bool {
        let b = Array(c.utf8)
        return b.count == 7 && b[0] == UInt8(ascii: "#") && b.dropFirst().allSatisfy { $0.isHexDigit }
    }

    /// What is kept: the drawings now, and the states undo and redo go back and forth to.
    public struct Kept: Sendable, Equatable {
        public var drawings: [Drawing]
        public var undo: [[Drawing]]
        public var redo: [[Drawing]]
        public init(drawings: [Drawing] = [], undo: [[Drawing]] = [], redo: [[Drawing]] = []) {
            self.drawings = drawings
            self.undo = undo
            self.redo = redo
        }

        /// `now` replaces the drawings; the state before can be undone (the oldest forgotten beyond `maxHistory`).
        public mutating func replace(with now: [Drawing]) {
            guard now != drawings else { return }
            undo.append(drawings)
            if undo.count > ClipDrawings.maxHistory { undo.removeFirst(undo.count - ClipDrawings.maxHistory) }
            redo = []
            drawings = now
        }

        /// Back to the state before the last change; false when there is none.
        public mutating func stepBack() -> Bool {
            guard let last = undo.popLast() else { return false }
            redo.append(drawings)
            drawings = last
            return true
        }

        /// Forward again; false when nothing was undone since the last change.
        public mutating func stepForward() -> Bool {
            guard let next = redo.popLast() else { return false }
            undo.append(drawings)
            drawings = next
            return true
        }
    }

    /// The drawings beside the clip in `directory` ([] when none). A file that does not read is an error naming it.
    public static func read(_ directory: String) throws -> [Drawing] { try readKept(directory).drawings }

    /// The drawings and their history beside the clip in `directory`.
    public static func readKept(_ directory: String) throws -> Kept {
        let path = "\(directory)/\(fileName)"
        guard FileSystem.exists(path) else { return Kept() }
        let file: File
        do {
            let bytes = try FileSystem.readSmallFile(path, limit: maxFileBytes, regularFileOnly: true)
            file = try JSONInput.decode(File.self, from: Data(bytes))
        } catch { throw DrawingsError("\(path): not a clip's drawings (\(error))") }
        let kept = Kept(drawings: file.drawings, undo: file.undo ?? [], redo: file.redo ?? [])
        for (name, states) in [("undo", kept.undo), ("redo", kept.redo)] {
            guard states.count <= maxHistory else { throw DrawingsError("\(path): \(states.count) \(name) states") }
            for (i, s) in states.enumerated() {
                if let why = problem(s) { throw DrawingsError("\(path): \(name)[\(i)]: \(why)") }
            }
        }
        if let why = problem(kept.drawings) { throw DrawingsError("\(path): \(why)") }
        return kept
    }

    /// Writes `drawings` beside the clip in `directory` (no history), whole or not at all and durably.
    public static func write(_ drawings: [Drawing], to directory: String) throws {
        try write(Kept(drawings: drawings), to: directory)
    }

    public static func write(_ kept: Kept, to directory: String) throws {
        try LibraryFile.write(
            File(drawings: kept.drawings, undo: kept.undo, redo: kept.redo), to: "\(directory)/\(fileName)")
    }

    struct File: Codable {
        var format = "ppc-clip-drawings"
        var version = 2
        var drawings: [Drawing]
        /// Version 2: the states before (undo) and after (redo) the changes; absent in version 1.
        var undo: [[Drawing]]?
        var redo: [[Drawing]]?
    }

    public struct DrawingsError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }
}

extension UInt8 {
    /// 0-9, a-f, A-F.
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
