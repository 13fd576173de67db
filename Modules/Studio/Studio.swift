import Catalogue
import Foundation
import JSONInput
import Library
import Media
import PayloadSource
import Synchronization
import Syscall
import WebServer

/// ppc Studio: the host's web interface over its clip catalogue — Live, Swings, Compare, Sessions — and the JSON API
/// behind every page (docs/studio.md). Static pages are plain files (`web/`, no build step, no CDN); media are served by
/// civetweb with Range, so a video seeks without being read whole. Live state is pushed over one WebSocket.
///
/// Nothing here touches the receive path: the host calls `announce…` from its own threads and they return at once.
public final class Studio: @unchecked Sendable {
    // @unchecked: every stored property is immutable after init; the server and hub guard their own state.
    public let server: WebServer
    let library: String
    let catalogue: any CatalogueStore
    /// The library's bays: which devices stand where, in the order their angles are shown.
    let bays: Bays?
    /// The library's students and who is hitting at each bay (`students.json`).
    let roster: Roster?
    /// Stills are cut one at a time.
    let thumbnailLock = NSLock()
    let assets: String
    let socket: WebSocketHub
    /// The devices' live state as JSON objects (ppc-host gives the link's view; see docs/studio.md for the fields).
    let live: @Sendable () -> [StudioAPI.Device]
    /// Held while a file is written beside a clip (annotations.json, drawings.json): civetweb's workers answer pages at
    /// once, and two writes of one file would share its temporary name (`FileSystem.writeAtomically`).
    let besideLock = NSLock()
    /// What the studio tells its operator (ppc-host's standard error, through its one writer); tests leave it silent.
    let say: @Sendable (String) -> Void
    /// Clips already named as left out (`clips()`), so each is said once.
    let refusedSaid = Mutex<Set<String>>([])
    /// Every swing's id and lesson, oldest first, as a swing's page places it among its lesson's (`lessonOrder`);
    /// read again only when the catalogue's swings or the roster changed.
    let lessonOrderCache = Mutex<LessonOrder?>(nil)
    /// Flags changed through this studio, counted: a swing discarded here is read again into the lesson order.
    let annotations = Atomic<Int>(0)
    /// Exports being made and made (`LIBRARY/exports/`).
    let exports: StudioExports
    /// Share links (`LIBRARY/shares.json`).
    let shares: StudioShares
    /// Tags on swings (`LIBRARY/tags.json`).
    let tags: StudioTags

    /// Files of a clip the studio serves; anything else under a clip is not.
    public static let mediaFiles: [String: String] = [
        "clip.mp4": "video/mp4", "view.mp4": "video/mp4", "audio.wav": "audio/wav", "meta.json": "application/json",
        "host-meta.json": "application/json", "thumb.jpg": "image/jpeg",
    ]

    /// Where the pages are: the bundled `web/` folder (SwiftPM resources), unless `assets` names another.
    public static var bundledAssets: String? { Bundle.module.url(forResource: "web", withExtension: nil)?.path }

    public init(
        host: String, port: Int, library: String, catalogue: any CatalogueStore, assets: String? = nil,
        access: StudioAccess? = nil,
        bays: Bays? = nil, roster: Roster? = nil, live: @escaping @Sendable () -> [StudioAPI.Device],
        say: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        self.bays = bays
        self.roster = roster
        guard let assets = assets ?? Self.bundledAssets, FileManager.default.fileExists(atPath: assets + "/index.html")
        else {
            throw WebServerError.pagesMissing("\(assets ?? "no bundled web/ folder")/index.html")
        }
        self.library = library
        self.catalogue = catalogue
        shares = try StudioShares(library: library)
        tags = try StudioTags(library: library)
        self.assets = assets
        self.live = live
        self.say = say
        let check = RequestCheck(keyless: access == nil)
        server = try WebServer(
            host: host, port: port,
            gate: { request in
                // A share link carries its own key, checked by `shared` against what it shares; not the studio's.
                (request.path.hasPrefix("/share/") ? nil : access?.admit(request)) ?? check.refusal(request)
            }, say: say)
        check.port.store(server.port, ordering: .relaxed)
        let socket = server.websocket(
            "/ws", greeting: { [live] in [Self.encode(StudioAPI.DevicesMessage(devices: live()))] })
        self.socket = socket
        exports = StudioExports(library: library) { e in
            socket.broadcast(text: Self.encode(StudioAPI.ExportMessage(export: e)))
        }
        let api = self
        exports.begin { [weak api] q, rendering in
            guard let api else { throw StudioError(503, "the studio has stopped") }
            return try api.exportSpec(q, rendering: rendering)
        }
        server.handle("/api") { api.route($0) }
        server.handle("/media") { api.media($0) }
        server.handle("/looks") { api.lookFile($0) }
        server.handle("/exports") { api.exportFile($0) }
        server.handle("/share") { api.shared($0) }
        server.handle("/") { api.page($0) }
    }

    public var port: Int { server.port }

    public func stop() { server.stop() }

    // MARK: Push

    /// A device connected, disconnected or reported its state: every open page gets the devices afresh.
    public func devicesChanged() { socket.broadcast(text: Self.encode(StudioAPI.DevicesMessage(devices: live()))) }

    /// A shot was heard by a device (before its clip arrives).
    public func shot(device: String, t0HostNs: Int64?) {
        socket.broadcast(
            text: Self.encode(
                StudioAPI.ShotMessage(
                    device: device, bay: bays?.bay(of: device), t0HostNs: t0HostNs,
                    t0WallMs: t0HostNs.map(Self.wallMs))))
    }

    /// A moment on the host's monotonic clock as wall-clock milliseconds since 1970, as a browser's `Date.now()` reads
    /// them (the two clocks compared now: good to the wall clock's own steadiness over seconds).
    static func wallMs(_ hostNs: Int64) -> Double {
        Date().timeIntervalSince1970 * 1000 - Double(monotonicNowNs() &- hostNs) / 1e6
    }

