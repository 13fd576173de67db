import Catalogue
import Crypto
import Foundation
import JSONInput
import Library
import PayloadSource
import Synchronization
import Syscall
import WebServer

extension StudioAPI {
    /// A share link: read-only, for one swing, lesson or export, with its own random key and an expiry; revocable.
    public struct Share: Codable, Sendable, Equatable {
        public var id: String
        /// The secret the link carries; whoever holds the link sees what it shares, and nothing else.
        public var key: String
        /// `swing`, `lesson` or `export`.
        public var kind: String
        public var target: String
        /// The swings it opens, fixed when it was made (a lesson's swings then, its discarded ones left out; [] for an
        /// export): a swing added to the lesson later is not sent without the coach's say.
        public var swings: [String] = []
        /// Whether the swings' notes go with them (the coach's choice when sharing; null or false: they do not).
        @Nullable public var withNotes: Bool?
        public var title: String
        public var created: String
        public var expires: String
        @Nullable public var revoked: String?
        /// `/share/<key>`: the phone player page.
        public var url: String
        /// `active`, `expired` or `revoked` (when asked).
        public var state: String
    }

    public struct ShareList: Codable, Sendable, Equatable {
        public var shares: [Share]
    }

    /// `POST /api/shares`: `{"kind": "swing"|"lesson"|"export", "target": id, "hours": n, "withNotes": bool}` (hours:
    /// 168 when left out; the notes go only when asked).
    public struct ShareRequest: Codable, Sendable, Equatable {
        public var kind: String
        public var target: String
        public var hours: Double?
        public var withNotes: Bool?
    }

    /// What a share link's page is given (`GET /share/<key>/api`): only what was shared.
    public struct Shared: Codable, Sendable, Equatable {
        public struct Angle: Codable, Sendable, Equatable {
            public var video: String
            public var thumb: String
            /// The camera, as the studio names it (its bay's device name).
            public var device: String
            public var framesPerSecond: Int
            public var impactSeconds: Double
            public var durationSeconds: Double
            /// What the coach drew on it, as the studio keeps it (`drawings.json`).
            public var drawings: [ClipDrawings.Drawing] = []
        }
        public struct Swing: Codable, Sendable, Equatable {
            public var id: String
            public var receivedAt: String
            @Nullable public var studentName: String?
            /// The coach's notes on it, when the link was made with them (null otherwise); as they read now.
            @Nullable public var notes: String?
            public var positions: KeyPositions
            @Nullable public var tempo: KeyPositions.Tempo?
            public var angles: [Angle]
        }
        public struct Video: Codable, Sendable, Equatable {
            public var video: String
            public var title: String
            @Nullable public var width: Int?
            @Nullable public var height: Int?
            @Nullable public var durationSeconds: Double?
        }
        public var kind: String
        public var title: String
        public var expires: String
        public var swings: [Swing]
        @Nullable public var export: Video?
    }
}

/// The library's share links (`LIBRARY/shares.json`, written whole or not at all). A link's key is 32 random bytes
/// (libsodium), compared in constant time; it opens only what it was made for, until it expires or is revoked.
final class StudioShares: @unchecked Sendable {
    // @unchecked: `shares` is behind its Mutex.
    let path: String
    let shares = Mutex<[StudioAPI.Share]>([])

    struct File: Codable {
        var format = "ppc-shares"
        var version = 1
        var shares: [StudioAPI.Share]
    }

    /// The longest a link lives (90 days) and the most kept (revoked and expired ones are kept until then, so the
    /// coach sees what was sent).
    static let maxHours = 24.0 * 90, maxKept = 5_000

    init(library: String) throws {
        path = library + "/shares.json"
        guard let file = try LibraryFile.read(File.self, from: path, limit: 16 << 20, what: "a library's share links")
        else { return }
        for (i, s) in file.shares.enumerated()
        where s.key.utf8.count < 32 || !["swing", "lesson", "export"].contains(s.kind) {
            throw LibraryError("\(path): shares[\(i)]: key of \(s.key.utf8.count) characters or kind '\(s.kind)'")
        }
        shares.withLock { $0 = file.shares }
    }

    /// A formatter is made per use (or per list): one shared between civetweb's threads is not safe to share.
    static var stamp: ISO8601DateFormatter { ISO8601DateFormatter.utcSeconds }

    /// Its state now: expired and revoked links open nothing; one whose expiry does not read has expired.
    static func state(_ s: StudioAPI.Share, now: Date = Date(), reading f: ISO8601DateFormatter = stamp) -> String {
        if s.revoked != nil { return "revoked" }
        guard let e = f.date(from: s.expires), e > now else { return "expired" }
        return "active"
    }

    var all: [StudioAPI.Share] {
        let f = Self.stamp
        let now = Date()
        return shares.withLock { $0 }.reversed().map {
            var s = $0
            s.state = Self.state(s, now: now, reading: f)
            return s
        }
    }

