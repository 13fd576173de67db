import Foundation
import JSONInput
import Library
import Synchronization
import Syscall
import WebServer

extension StudioAPI {
    /// `PUT /api/swings/<id>/tags`: the swing's tags, whole (`[]` clears them).
    public struct Tags: Codable, Sendable, Equatable {
        public var tags: [String]
    }

    /// `GET /api/tags`: every tag in the library, with how many swings carry it, most used first.
    public struct TagList: Codable, Sendable, Equatable {
        public struct Tag: Codable, Sendable, Equatable {
            public var tag: String
            public var swings: Int
        }
        public var tags: [Tag]
    }
}

/// A coach's words on swings ("driver", "over the top", "drill 3"), kept by swing id in `LIBRARY/tags.json` (written
/// whole or not at all). A swing's id is kept from its first angle to its last, so its tags are too; a tag is 1…40
/// characters of text (no control characters), at most 20 a swing, compared without regard to case; at most 50 000
/// swings carry tags, so the file stays under the 64 MiB it is read within.
final class StudioTags: @unchecked Sendable {
    // @unchecked: `bySwing` is behind its Mutex.
    let path: String
    let bySwing = Mutex<[String: [String]]>([:])

    static let maxLength = 40, maxPerSwing = 20, maxSwings = 50_000

    struct File: Codable {
        var format = "ppc-tags"
        var version = 1
        var swings: [String: [String]]
    }

    init(library: String) throws {
        path = library + "/tags.json"
        guard let file = try LibraryFile.read(File.self, from: path, limit: 64 << 20, what: "a library's tags") else {
            return
        }
        for (id, tags) in file.swings {
            if let why = Self.problem(tags) { throw LibraryError("\(path): swings.\(id.prefix(60)): \(why)") }
        }
        bySwing.withLock { $0 = file.swings }
    }

    /// A tag as kept: trimmed, its inner runs of spaces one space.
    static func normalised(_ tag: String) -> String {
        tag.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// Why `tags` cannot be kept, naming the tag; nil when they can.
    static func problem(_ tags: [String]) -> String? {
        guard tags.count <= maxPerSwing else { return "\(tags.count) tags: at most \(maxPerSwing) a swing" }
        for (i, t) in tags.enumerated() {
            guard !t.isEmpty, t.count <= maxLength else { return "tags[\(i)]: 1…\(maxLength) characters" }
            guard !t.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                return "tags[\(i)]: no control characters"
            }
        }
        return nil
    }

    func tags(_ swing: String) -> [String] { bySwing.withLock { $0[swing] ?? [] } }

    /// Sets a swing's tags (normalised, duplicates by case dropped, in the order given).
    func set(_ swing: String, _ given: [String]) throws -> [String] {
        var seen = Set<String>()
        let tags = given.map(Self.normalised).filter { !$0.isEmpty && seen.insert($0.lowercased()).inserted }
        if let why = Self.problem(tags) { throw Studio.StudioError(400, why) }
        try bySwing.withLock { all in
            var next = all
            next[swing] = tags.isEmpty ? nil : tags
            guard next.count <= Self.maxSwings else { throw Studio.StudioError(507, "tags kept for too many swings") }
            try LibraryFile.write(File(swings: next), to: path)
            all = next
        }
        return tags
    }

    /// Every tag and how many swings carry it, most used first (then by name).
    var counts: [StudioAPI.TagList.Tag] {
        var n: [String: (shown: String, count: Int)] = [:]
        for tags in bySwing.withLock({ Array($0.values) }) {
            for t in tags {
                // One spelling shown for a tag written in several cases: the first in sorted order, whatever order
                // the swings are read in.
                var entry = n[t.lowercased(), default: (t, 0)]
                entry.count += 1
                if t < entry.shown { entry.shown = t }
                n[t.lowercased()] = entry
            }
        }
        return n.values.map { .init(tag: $0.shown, swings: $0.count) }.sorted {
            ($0.swings, $1.tag.lowercased()) > ($1.swings, $0.tag.lowercased())
        }
    }
}

extension Studio {
    func setTags(_ id: String, _ body: Data) throws -> WebServer.Response {
        let q = try Self.body(StudioAPI.Tags.self, body, shape: #"{"tags": [text, …]}"#, about: id)
        guard try swing(id) != nil else { throw StudioError(404, "\(id): no such swing") }
        do { return .json(StudioAPI.Tags(tags: try tags.set(id, q.tags))) } catch let e as StudioError {
            throw StudioError(e.status, "\(id): \(e.message)")
        } catch { throw StudioError(500, "\(id): the tags could not be kept (\(error))") }
    }
}