    /// A first look at a shot arrived (its pre-roll and impact, minted as they sealed, ahead of the clip): a bay screen
    /// plays it at once and swaps in the whole clip when it is catalogued. Served at `/looks/<device>/<clipId>.mp4`.
    public func look(
        device: String, clipID: String, t0HostNs: Int64?, zeroHostNs: Int64?, t0DeviceNs: Int64, zeroDeviceNs: Int64
    ) {
        socket.broadcast(
            text: Self.encode(
                StudioAPI.LookMessage(
                    device: device, bay: bays?.bay(of: device), clipId: clipID, url: "/looks/\(device)/\(clipID).mp4",
                    t0HostNs: t0HostNs, zeroHostNs: zeroHostNs, impactSeconds: Double(t0DeviceNs - zeroDeviceNs) / 1e9,
                    t0WallMs: t0HostNs.map(Self.wallMs))))
    }

    /// `/looks/<device>/<clipId>.mp4`: a first look, by Range (from `LIBRARY/<device>/.looks/`).
    func lookFile(_ r: WebServer.Request) -> WebServer.Response {
        let parts = r.path.split(separator: "/").map(String.init)
        guard parts.count == 3, parts[2].hasSuffix(".mp4"), PlainName.problem(parts[1], what: "device") == nil,
            PlainName.problem(String(parts[2].dropLast(4)), what: "clip") == nil
        else { return .error(404, "\(r.path): first looks are /looks/<device>/<clipId>.mp4") }
        let file = "\(library)/\(parts[1])/.looks/\(parts[2])"
        guard FileSystem.isRegularFile(file) else {
            return .error(404, "\(r.path): no such first look (kept for the newest \(16) shots of a device)")
        }
        return .file(path: file, contentType: "video/mp4", headers: [])
    }

    /// A shared catalogue is reachable again (and caught up): pages listing swings refresh.
    public func catalogueReturned() {
        socket.broadcast(text: Self.encode(StudioAPI.CatalogueMessage()))
    }

    /// A clip was catalogued, placed in its swing: pages listing swings add it, a swing page open on its swing shows
    /// the new angle.
    public func clipCatalogued(_ clip: CatalogueClip) {
        socket.broadcast(
            text: Self.encode(
                StudioAPI.ClipMessage(
                    clipId: clip.clipID, device: clip.device, bay: clip.bay, swingId: clip.swingID ?? clip.clipID,
                    seq: clip.receivedSeq, t0HostNs: clip.t0HostNs, t0WallMs: clip.t0HostNs.map(Self.wallMs))))
    }