    func add(kind: String, target: String, swings: [String], title: String, hours: Double, withNotes: Bool) throws
        -> StudioAPI.Share
    {
        let hex = { (n: Int) in Crypto.random(n).map { String(format: "%02x", $0) }.joined() }
        let key = hex(32)
        let now = Date()
        // Its id is its own random name, nothing of the key: the id is shown and sent where the key must not be.
        let s = StudioAPI.Share(
            id: "s" + hex(8), key: key, kind: kind, target: target, swings: swings, withNotes: withNotes ? true : nil,
            title: title,
            created: Self.stamp.string(from: now),
            expires: Self.stamp.string(from: now.addingTimeInterval(hours * 3600)),
            revoked: nil, url: "/share/\(key)", state: "active")
        try change { list in
            list.append(s)
            if list.count > Self.maxKept { list.removeFirst(list.count - Self.maxKept) }
        }
        return s
    }

    /// Revokes link `id`; false when there is none.
    func revoke(_ id: String) throws -> Bool {
        var found = false
        try change { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else { return }
            found = true
            if list[i].revoked == nil { list[i].revoked = Self.stamp.string(from: Date()) }
        }
        return found
    }

    func change(_ body: (inout [StudioAPI.Share]) -> Void) throws {
        try shares.withLock { list in
            var next = list
            body(&next)
            try LibraryFile.write(File(shares: next), to: path)
            list = next
        }
    }

    /// The link holding `key`, whatever its state; nil when no link has it. Every key is compared, in constant time.
    func find(key: Substring) -> StudioAPI.Share? {
        let presented = Array(key.utf8)
        var hit: StudioAPI.Share?
        for s in shares.withLock({ $0 }) where Crypto.equal(presented, Array(s.key.utf8)) { hit = s }
        return hit
    }
}

extension Studio {
    // MARK: The coach's side

    func sharesJSON() -> WebServer.Response { .json(StudioAPI.ShareList(shares: shares.all)) }

    func addShare(_ body: Data) throws -> WebServer.Response {
        let q = try Self.body(
            StudioAPI.ShareRequest.self, body,
            shape: #"{"kind": "swing"|"lesson"|"export", "target": id, "hours": n, "withNotes": true|false}"#)
        let hours = q.hours ?? 168
        guard hours.isFinite, hours > 0, hours <= StudioShares.maxHours else {
            throw StudioError(400, "hours \(hours): more than 0, at most \(Int(StudioShares.maxHours)) (90 days)")
        }
        let title: String
        var swings: [String] = []
        switch q.kind {
        case "swing":
            guard let s = try swing(q.target) else { throw StudioError(404, "target \(q.target): no such swing") }
            let st = standing(s, roster?.placement)
            title = st.student.map { "\($0.name)'s swing" } ?? "A swing"
            swings = [q.target]
        case "lesson":
            // The lesson's swings now, the discarded left out: what the coach sees when sharing it.
            let ids = try lessonOrder().swings.filter { $0.lesson == q.target }.map(\.id)
            guard !ids.isEmpty else { throw StudioError(404, "target \(q.target): no such lesson") }
            for id in ids {
                if let s = try swing(id), !Self.swingFlags(s).contains(ClipFlag.discarded.rawValue) {
                    swings.append(id)
                }
            }
            guard !swings.isEmpty else { throw StudioError(404, "target \(q.target): every swing of it is discarded") }
            let who = try swing(swings[0]).flatMap { standing($0, roster?.placement).student?.name }
            title =
                "\(who.map { "\($0)'s lesson" } ?? "A lesson"), \(swings.count) swing\(swings.count == 1 ? "" : "s")"
        case "export":
            guard let e = exports.export(q.target), e.state == "done" else {
                throw StudioError(404, "target \(q.target): no such export made")
            }
            title = e.title
        default:
            throw StudioError(400, "kind \(q.kind.prefix(40)): swing, lesson or export")
        }
        do {
            return .json(
                try shares.add(
                    kind: q.kind, target: q.target, swings: swings, title: title, hours: hours,
                    withNotes: q.withNotes == true && q.kind != "export"),
                status: 201)
        } catch { throw StudioError(500, "the link could not be kept (\(error))") }
    }

    func revokeShare(_ id: String) throws -> WebServer.Response {
        do {
            guard try shares.revoke(id) else { throw StudioError(404, "\(id): no such share link") }
        } catch let e as StudioError { throw e } catch {
            throw StudioError(500, "the link could not be revoked (\(error))")
        }
        return sharesJSON()
    }

    // MARK: The student's side

    /// `/share/<key>`, `/share/<key>/api`, `/share/<key>/media/<clipId>/<file>`, `/share/<key>/export.mp4`: only what
    /// the link shares, read-only, while it is active.
    func shared(_ r: WebServer.Request) -> WebServer.Response {
        guard r.method == "GET" || r.method == "HEAD" else {
            return .error(405, "\(r.method) \(r.path): a share link is read-only")
        }
        let p = r.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)  // ["share", key, …]
        if p.count == 2 {
            // The page itself holds nothing shared: it asks /api, which says why a link does not open (gone, expired).
            guard FileSystem.isRegularFile(assets + "/share.html") else {
                return .error(500, "the share page is missing from the studio's pages")
            }
            return .file(
                path: assets + "/share.html", contentType: "text/html; charset=utf-8",
                headers: ["Cache-Control: no-store", "Referrer-Policy: no-referrer"])
        }
        guard p.count >= 3, let s = shares.find(key: p[1][...]) else {
            return .error(404, "no such share link (was it copied whole?)")
        }
        switch StudioShares.state(s) {
        case "revoked": return .error(410, "this link was withdrawn by the coach on \(s.revoked ?? "")")
        case "expired": return .error(410, "this link expired on \(s.expires)")
        default: break
        }
        do {
            switch p.count {
            case 3 where p[2] == "api":
                return Self.unkept(.json(try sharedContent(s)))
            case 3 where p[2] == "export.mp4":
                guard s.kind == "export" else { return .error(403, "this link shares a \(s.kind), not an export") }
                guard let e = exports.export(s.target), e.state == "done",
                    FileSystem.isRegularFile(exports.file(s.target))
                else { return .error(410, "the export this link shared was deleted") }
                return Self.unkept(.file(path: exports.file(s.target), contentType: "video/mp4", headers: []))
            case 5 where p[2] == "media":
                let clipID = p[3]
                guard ["clip.mp4", "view.mp4", "thumb.jpg"].contains(p[4]) else {
                    return .error(404, "\(p[4]): a share link serves clip.mp4, view.mp4 and thumb.jpg")
                }
                guard try sharedClips(s).contains(clipID) else {
                    return .error(403, "this link shares \(s.kind) \(s.target) only")
                }
                var inner = r
                inner.path = "/media/\(clipID)/\(p[4])"
                return Self.unkept(media(inner))
            default:
                return .error(404, "\(r.path): a share link has its page, /api, /media/<clipId>/<file> and /export.mp4")
            }
        } catch let e as StudioError {
            return .error(e.status, e.message)
        } catch {
            return .error(500, "\(error)")
        }
    }

