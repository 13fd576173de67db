import Foundation
import JSONInput
import Library
import Syscall

/// The moments of a swing a coach marks — address, top and finish; the impact is t0 itself — as times on the swing's
/// common timeline (s from the impact on the host clock, so one set serves every angle), and the tempo they give: the
/// backswing (address → top) against the downswing (top → impact), a tour player's near 3 : 1. Kept beside every angle
/// (`keypositions.json`, written whole or not at all), so a swing made again from the library has them.
public struct KeyPositions: Codable, Sendable, Equatable {
    @Nullable public var address: Double?
    @Nullable public var top: Double?
    @Nullable public var finish: Double?

    public init(address: Double? = nil, top: Double? = nil, finish: Double? = nil) {
        self.address = address
        self.top = top
        self.finish = finish
    }

    public static let fileName = "keypositions.json"
    /// How far from the impact a key position may be marked, s (a clip is seconds long).
    public static let reach = 60.0

    /// Why these positions cannot stand — out of reach, or out of a swing's order (address before top before the
    /// impact before finish) — naming the field; nil when they can.
    public var problem: String? {
        let named: [(String, Double?)] = [("address", address), ("top", top), ("finish", finish)]
        for (name, v) in named {
            if let v, !v.isFinite || abs(v) > Self.reach {
                return "\(name) \(v): seconds from the impact, within ±\(Int(Self.reach))"
            }
        }
        if let a = address, a >= 0 { return "address \(a): before the impact (a negative time)" }
        if let t = top, t >= 0 { return "top \(t): before the impact (a negative time)" }
        if let f = finish, f <= 0 { return "finish \(f): after the impact (a positive time)" }
        if let a = address, let t = top, a >= t { return "address \(a) is not before top \(t)" }
        return nil
    }

    /// Backswing and downswing, s, and their ratio, once address and top are marked.
    public var tempo: Tempo? {
        guard let a = address, let t = top, t > a, t < 0 else { return nil }
        return Tempo(backswingSeconds: t - a, downswingSeconds: -t, ratio: (t - a) / -t)
    }

    public struct Tempo: Codable, Sendable, Equatable {
        public var backswingSeconds: Double
        public var downswingSeconds: Double
        /// Backswing : downswing, as n : 1.
        public var ratio: Double
    }

    struct File: Codable {
        var format = "ppc-key-positions"
        var version = 1
        var positions: KeyPositions
    }

    /// The positions beside the clip in `directory` (none marked when there is no file); a file that does not read is
    /// an error naming it.
    public static func read(_ directory: String) throws -> KeyPositions {
        let path = "\(directory)/\(fileName)"
        guard FileSystem.exists(path) else { return KeyPositions() }
        let p: KeyPositions
        do {
            p = try JSONInput.decode(
                File.self, from: Data(FileSystem.readSmallFile(path, limit: 1 << 16, regularFileOnly: true))
            ).positions
        } catch { throw PositionsError("\(path): not a swing's key positions (\(error))") }
        if let why = p.problem { throw PositionsError("\(path): \(why)") }
        return p
    }

    public func write(to directory: String) throws {
        try LibraryFile.write(File(positions: self), to: "\(directory)/\(Self.fileName)")
    }

    public struct PositionsError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }
}