    /// A device's preview frame (8-bit luma): one binary message — "P", width and height (u16 little-endian), the device
    /// id's length (u8) and bytes, then the pixels.
    public func preview(device: String, width: Int, height: Int, luma: [UInt8]) {
        guard socket.count > 0, width > 0, height > 0, luma.count >= width * height else { return }
        let id = Array(device.utf8.prefix(255))
        var m: [UInt8] = [
            0x50, UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8), UInt8(id.count),
        ]
        m += id
        m += luma.prefix(width * height)
        socket.broadcast(binary: m, key: device)
    }

    static func encode<T: Encodable>(_ message: T) -> String {
        (try? JSONBody.data(encoding: message)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    // MARK: Pages and media

    func page(_ r: WebServer.Request) -> WebServer.Response {
        guard r.method == "GET" || r.method == "HEAD" else {
            return .error(405, "\(r.method) \(r.path): pages are read with GET")
        }
        let name = r.path == "/" ? "index.html" : String(r.path.dropFirst())
        guard !name.split(separator: "/").contains(where: { $0 == ".." || $0.hasPrefix(".") }) else {
            return .error(404, "\(r.path): no such page")
        }
        let file = assets + "/" + name
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDir), !isDir.boolValue else {
            return .error(404, "\(r.path): no such page")
        }
        let type = Self.types[(name as NSString).pathExtension] ?? "application/octet-stream"
        return .file(path: file, contentType: type, headers: [])
    }

    static let types = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon", "json": "application/json",
    ]

    /// `/media/<clipId>/<file>`: a catalogued clip's file, by Range.
    func media(_ r: WebServer.Request) -> WebServer.Response {
        let parts = r.path.split(separator: "/").map(String.init)
        guard parts.count == 3, let type = Self.mediaFiles[parts[2]] else {
            return .error(
                404,
                "\(r.path): media are /media/<clipId>/<file>, file one of \(Self.mediaFiles.keys.sorted().joined(separator: ", "))"
            )
        }
        let clip: CatalogueClip
        do {
            guard let found = try self.clip(parts[1]) else {
                return .error(404, "\(parts[1]): no such clip in the catalogue")
            }
            clip = found
        } catch let e as StudioError { return .error(e.status, e.message) } catch {
            return .error(500, "\(parts[1]): \(error)")
        }
        let file = clip.path + "/" + parts[2]
        if parts[2] == "thumb.jpg", !FileSystem.exists(file) {
            do { try makeThumbnail(clip) } catch {
                return .error(422, "\(clip.clipID): no still could be made (\(error))")
            }
        }
        guard FileManager.default.fileExists(atPath: file) else { return .error(404, "\(parts[1]) has no \(parts[2])") }
        return .file(path: file, contentType: type, headers: [])
    }

    /// Cuts a clip's still at its impact (`thumb.jpg`, beside it: made once, then served as a file). One at a time: a
    /// list of a hundred swings first seen asks for two hundred, and each decodes a second or two of video.
    func makeThumbnail(_ c: CatalogueClip) throws {
        try thumbnailLock.withLock {
            let file = c.path + "/thumb.jpg"
            guard !FileSystem.exists(file) else { return }
            try Self.requireFolder(c)
            let meta = try ClipMeta.read(c.path + "/meta.json")
            let source =
                FileManager.default.fileExists(atPath: c.path + "/view.mp4")
                ? c.path + "/view.mp4" : c.path + "/clip.mp4"
            let jpeg = try ClipThumbnail.jpeg(clip: source, atNs: meta.t0Ns.value - meta.window.clipTimeZeroNs)
            try FileSystem.writeAtomically(jpeg, to: file)
        }
    }

    // MARK: API

    func route(_ r: WebServer.Request) -> WebServer.Response {
        let p = r.path.split(separator: "/").map(String.init)  // ["api", …]
        do {
            let method = r.method == "HEAD" ? "GET" : r.method  // HEAD answers as GET, without the body (WebServer)
            switch (method, p.count > 1 ? p[1] : "", p.count) {
            case ("GET", "devices", 2): return .json(StudioAPI.Devices(devices: live()))
            case ("GET", "swings", 2): return try swingList(r)
            case ("GET", "swings", 3): return try swingDetail(p[2])
            case ("GET", "clips", 2):
                let all = Catalogue.readable(try catalogue.clips())
                return .json(
                    StudioAPI.ClipList(
                        clips: all.clips.map(StudioAPI.Clip.init),
                        refused: all.refused.map { StudioAPI.Refused(clipId: $0.clipID, problem: $0.problem) }))
            case ("GET", "clips", 4) where p[3] == "waveform":
                return try waveform(p[2], buckets: try r.number("buckets", default: 1000, in: 1...20_000))
            case ("POST", "clips", 4) where p[3] == "annotate", ("PUT", "clips", 4) where p[3] == "annotate":
                return try annotate(p[2], r.body)
            case ("POST", "swings", 4) where p[3] == "annotate", ("PUT", "swings", 4) where p[3] == "annotate":
                return try annotateSwing(p[2], r.body)
            case ("GET", "clips", 4) where p[3] == "drawings": return try drawings(p[2])
            case ("PUT", "clips", 4) where p[3] == "drawings", ("POST", "clips", 4) where p[3] == "drawings":
                return try setDrawings(p[2], r.body)
            case ("POST", "clips", 5) where p[3] == "drawings" && (p[4] == "undo" || p[4] == "redo"):
                return try stepDrawings(p[2], back: p[4] == "undo")
            case ("GET", "sessions", 2): return .json(StudioAPI.Sessions(sessions: try sessions()))
            case ("GET", "bays", 2): return try baysJSON()
            case ("PUT", "bays", 2), ("POST", "bays", 2): return try setBays(r.body)
            case ("GET", "sessions", 4): return try session(device: p[2], sessionID: p[3])
            case ("GET", "students", 2): return try studentsJSON()
            case ("POST", "students", 2): return try saveStudent(nil, r.body)
            case ("PUT", "students", 3), ("POST", "students", 3): return try saveStudent(p[2], r.body)
            case ("PUT", "hitting", 2), ("POST", "hitting", 2): return try setHitting(r.body)
            case ("GET", "lessons", 2): return try lessons()
            case ("DELETE", "swings", 3): return try deleteSwing(p[2], r)
            case ("GET", "exports", 2): return exportsJSON()
            case ("POST", "exports", 2): return try addExport(r.body)
            case ("GET", "exports", 3): return try exportJSON(p[2])
            case ("DELETE", "exports", 3): return try deleteExport(p[2])
            case ("GET", "tags", 2): return .json(StudioAPI.TagList(tags: tags.counts))
            case ("PUT", "swings", 4) where p[3] == "tags", ("POST", "swings", 4) where p[3] == "tags":
                return try setTags(p[2], r.body)
            case ("GET", "shares", 2): return sharesJSON()
            case ("POST", "shares", 2): return try addShare(r.body)
            case ("DELETE", "shares", 3): return try revokeShare(p[2])
            case ("PUT", "swings", 4) where p[3] == "positions", ("POST", "swings", 4) where p[3] == "positions":
                return try setKeyPositions(p[2], r.body)
            default: return .error(404, "\(r.method) \(r.path): no such API (see docs/studio.md)")
            }
        } catch let e as StudioError {
            return .error(e.status, e.message)
        } catch let e as CatalogueError where e.unavailable {
            return .error(503, "\(e)")  // a shared catalogue's server away: said, not an empty 500
        } catch {
            return .error(500, "\(r.path): \(error)")
        }
    }

    struct StudioError: Error {
        let status: Int
        let message: String
        init(_ status: Int, _ message: String) {
            self.status = status
            self.message = message
        }
    }

    /// The catalogue's clips whose figures are in range (`CatalogueClip.problem`); each refused one is named on the
    /// host's standard error once, and `GET /api/clips` lists it with its problem — one bad row (a hand-edited file,
    /// a shared catalogue an older host wrote) costs that clip, not every page.
    func clips() throws -> [CatalogueClip] {
        let all = Catalogue.readable(try catalogue.clips())
        for r in all.refused where refusedSaid.withLock({ $0.insert(r.clipID).inserted }) {
            say("studio: left out: \(r.problem) (`ppc-host catalogue rebuild` records it again from its files)")
        }
        return all.clips
    }

    /// One clip by id (nil when not catalogued); one whose figures are out of range is a 500 naming the field.
    func clip(_ clipID: String) throws -> CatalogueClip? {
        guard let c = try catalogue.clip(clipID) else { return nil }
        if let p = c.problem {
            throw StudioError(500, "\(p); `ppc-host catalogue rebuild` records it again from its files")
        }
        return c
    }

    /// Swings, newest first: as the catalogue placed them, in the order the host received each one's first angle.
    func swings(limit: Int) throws -> [[CatalogueClip]] {
        Array(Catalogue.placedSwings(try clips()).prefix(limit)).map(inBayOrder)
    }

    /// `GET /api/swings`: newest first, a page at a time (`limit`, and `before`: the `next` the last page gave), filtered
    /// by `bay`, `device`, `flag` (kept, discarded, starred, or none) and the day received (`from`, `to`: YYYY-MM-DD).
    func swingList(_ r: WebServer.Request) throws -> WebServer.Response {
        let limit = try r.number("limit", default: 100, in: 1...100_000)
        let before = try r.query["before"].map { text throws -> Int64 in
            guard let n = Int64(text), n > 0 else {
                throw StudioError(400, "before=\(text.prefix(40)): the `next` of the page before (a whole number)")
            }
            return n
        }
        let flag = r.query["flag"]
        if let flag, flag != "none", ClipFlag(rawValue: flag) == nil {
            throw StudioError(400, "flag=\(flag.prefix(40)): one of kept, discarded, starred, not-a-swing, none")
        }
        for key in ["from", "to"] {
            if let d = r.query[key], d.utf8.count != 10 || ISO8601DateFormatter.day.date(from: d) == nil {
                throw StudioError(400, "\(key)=\(d.prefix(40)): a day, YYYY-MM-DD")
            }
        }
        let discarded = r.query["discarded"] ?? "show"
        guard discarded == "show" || discarded == "hide" else {
            throw StudioError(400, "discarded=\(discarded.prefix(40)): show (every swing) or hide (not the discarded)")
        }
        let hide = discarded == "hide" && flag != "discarded"
        let placement = roster?.placement
        let filtered = ["bay", "device", "flag", "from", "to", "student", "lesson", "q", "tag"].contains {
            r.query[$0] != nil
        }
        let page: [[CatalogueClip]]
        let total: Int
        let more: Bool
        if filtered {
            var all = Catalogue.placedSwings(try clips())
            if let bay = r.query["bay"] { all = all.filter { $0.contains { $0.bay == bay } } }
            if let device = r.query["device"] { all = all.filter { $0.contains { $0.device == device } } }
            if let flag {
                all = all.filter { s in
                    let f = Self.swingFlags(s)
                    return flag == "none" ? f.isEmpty : f.contains(flag)
                }
            }
            if let from = r.query["from"] { all = all.filter { ($0.first?.receivedAt ?? "") >= from } }
            if let to = r.query["to"] { all = all.filter { String(($0.first?.receivedAt ?? "").prefix(10)) <= to } }
            if hide { all = all.filter { !Self.swingFlags($0).contains("discarded") } }
            if let student = r.query["student"] {
                all = all.filter { standing($0, placement).student?.id == (student == "none" ? nil : student) }
            }
            if let lesson = r.query["lesson"] { all = all.filter { standing($0, placement).lesson == lesson } }
            if let tag = r.query["tag"]?.lowercased() {
                all = all.filter { s in tags.tags(Self.swingID(s)).contains { $0.lowercased() == tag } }
            }
            if let q = r.query["q"]?.lowercased(), !q.isEmpty {
                all = all.filter { s in
                    let who = standing(s, placement).student?.name.lowercased() ?? ""
                    return who.contains(q) || tags.tags(Self.swingID(s)).contains { $0.lowercased().contains(q) }
                        || s.contains {
                            $0.notes.lowercased().contains(q) || $0.device.lowercased().contains(q)
                                || ($0.bay ?? "").lowercased().contains(q) || $0.receivedAt.hasPrefix(q)
                        }
                }
            }
            total = all.count
            if let before { all = all.filter { ($0.first?.receivedSeq ?? .max) < before } }
            page = Array(all.prefix(limit)).map(inBayOrder)
            more = all.count > limit
        } else {
            // The unfiltered list — what the Swings page opens on — reads only the page's swings from the catalogue.
            let newest = try catalogue.newestSwings(limit: limit + 1, before: before, hidingDiscarded: hide)
            let swings = Catalogue.placedSwings(Catalogue.readable(newest.clips).clips)
            total = newest.swings
            page = Array(swings.prefix(limit)).map(inBayOrder)
            more = swings.count > limit
        }
        return .json(
            StudioAPI.SwingList(
                swings: page.map { swingSummary($0, placement) }, total: total,
                next: more ? page.last?.compactMap(\.receivedSeq).min() : nil))
    }

    /// The swing `id` (its first angle's clip id, given once and kept), its angles in their bay's order; nil when
    /// there is none.
    func swing(_ id: String) throws -> [CatalogueClip]? {
        let angles = Catalogue.readable(try catalogue.angles(ofSwing: id)).clips
        return Catalogue.placedSwings(angles).first.map(inBayOrder)
    }

    /// A swing's angles as its bay shows them (face-on left, down-the-line right: `bays.json`), the devices it does not
    /// list after, as they arrived.
    func inBayOrder(_ angles: [CatalogueClip]) -> [CatalogueClip] {
        guard let bays else { return angles }
        return angles.enumerated().sorted { a, b in
            (bays.place(of: a.element.device) ?? Int.max, a.offset) < (
                bays.place(of: b.element.device) ?? Int.max, b.offset
            )
        }.map(\.element)
    }

    /// `GET /api/bays`: the bays as set, and each device seen with the bay it is in.
    func baysJSON() throws -> WebServer.Response {
        let plan = bays?.plan ?? Bays.Plan(bays: [])
        return .json(StudioAPI.BayList(bays: plan.bays))
    }

    /// `PUT /api/bays`: `{"bays": [{"name": "bay-1", "devices": ["face-on", "down-the-line"]}, …]}` — every bay, each
    /// device at one, in the order its angles are shown; kept in the library's bays.json.
    func setBays(_ body: Data) throws -> WebServer.Response {
        guard let bays else { throw StudioError(409, "this studio was started without a library's bays") }
        let plan = try Self.body(
            Bays.Plan.self, body, shape: #"{"bays": [{"name": …, "devices": [device, …]}, …]}"#)
        do { try bays.set(plan) } catch let e as LibraryError { throw StudioError(400, e.description) } catch {
            throw StudioError(500, "\(bays.path): \(error)")
        }
        devicesChanged()
        return try baysJSON()
    }

    /// A swing's id: its first angle's, given when the swing began and kept as angles join it.
    static func swingID(_ s: [CatalogueClip]) -> String { s.first.map { $0.swingID ?? $0.clipID } ?? "" }

    func swingSummary(_ s: [CatalogueClip], _ placement: Roster.Placement?) -> StudioAPI.Swing {
        let st = standing(s, placement)
        return StudioAPI.Swing(
            id: Self.swingID(s), seq: s.first?.receivedSeq, bay: s.first?.bay, t0HostNs: s.compactMap(\.t0HostNs).min(),
            // Its first angle's receipt, as its page says: the swing was placed then, and keeps it as angles join.
            receivedAt: s.map(\.receivedAt).min() ?? "", flags: Self.swingFlags(s), student: st.student?.id,
            studentName: st.student?.name, lesson: st.lesson,
            // where t0 is in the video: the swing's own view (a list reads no clip's files)
            angles: s.map { StudioAPI.Angle(clip: StudioAPI.Clip($0), video: videoURL($0), thumb: Self.thumbURL($0)) },
            tags: tags.tags(Self.swingID(s)))
    }

    static func thumbURL(_ c: CatalogueClip) -> String { "/media/\(c.clipID)/thumb.jpg" }

    /// The swing's flags: those every angle carries.
    static func swingFlags(_ s: [CatalogueClip]) -> [String] {
        guard let first = s.first else { return [] }
        return s.dropFirst().reduce(first.flags) { $0.intersection($1.flags) }.sorted().map(\.rawValue)
    }

    /// What a browser plays: the host's H.264 viewing copy when there is one (Motion JPEG, HEVC, lossless), else the clip.
    func videoURL(_ c: CatalogueClip) -> String {
        FileManager.default.fileExists(atPath: c.path + "/view.mp4")
            ? "/media/\(c.clipID)/view.mp4" : "/media/\(c.clipID)/clip.mp4"
    }

    /// One swing with what a player needs to show its angles in sync on the host clock: per angle, where its video's
    /// time 0 is on the host clock (`zeroHostNs`: the clip's time zero plus the device's clock offset), where the
    /// impact is in the video (`impactSeconds`), the frame rate, and its audio's place.
    func swingDetail(_ id: String) throws -> WebServer.Response {
        guard let s = try swing(id) else { throw StudioError(404, "\(id): no such swing") }
        var angles: [StudioAPI.Angle] = []
        for c in s {
            let meta: ClipMeta
            try Self.requireFolder(c)
            do { meta = try ClipMeta.read(c.path + "/meta.json") } catch {
                throw StudioError(500, "\(c.clipID): \(error)")
            }
            let zero = meta.window.clipTimeZeroNs
            var playback = StudioAPI.Playback(
                download: "/media/\(c.clipID)/clip.mp4", framesPerSecond: meta.captureProfile.framesPerSecond,
                impactSeconds: Double(meta.t0Ns.value - zero) / 1e9,
                // Host clock of the video's time 0: device time + offset, as t0's host time was formed.
                zeroHostNs: c.t0HostNs.map { $0 - (meta.t0Ns.value - zero) },
                durationSeconds: Double(meta.frames) / Double(max(1, meta.captureProfile.framesPerSecond)))
            if let audio = meta.audio {
                playback.audio = "/media/\(c.clipID)/audio.wav"
                playback.waveform = "/api/clips/\(c.clipID)/waveform"
                // Audio sample k sits at firstSampleNs + k × nsPerSample on the device clock: its video time follows.
                let first = audio.firstSampleNs?.value ?? (meta.window.startNs)
                playback.audioStartSeconds = Double(first - zero) / 1e9
                playback.audioSecondsPerSample = (audio.nsPerSample?.value ?? 1e9 / Double(audio.sampleRate)) / 1e9
            }
            angles.append(
                StudioAPI.Angle(
                    clip: StudioAPI.Clip(c), video: videoURL(c), thumb: Self.thumbURL(c), playback: playback))
        }
        let t0Host = s.compactMap(\.t0HostNs).min()
        // Its place among the swings of its lesson (all swings, when it is its lesson's only one), oldest first — as
        // Swings lists them: the discarded left out, unless it is one itself.
        let placement = roster?.placement
        let st = standing(s, placement)
        let order = try lessonOrder()
        let listed = order.swings.filter { !$0.discarded || $0.id == id }
        var around = listed.filter { $0.lesson == st.lesson }.map(\.id)
        if around.count < 2 { around = listed.map(\.id) }
        let at = around.firstIndex(of: id)
        let synced = s.allSatisfy { $0.t0HostNs != nil }
        let positions = try keyPositions(s)
        return .json(
            StudioAPI.SwingDetail(
                id: id, seq: s.compactMap(\.receivedSeq).min(), bay: s.first?.bay, t0HostNs: t0Host,
                t0WallMs: t0Host.flatMap { s.first?.hostBoot == bootID ? Self.wallMs($0) : nil },
                receivedAt: s.map(\.receivedAt).min() ?? "", flags: Self.swingFlags(s),
                syncedOn: synced
                    ? "host clock (each device's clock relation)" : "impact (a device without a clock relation)",
                syncUncertaintyNs: synced ? s.compactMap(\.t0UncertaintyNs).max() : nil, student: st.student?.id,
                studentName: st.student?.name, lesson: st.lesson, lessonIndex: at.map { $0 + 1 },
                lessonSwings: around.count, previous: at.flatMap { $0 > 0 ? around[$0 - 1] : nil },
                next: at.flatMap { $0 + 1 < around.count ? around[$0 + 1] : nil }, positions: positions,
                tempo: positions.tempo, angles: angles, tags: tags.tags(id)))
    }

    /// Every swing's id, lesson, student and first receipt, oldest first, and what they were read against.
    struct LessonOrder {
        struct Key: Equatable {
            let swings: Int
            /// Those not discarded (another host sharing the catalogue discarding one changes it), and the flags
            /// changed here.
            let shown: Int
            let annotations: Int
            let newest: String?
            let roster: Int
        }
        let key: Key
        let swings: [(id: String, lesson: String, student: String?, receivedAt: String, discarded: Bool)]
    }

    /// The swings in lesson order, read from every clip only when the catalogue's count of swings (or of those not
    /// discarded), its newest swing, the roster or a flag set here changed since the last read: a swing's page at
    /// 10 000 clips asks the catalogue for one swing, not all.
    func lessonOrder() throws -> LessonOrder {
        let annotated = annotations.load(ordering: .relaxed)  // before the reads: a change between is read next time
        let newest = try catalogue.newestSwings(limit: 1, before: nil, hidingDiscarded: false)
        let shown = try catalogue.newestSwings(limit: 1, before: nil, hidingDiscarded: true).swings
        let key = LessonOrder.Key(
            swings: newest.swings, shown: shown, annotations: annotated,
            newest: newest.clips.isEmpty ? nil : Self.swingID(newest.clips), roster: roster?.generation ?? 0)
        if let cached = lessonOrderCache.withLock({ $0 }), cached.key == key { return cached }
        let placement = roster?.placement  // read after the generation: a change between is read again next time
        let order = LessonOrder(
            key: key,
            swings: Catalogue.placedSwings(try clips()).reversed().map {
                let st = standing($0, placement)
                return (
                    id: Self.swingID($0), lesson: st.lesson, student: st.student?.id,
                    receivedAt: $0.map(\.receivedAt).min() ?? "",
                    discarded: Self.swingFlags($0).contains(ClipFlag.discarded.rawValue)
                )
            })
        lessonOrderCache.withLock { $0 = order }
        return order
    }

    /// The catalogued clip `clipID`, its folder in the library: 404 when it is not catalogued, 410 when its folder is gone.
    func clipHere(_ clipID: String) throws -> CatalogueClip {
        guard let c = try clip(clipID) else { throw StudioError(404, "\(clipID): no such clip") }
        try Self.requireFolder(c)
        return c
    }

    /// A catalogued clip whose folder is gone from the library (deleted by hand, a cleanup) is 410, saying what forgets
    /// it — not a 500, as though the server had failed.
    static func requireFolder(_ c: CatalogueClip) throws {
        guard FileSystem.exists(c.path) else {
            throw StudioError(
                410,
                "\(c.clipID): its folder \(c.path) is gone from the library; `ppc-host catalogue rebuild` forgets it")
        }
    }

    /// The largest audio.wav a waveform is drawn from: a clip's 2 s are ~0.4 MB at 48 kHz; 64 MiB is minutes of
    /// audio at any usual rate.
    static let maxWaveformFileBytes = 64 << 20

    /// The audio's envelope, decimated to `buckets` (min and max per bucket), with the impact's sample.
    func waveform(_ clipID: String, buckets: Int) throws -> WebServer.Response {
        let c = try clipHere(clipID)
        let path = c.path + "/audio.wav"
        // A clip's audio is seconds long (detect.audioWindowNs); a file far larger is no clip's, and is not read whole
        // into a page's request.
        guard !FileSystem.exists(path) || FileSystem.isRegularFile(path) else {
            throw StudioError(422, "\(path): not a regular file; not read")
        }
        let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
        guard size <= Self.maxWaveformFileBytes else {
            throw StudioError(
                422,
                "\(path): \(size) bytes, more than a clip's audio (at most \(Self.maxWaveformFileBytes >> 20) MiB); not read"
            )
        }
        let wav: (samples: [Float], sampleRate: Int)
        do { wav = try MediaReader.wholeAudio(path) } catch { throw StudioError(422, error.description) }
        var lo = [Double](repeating: 0, count: buckets)
        var hi = [Double](repeating: 0, count: buckets)
        let count = wav.samples.count
        if count > 0 {
            for b in 0..<buckets {
                let from = b * count / buckets
                let to = max(from + 1, (b + 1) * count / buckets)
                var mn: Float = 0
                var mx: Float = 0
                for i in from..<min(to, count) {
                    mn = min(mn, wav.samples[i])
                    mx = max(mx, wav.samples[i])
                }
                lo[b] = (Double(mn) * 1000).rounded() / 1000
                hi[b] = (Double(mx) * 1000).rounded() / 1000
            }
        }
        let impact = (try? ClipMeta.read(c.path + "/meta.json")).flatMap(Self.impactSample)
        return .json(
            StudioAPI.Waveform(
                sampleRate: wav.sampleRate, samples: count, buckets: buckets, min: lo, max: hi, impactSample: impact))
    }

    /// A body of `POST …/annotate`: flags, notes or both.
    struct AnnotationBody: Decodable {
        var flags: [String]?
        var notes: String?
    }

    /// Where t0 falls in a clip's audio.wav, in its samples (from meta.json's fitted sample clock); nil without audio.
    public static func impactSample(_ meta: ClipMeta) -> Int? {
        guard let a = meta.audio else { return nil }
        let first = a.firstSampleNs?.value ?? meta.window.startNs
        let per = a.nsPerSample?.value ?? 1e9 / Double(a.sampleRate)
        return Int(((Double(meta.t0Ns.value - first)) / per).rounded())
    }

    func decodeAnnotation(_ body: Data, _ what: String) throws -> (Set<ClipFlag>?, String?) {
        let o: AnnotationBody
        do { o = try JSONInput.decode(AnnotationBody.self, from: body) } catch {
            switch (error as? DecodingError)?.field {
            case "flags": throw StudioError(400, "\(what): flags must be an array of names")
            case "notes": throw StudioError(400, "\(what): notes must be a string of at most 10 000 bytes")
            default:
                throw StudioError(
                    400,
                    "\(what): the body must be a JSON object {\"flags\": [\"kept\"|\"discarded\"|\"starred\"…], \"notes\": \"…\"} (\(Self.decodingProblem(error)))"
                )
            }
        }
        var flags: Set<ClipFlag>?
        if let names = o.flags {
            var set = Set<ClipFlag>()
            for n in names {
                guard let flag = ClipFlag(rawValue: n) else {
                    throw StudioError(400, "\(what): flag '\(n)' is not one of kept, discarded, starred, not-a-swing")
                }
                set.insert(flag)
            }
            if let why = ClipFlag.problem(set) { throw StudioError(400, "\(what): \(why)") }
            flags = set
        }
        var notes: String?
        if let s = o.notes {
            guard s.utf8.count <= 10_000 else {
                throw StudioError(400, "\(what): notes must be a string of at most 10 000 bytes")
            }
            // A NUL ends a C string: the catalogue kept the notes cut at it, and answered 200.
            if let at = s.unicodeScalars.firstIndex(of: "\u{0}") {
                throw StudioError(
                    400,
                    "\(what): notes hold a NUL character (U+0000) at character \(s.unicodeScalars.distance(from: s.unicodeScalars.startIndex, to: at)); nothing was kept"
                )
            }
            notes = s
        }
        if flags == nil, notes == nil {
            throw StudioError(400, "\(what): nothing to change (give flags, notes or both)")
        }
        return (flags, notes)
    }

    func annotate(_ clipID: String, _ body: Data) throws -> WebServer.Response {
        let (flags, notes) = try decodeAnnotation(body, clipID)
        let here = try clipHere(clipID)  // nothing said of a clip that is not catalogued or is gone
        // Only a flag can move a swing in its lesson's order (a discard); notes saved as typed leave the order be.
        defer { if flags != nil { annotations.add(1, ordering: .relaxed) } }
        do { try catalogue.annotate(clipID: clipID, flags: flags, notes: notes) } catch {
            throw StudioError(error.unavailable ? 503 : 404, "\(error)")
        }
        return .json(StudioAPI.Clip(try keepBeside(here)))
    }

    /// The clip's flags and notes written beside it too (`ClipAnnotations`), so a catalogue made again from the library
    /// has them; a folder that cannot take them is said, not passed over.
    /// Returns the clip as the catalogue holds it now, read under the lock: of two annotations at once, the file gets
    /// the later.
    @discardableResult
    func keepBeside(_ c: CatalogueClip) throws -> CatalogueClip {
        do {
            return try besideLock.withLock {
                let now = (try? catalogue.clip(c.clipID)).flatMap { $0 } ?? c
                try ClipAnnotations.write(flags: now.flags, notes: now.notes, to: c.path)
                return now
            }
        } catch {
            throw StudioError(
                500,
                "\(c.clipID): saved in the catalogue, but not beside the clip in \(c.path) (\(error)): a catalogue rebuilt from the library would not have it"
            )
        }
    }

    /// A clip's drawings (`ClipDrawings`: what a coach drew and measured on its frames), and whether undo and redo
    /// have a state to go to.
    func drawings(_ clipID: String) throws -> WebServer.Response {
        let c = try clipHere(clipID)
        do { return .json(Self.drawingsAnswer(clipID, try ClipDrawings.readKept(c.path))) } catch {
            throw StudioError(422, "\(error)")
        }
    }

    static func drawingsAnswer(_ clipID: String, _ k: ClipDrawings.Kept) -> StudioAPI.Drawings {
        StudioAPI.Drawings(clipId: clipID, drawings: k.drawings, canUndo: !k.undo.isEmpty, canRedo: !k.redo.isEmpty)
    }

    /// Replaces a clip's drawings with the body's `{"drawings": [...]}`, each checked (`ClipDrawings.problem`: the
    /// kind, its number of points, every coordinate a fraction of the frame, the time, colour and words); the state
    /// before can be undone. Kept beside the clip only.
    func setDrawings(_ clipID: String, _ body: Data) throws -> WebServer.Response {
        struct Body: Decodable { var drawings: [ClipDrawings.Drawing] }
        let given = try Self.body(
            Body.self, body,
            shape:
                ##"{"drawings": [{"kind": "line"|"angle"|"circle"|"arrow"|"text"|"freehand", "t": seconds, "points": [[x, y], …], "color": "#rrggbb", "span": "frame"|"clip", "text": …}, …]}"##,
            about: clipID
        ).drawings
        if let why = ClipDrawings.problem(given) { throw StudioError(400, "\(clipID): \(why)") }
        // A file there that is not drawings is replaced (GET names it): the coach draws anew, with no history.
        return try changeDrawings(clipID, replacingUnreadable: true) { $0.replace(with: given) }
    }

    /// `POST /api/clips/<id>/drawings/undo` and `…/redo`: the state before the last change, or after the last undo
    /// (409 when there is none).
    func stepDrawings(_ clipID: String, back: Bool) throws -> WebServer.Response {
        try changeDrawings(clipID) { kept in
            guard back ? kept.stepBack() : kept.stepForward() else {
                throw StudioError(409, "\(clipID): nothing to \(back ? "undo" : "redo")")
            }
        }
    }

    /// Reads the clip's drawings, changes them and writes them back, under the lock that keeps two writes apart.
    func changeDrawings(
        _ clipID: String, replacingUnreadable: Bool = false, _ change: (inout ClipDrawings.Kept) throws -> Void
    ) throws -> WebServer.Response {
        let c = try clipHere(clipID)
        let kept: ClipDrawings.Kept = try besideLock.withLock {
            var k: ClipDrawings.Kept
            do { k = try ClipDrawings.readKept(c.path) } catch {
                guard replacingUnreadable else { throw StudioError(422, "\(error)") }
                k = ClipDrawings.Kept()
            }
            try change(&k)
            do { try ClipDrawings.write(k, to: c.path) } catch {
                throw StudioError(
                    500, "\(clipID): the drawings could not be kept beside the clip in \(c.path) (\(error))")
            }
            return k
        }
        return .json(Self.drawingsAnswer(clipID, kept))
    }

    /// A JSON decoding error in a sentence: the field it stopped at and why.
    /// A request's JSON body as `type`; one that does not read is a 400 saying the shape it must have (`shape`), after
    /// `about` (the swing or clip it is for) when given, and which field was wrong.
    static func body<T: Decodable>(_ type: T.Type, _ body: Data, shape: String, about: String? = nil) throws -> T {
        do { return try JSONInput.decode(type, from: body) } catch {
            throw StudioError(
                400, "\(about.map { "\($0): " } ?? "")the body must be \(shape) (\(decodingProblem(error)))")
        }
    }

    static func decodingProblem(_ error: any Error) -> String {
        func path(_ c: [any CodingKey]) -> String {
            c.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let c)?: return "\(path(c.codingPath + [key])) is missing"
        case .typeMismatch(_, let c)?, .valueNotFound(_, let c)?: return "\(path(c.codingPath)): \(c.debugDescription)"
        case .dataCorrupted(let c)?:
            return c.codingPath.isEmpty ? "not JSON" : "\(path(c.codingPath)): \(c.debugDescription)"
        default: return "\(error)"
        }
    }

    /// Flags (and notes) for every angle of a swing at once: keep, discard or star what was hit, not one camera's view.
    func annotateSwing(_ id: String, _ body: Data) throws -> WebServer.Response {
        let (flags, notes) = try decodeAnnotation(body, id)
        guard let s = try swing(id) else { throw StudioError(404, "\(id): no such swing") }
        for c in s { try Self.requireFolder(c) }
        // Only a flag can move a swing in its lesson's order (a discard); notes saved as typed leave the order be.
        defer { if flags != nil { annotations.add(1, ordering: .relaxed) } }
        for c in s {
            do { try catalogue.annotate(clipID: c.clipID, flags: flags, notes: notes) } catch {
                throw StudioError(error.unavailable ? 503 : 500, "\(error)")
            }
        }
        guard let fresh = try swing(id) else { throw StudioError(404, "\(id): gone") }
        for c in fresh { try keepBeside(c) }
        return .json(swingSummary(fresh, roster?.placement))
    }

    /// Sessions: a device's clips from one capture session, newest first, with the figures a coach scans.
    func sessions() throws -> [StudioAPI.SessionRow] {
        let clips = try clips()
        let groups = Dictionary(grouping: clips) { "\($0.device)\u{1}\($0.sessionID)" }
        return groups.values.map { g in
            let first = g[0]
            return StudioAPI.SessionRow(
                device: first.device, session: first.session, sessionId: first.sessionID, shots: g.count,
                kept: g.filter { $0.flags.contains(.kept) }.count,
                discarded: g.filter { $0.flags.contains(.discarded) }.count,
                starred: g.filter { $0.flags.contains(.starred) }.count,
                belowPolicy: g.filter { $0.belowPolicy != nil }.count, bytes: Catalogue.total(g.map(\.bytes)),
                firstReceivedAt: g.map(\.receivedAt).min() ?? "", lastReceivedAt: g.map(\.receivedAt).max() ?? "",
                lastSeq: g.compactMap(\.receivedSeq).max() ?? 0)
        }.sorted { $0.lastSeq > $1.lastSeq }  // newest received first, whatever the wall clock said
    }

    /// One session: its report (counts, span, profile) and every shot on its device clock, for the timeline.
    func session(device: String, sessionID: String) throws -> WebServer.Response {
        let g = try clips().filter { $0.device == device && $0.sessionID == sessionID }.sorted {
            $0.t0DeviceNs < $1.t0DeviceNs
        }
        guard let first = g.first, let last = g.last else {
            throw StudioError(404, "\(device)/\(sessionID): no such session")
        }
        var window = StudioAPI.SessionDetail.Window()
        if let m = try? ClipMeta.read(first.path + "/meta.json") {
            window = .init(clipPreNs: m.window.clipPreNs.value, clipPostNs: m.window.clipPostNs.value)
        }
        return .json(
            StudioAPI.SessionDetail(
                device: device, session: first.session, sessionId: sessionID, captureProfile: first.captureProfile,
                report: .init(
                    shots: g.count, spanNs: last.t0DeviceNs - first.t0DeviceNs,
                    frames: Catalogue.total(g.map { Int64($0.frames) }), bytes: Catalogue.total(g.map(\.bytes)),
                    kept: g.filter { $0.flags.contains(.kept) }.count,
                    discarded: g.filter { $0.flags.contains(.discarded) }.count,
                    starred: g.filter { $0.flags.contains(.starred) }.count, belowPolicy: g.compactMap(\.belowPolicy),
                    window: window,
                    note: "the device's own report.json (policy, thermal, drops) stays with the device's session output"
                ),
                shots: g.map(StudioAPI.Clip.init)))
    }
}

extension DecodingError {
    /// The top-level field a decoding error stopped at (nil when it is the body itself).
    var field: String? {
        switch self {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c): c.codingPath.first?.stringValue
        case .keyNotFound(let k, let c): (c.codingPath.first ?? k).stringValue
        @unknown default: nil
        }
    }
}

extension WebServer.Request {
    /// The query's `name` as a whole number in `range`, or `default` when it is not given; anything else is a 400 that
    /// names the parameter, what it takes and what came (a careless `?limit=-5` is not quietly read as 1).
    func number(_ name: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = query[name] else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw Studio.StudioError(
                400, "\(name)=\(text.prefix(40)): a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }
}

extension ISO8601DateFormatter {
    /// YYYY-MM-DD.
    nonisolated(unsafe) static let day: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate, .withDashSeparatorInDate]
        return f
    }()
}