    /// An answer through a share link kept by no cache (the browser's own included): once the link is revoked or
    /// expired, what it showed is not shown again from a cache.
    static func unkept(_ r: WebServer.Response) -> WebServer.Response {
        switch r {
        case .file(let path, let type, let headers):
            return .file(path: path, contentType: type, headers: headers + ["Cache-Control: private, no-store"])
        case .bytes(let status, let type, let body, let headers):
            return .bytes(
                status: status, contentType: type, body: body,
                headers: headers.filter { !$0.lowercased().hasPrefix("cache-control:") } + [
                    "Cache-Control: private, no-store"
                ])
        }
    }

    /// The swing ids a link shares: those fixed when it was made (a link written before they were, its target swing).
    func sharedSwings(_ s: StudioAPI.Share) throws -> [String] {
        if !s.swings.isEmpty { return s.swings }
        return s.kind == "swing" ? [s.target] : []
    }

    /// The clip ids a link's media may come from.
    func sharedClips(_ s: StudioAPI.Share) throws -> Set<String> {
        var ids = Set<String>()
        for id in try sharedSwings(s) { for c in try swing(id) ?? [] { ids.insert(c.clipID) } }
        return ids
    }

    func sharedContent(_ s: StudioAPI.Share) throws -> StudioAPI.Shared {
        let base = "/share/\(s.key)"
        var swings: [StudioAPI.Shared.Swing] = []
        let placement = roster?.placement
        for id in try sharedSwings(s) {
            guard let angles = try swing(id) else { continue }
            var out: [StudioAPI.Shared.Angle] = []
            for c in angles where FileSystem.exists(c.path) {
                guard let meta = try? ClipMeta.read(c.path + "/meta.json") else { continue }
                let view = FileSystem.exists(c.path + "/view.mp4") ? "view.mp4" : "clip.mp4"
                out.append(
                    .init(
                        video: "\(base)/media/\(c.clipID)/\(view)", thumb: "\(base)/media/\(c.clipID)/thumb.jpg",
                        device: c.device, framesPerSecond: meta.captureProfile.framesPerSecond,
                        impactSeconds: Double(meta.t0Ns.value - meta.window.clipTimeZeroNs) / 1e9,
                        durationSeconds: Double(meta.frames) / Double(max(1, meta.captureProfile.framesPerSecond)),
                        drawings: (try? ClipDrawings.read(c.path)) ?? []))
            }
            let positions = try keyPositions(angles)
            // A swing's notes are kept on every angle; its first angle's, as the swing's page shows them.
            let notes = s.withNotes == true ? angles.first.flatMap { $0.notes.isEmpty ? nil : $0.notes } : nil
            swings.append(
                .init(
                    id: id, receivedAt: angles.map(\.receivedAt).min() ?? "",
                    studentName: standing(angles, placement).student?.name, notes: notes, positions: positions,
                    tempo: positions.tempo, angles: out))
        }
        var video: StudioAPI.Shared.Video?
        if s.kind == "export", let e = exports.export(s.target) {
            video = .init(
                video: "\(base)/export.mp4", title: e.title, width: e.width, height: e.height,
                durationSeconds: e.durationSeconds)
        }
        return StudioAPI.Shared(kind: s.kind, title: s.title, expires: s.expires, swings: swings, export: video)
    }
}
