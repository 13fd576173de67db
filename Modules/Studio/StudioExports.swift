import Catalogue
import Crypto
import Foundation
import JSONInput
import Library
import Media
import PayloadSource
import Raster
import Synchronization
import Syscall
import WebServer

extension StudioAPI {
    /// `POST /api/exports`: what to make. One swing (its angles side by side, or the one `angle` names), or two (a
    /// comparison side by side, or one over the other), aligned on `align`, kept `before`…`after` s around it, slowed
    /// over `slow`, with the coach's drawings burned in unless `drawings` is false.
    public struct ExportRequest: Codable, Sendable, Equatable {
        public struct Side: Codable, Sendable, Equatable {
            public var swing: String
            /// One angle's clip id; nil: every angle (one swing) or its first (two).
            public var angle: String?
            public init(swing: String, angle: String? = nil) {
                self.swing = swing
                self.angle = angle
            }
        }
        public struct Slow: Codable, Sendable, Equatable {
            public var factor: Double
            /// Seconds from the aligned moment (negative: before it).
            public var from: Double
            public var to: Double
            public init(factor: Double, from: Double, to: Double) {
                self.factor = factor
                self.from = from
                self.to = to
            }
        }
        public var swings: [Side]
        /// `side-by-side` (nil) or `overlay`.
        public var layout: String?
        public var opacity: Double?
        /// `impact` (nil), `address`, `top` or `finish`.
        public var align: String?
        public var before: Double?
        public var after: Double?
        public var slow: Slow?
        public var drawings: Bool?

        public init(
            swings: [Side], layout: String? = nil, opacity: Double? = nil, align: String? = nil, before: Double? = nil,
            after: Double? = nil, slow: Slow? = nil, drawings: Bool? = nil
        ) {
            self.swings = swings
            self.layout = layout
            self.opacity = opacity
            self.align = align
            self.before = before
            self.after = after
            self.slow = slow
            self.drawings = drawings
        }
    }

    /// An export and how far it is: `queued`, `making` (`progress` 0…1), `done` (its `video`) or `failed` (`error`).
    public struct Export: Codable, Sendable, Equatable {
        public var id: String
        public var state: String
        public var progress: Double
        public var created: String
        /// What it shows, in words ("Swing 12:04:31 PM, 2 angles, ¼× from −0.5 s to +0.3 s").
        public var title: String
        public var request: ExportRequest
        @Nullable public var video: String?
        @Nullable public var error: String?
        @Nullable public var width: Int?
        @Nullable public var height: Int?
        @Nullable public var durationSeconds: Double?
        @Nullable public var bytes: Int64?
        @Nullable public var sound: Bool?
    }

    public struct ExportList: Codable, Sendable, Equatable {
        public var exports: [Export]
    }

    /// Pushed as an export moves: queued, each percent made, done or failed.
    public struct ExportMessage: Codable, Sendable, Equatable {
        public var type = "export"
        public var export: Export
    }
}

/// The studio's exports: one MP4 to send a student, made by the host off the request path — one at a time, in the
/// order asked, on a thread of their own — and kept in `LIBRARY/exports/<id>/` (`export.json`, `export.mp4`). An export
/// asked for and not finished when the host stopped is made again when it starts.
final class StudioExports: @unchecked Sendable {
    // @unchecked: `jobs` is behind its Mutex; the queue runs one job at a time.
    let directory: String
    let jobs = Mutex<[String: StudioAPI.Export]>([:])
    let queue = DispatchQueue(label: "ppc.studio.exports")
    /// Tells open pages (the studio's WebSocket).
    let tell: @Sendable (StudioAPI.Export) -> Void
    /// Turns a request into what the composer makes (the studio's swings, drawings and key positions): given once the
    /// studio is made (`begin`).
    /// `rendering` false: checked and counted, its drawings not drawn yet.
    typealias Plan = @Sendable (_ request: StudioAPI.ExportRequest, _ rendering: Bool) throws -> ClipComposer.Spec
    let planner = Mutex<Plan?>(nil)
    /// Exports deleted while being made: the composer is told to stop at its next frame.
    let stopped = Mutex<Set<String>>([])

    func plan(_ q: StudioAPI.ExportRequest, rendering: Bool) throws -> ClipComposer.Spec {
        guard let p = planner.withLock({ $0 }) else { throw Studio.StudioError(503, "the studio is starting") }
        return try p(q, rendering)
    }

    /// The most exports kept; the oldest finished is removed past it (each is a few MB). The most waiting or being
    /// made at once: past it, a new one is refused (429) until one is made or deleted.
    static let maxKept = 200, maxWaiting = 20

    init(library: String, tell: @escaping @Sendable (StudioAPI.Export) -> Void) {
        directory = library + "/exports"
        self.tell = tell
        var found: [String: StudioAPI.Export] = [:]
        for id in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard PlainName.problem(id, what: "export") == nil,
                var e = try? LibraryFile.read(
                    StudioAPI.Export.self, from: record(id), limit: 1 << 20, what: "an export")
            else { continue }
            if e.state == "queued" || e.state == "making" {
                e.state = "queued"
                e.progress = 0
            }
            found[id] = e
        }
        jobs.withLock { $0 = found }
    }

    /// Starts making: with `plan`, the exports left queued when the host last stopped first, oldest first.
    func begin(plan: @escaping Plan) {
        planner.withLock { $0 = plan }
        for e in all.reversed() where e.state == "queued" { start(e.id) }
    }

    var all: [StudioAPI.Export] { jobs.withLock { Array($0.values) }.sorted { $0.created > $1.created } }

    func export(_ id: String) -> StudioAPI.Export? { jobs.withLock { $0[id] } }

    func file(_ id: String) -> String { "\(directory)/\(id)/export.mp4" }

    /// Queues `request` (checked now: a swing that is not there or a field out of range is refused at once).
    func add(_ request: StudioAPI.ExportRequest, title: String) throws -> StudioAPI.Export {
        _ = try plan(request, rendering: false)
        let waiting = jobs.withLock { $0.values.filter { $0.state == "queued" || $0.state == "making" }.count }
        guard waiting < Self.maxWaiting else {
            throw Studio.StudioError(
                429, "\(waiting) exports are waiting to be made: let them finish, or delete one (GET /api/exports)")
        }
        let id = Self.newID()
        let e = StudioAPI.Export(
            id: id, state: "queued", progress: 0, created: ISO8601DateFormatter.utcSeconds.string(from: Date()),
            title: title,
            request: request)
        try FileManager.default.createDirectory(atPath: "\(directory)/\(id)", withIntermediateDirectories: true)
        try keep(e)
        trim()
        tell(e)
        start(id)
        return e
    }

    /// Removes an export and its file.
    func remove(_ id: String) -> Bool {
        guard let gone = jobs.withLock({ $0.removeValue(forKey: id) }) else { return false }
        if gone.state == "making" { stopped.withLock { _ = $0.insert(id) } }
        try? FileManager.default.removeItem(atPath: "\(directory)/\(id)")
        return true
    }

    /// Where export `id`'s record is kept.
    func record(_ id: String) -> String { "\(directory)/\(id)/export.json" }

    func keep(_ e: StudioAPI.Export) throws {
        jobs.withLock { $0[e.id] = e }
        try LibraryFile.write(e, to: record(e.id))
    }

    /// Changes export `id` as it stands — read, changed and put back in one step, so an export deleted meanwhile stays
    /// deleted — then keeps and tells it.
    func update(_ id: String, _ change: (inout StudioAPI.Export) -> Void) {
        let changed: StudioAPI.Export? = jobs.withLock { all in
            guard var e = all[id] else { return nil }
            change(&e)
            all[id] = e
            return e
        }
        guard let e = changed else { return }
        try? LibraryFile.write(e, to: record(id))  // (a record deleted meanwhile has no folder: nothing is written)
        tell(e)
    }

    func start(_ id: String) {
        queue.async { [self] in make(id) }
    }

    func make(_ id: String) {
        guard let e = export(id), e.state == "queued" else { return }
        update(id) { $0.state = "making" }
        do {
            let spec = try plan(e.request, rendering: true)
            var told = 0
            let report = try ClipComposer.compose(
                spec, to: file(id), stop: { self.stopped.withLock { $0.contains(id) } },
                progress: { fraction in
                    let percent = Int(fraction * 100)
                    guard percent > told else { return }
                    told = percent
                    update(id) { $0.progress = fraction }
                })
            let bytes = (try? FileManager.default.attributesOfItem(atPath: file(id))[.size] as? Int64) ?? nil
            update(id) {
                $0.state = "done"
                $0.progress = 1
                $0.video = "/exports/\(id).mp4"
                $0.width = report.width
                $0.height = report.height
                $0.durationSeconds = report.durationSeconds
                $0.bytes = bytes
                $0.sound = report.hasSound
            }
        } catch {
            update(id) {
                $0.state = "failed"
                $0.error = "\(error)"
            }
        }
        stopped.withLock { _ = $0.remove(id) }
    }

    /// Past `maxKept`, the oldest finished exports go.
    func trim() {
        let finished = all.filter { $0.state == "done" || $0.state == "failed" }
        for e in finished.dropFirst(Self.maxKept) { _ = remove(e.id) }
    }

    static func newID() -> String {
        "x"
            + Crypto.random(6).map {
                String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
            }
            .joined()
    }
}

extension ISO8601DateFormatter {
    /// UTC, seconds: how the studio stamps what it makes.
    static var utcSeconds: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f
    }
}

// MARK: - From a request to what the composer makes

extension Studio {
    /// The export's parts: each side's angles cut around the aligned moment, their drawings and the impact drawn.
    func exportSpec(_ q: StudioAPI.ExportRequest, rendering: Bool = true) throws -> ClipComposer.Spec {
        guard (1...2).contains(q.swings.count) else {
            throw StudioError(400, "swings: \(q.swings.count); one swing, or two to compare or overlay")
        }
        let overlay: Bool
        switch q.layout ?? "side-by-side" {
        case "side-by-side": overlay = false
        case "overlay": overlay = true
        case let other: throw StudioError(400, "layout \(other.prefix(40)): side-by-side or overlay")
        }
        let align = q.align ?? "impact"
        guard ["impact", "address", "top", "finish"].contains(align) else {
            throw StudioError(400, "align \(align.prefix(40)): impact, address, top or finish")
        }
        struct Part {
            let clip: CatalogueClip
            let key: Double
            let duration: Double
            let impact: Double
            let size: (width: Int, height: Int)
        }
        var parts: [Part] = []
        for (i, side) in q.swings.enumerated() {
            guard let s = try swing(side.swing) else {
                throw StudioError(404, "swings[\(i)]: \(side.swing): no such swing")
            }
            let angles: [CatalogueClip]
            if let a = side.angle {
                guard let c = s.first(where: { $0.clipID == a }) else {
                    throw StudioError(404, "swings[\(i)].angle \(a): not an angle of swing \(side.swing)")
                }
                angles = [c]
            } else {
                angles = q.swings.count == 1 ? s : Array(s.prefix(1))
            }
            let positions = try keyPositions(s)
            let offset: Double? =
                switch align {
                case "address": positions.address
                case "top": positions.top
                case "finish": positions.finish
                default: 0
                }
            guard let offset else { throw StudioError(400, "swings[\(i)]: swing \(side.swing) has no \(align) marked") }
            for c in angles.prefix(ClipComposer.maxInputs) {
                try Self.requireFolder(c)
                let meta: ClipMeta
                do { meta = try ClipMeta.read(c.path + "/meta.json") } catch {
                    throw StudioError(500, "\(c.clipID): \(error)")
                }
                let facts: ClipProbe.Facts
                do { facts = try ClipProbe.facts(c.path + "/clip.mp4") } catch {
                    throw StudioError(422, "\(c.clipID): its clip.mp4 does not read (\(error))")
                }
                let impact = Double(meta.t0Ns.value - meta.window.clipTimeZeroNs) / 1e9
                parts.append(
                    Part(
                        clip: c, key: impact + offset,
                        duration: Double(meta.frames) / Double(max(1, meta.captureProfile.framesPerSecond)),
                        impact: impact, size: (facts.width, facts.height)))
            }
        }
        if overlay && parts.count != 2 {
            throw StudioError(400, "layout overlay: two angles (two swings, or one swing's two), not \(parts.count)")
        }
        // Kept around the aligned moment: what every part has, within what was asked.
        var before = parts.map(\.key).min() ?? 0
        var after = parts.map { $0.duration - $0.key }.min() ?? 0
        if let b = q.before { before = min(before, max(0, b)) }
        if let a = q.after { after = min(after, max(0, a)) }
        guard before + after > 0.05 else {
            throw StudioError(
                400, "the angles share no time around their \(align) (before \(before) s, after \(after) s)")
        }
        let height = min(720, parts.map(\.size.height).min() ?? 720) & ~1
        var spec = ClipComposer.Spec(
            inputs: parts.map {
                .init(path: $0.clip.path + "/clip.mp4", start: max(0, $0.key - before), end: $0.key + after)
            }, layout: overlay ? .overlay(opacity: q.opacity ?? 0.5) : .sideBySide, height: max(16, height),
            framesPerSecond: 30,
            slow: q.slow.map { .init(from: before + $0.from, to: before + $0.to, factor: $0.factor) }, soundFrom: 0)
        if let why = ClipComposer.problem(spec) { throw StudioError(400, why) }
        // What is drawn over each angle, at the size it is shown in the export: counted against the pictures' budget
        // when the request is checked, drawn when the export is made.
        let sizes = ClipComposer.outputSizes(spec, inputs: parts.map(\.size))
        let drawings = q.drawings ?? true
        var stretches: [[Stretch]] = []
        var bytes = 0
        for (i, p) in parts.enumerated() {
            let s = try exportStretches(
                p.clip, impact: p.impact, drawings: drawings, within: spec.inputs[i].start...spec.inputs[i].end)
            bytes += s.count * sizes[i].width * sizes[i].height * 4
            stretches.append(s)
        }
        guard bytes <= ClipComposer.maxPictureBytes else {
            throw StudioError(
                422,
                "\(stretches.map(\.count).reduce(0, +)) changes of what is drawn, \(bytes >> 20) MiB of pictures: at most \(ClipComposer.maxPictureBytes >> 20) MiB — fewer drawings near their frames, or one for the whole clip"
            )
        }
        if rendering {
            for i in parts.indices {
                spec.inputs[i].pictures = try stretches[i].map { try picture($0, size: sizes[i]) }
            }
        }
        return spec
    }

    /// A stretch of an angle's time in which what is drawn over it does not change; nil in `shown`: the impact's mark.
    struct Stretch {
        let from: Double
        let to: Double
        let shown: [ClipDrawings.Drawing?]
    }

    func picture(_ s: Stretch, size: (width: Int, height: Int)) throws -> ClipComposer.Picture {
        let r: Raster
        do { r = try Raster(width: size.width, height: size.height) } catch { throw StudioError(422, "\(error)") }
        for d in s.shown { Self.draw(d, on: r) }
        let (bytes, stride) = r.withPixels { b, stride in ([UInt8](b), stride) }
        return .init(from: s.from, to: s.to, bgra: bytes, stride: stride, width: size.width, height: size.height)
    }

    /// What is drawn over one angle: its drawings (each near its frame, ±0.25 s as the studio shows it, or all
    /// through) and the impact's mark (for 0.1 s of video from it), one stretch for each span of time in which what is
    /// shown does not change.
    func exportStretches(
        _ c: CatalogueClip, impact: Double, drawings: Bool, within: ClosedRange<Double>
    ) throws -> [Stretch] {
        var shown: [(from: Double, to: Double, drawing: ClipDrawings.Drawing?)] = []
        if drawings {
            let kept: [ClipDrawings.Drawing]
            do { kept = try ClipDrawings.read(c.path) } catch { throw StudioError(500, "\(c.clipID): \(error)") }
            for d in kept {
                if d.span == .clip {
                    shown.append((within.lowerBound, within.upperBound + 1, d))
                } else {
                    shown.append((d.t - 0.25, d.t + 0.25, d))
                }
            }
        }
        shown.append((impact, impact + 0.1, nil))  // nil: the impact's mark
        var cuts = Set(shown.flatMap { [$0.from, $0.to] }.map { min(max($0, within.lowerBound), within.upperBound) })
        cuts.insert(within.lowerBound)
        let times = cuts.sorted()
        var stretches: [Stretch] = []
        for (a, b) in zip(times, times.dropFirst()) where b > a {
            let mid = (a + b) / 2
            let here = shown.filter { $0.from <= mid && mid < $0.to }
            guard !here.isEmpty else { continue }
            stretches.append(Stretch(from: a, to: b, shown: here.map(\.drawing)))
        }
        return stretches
    }

    /// One drawing as the studio's page draws it (its tilt or angle in degrees beside a line or an angle), or the
    /// impact's mark when nil.
    static func draw(_ d: ClipDrawings.Drawing?, on r: Raster) {
        let w = Double(r.width)
        let h = Double(r.height)
        let unit = max(2, h / 270)
        let black = Raster.Color(red: 0, green: 0, blue: 0, alpha: 0.7)
        guard let d else {
            let red = Raster.Color(red: 1, green: 0.23, blue: 0.19)
            r.stroke(
                [(x: unit, y: unit), (x: w - unit, y: unit), (x: w - unit, y: h - unit), (x: unit, y: h - unit)],
                color: red, lineWidth: unit * 2, closed: true)
            r.text("IMPACT", x: unit * 6, y: unit * 6 + h / 16, size: h / 16, color: red, outline: black)
            return
        }
        let color = d.color.flatMap { Raster.Color(hex: $0) } ?? Raster.Color(red: 1, green: 0.824, blue: 0.247)
        let p = d.points.map { (x: $0[0] * w, y: $0[1] * h) }
        let label = { (text: String, x: Double, y: Double) in
            r.text(text, x: x + unit * 3, y: y - unit * 3, size: max(12, h / 28), color: color, outline: black)
        }
        switch d.kind {
        case .circle where p.count == 2:
            r.circle(
                x: p[0].x, y: p[0].y,
                radius: ((p[1].x - p[0].x) * (p[1].x - p[0].x) + (p[1].y - p[0].y) * (p[1].y - p[0].y)).squareRoot(),
                color: color, lineWidth: unit)
        case .text where p.count == 1:
            if let t = d.text { r.text(t, x: p[0].x, y: p[0].y, size: max(12, h / 24), color: color, outline: black) }
        default:
            r.stroke(p, color: color, lineWidth: unit)
        }
        if d.kind == .arrow, p.count == 2 {
            let a = atan2(p[1].y - p[0].y, p[1].x - p[0].x)
            let head = unit * 6
            r.fill(
                [
                    p[1], (x: p[1].x - head * cos(a - 0.45), y: p[1].y - head * sin(a - 0.45)),
                    (x: p[1].x - head * cos(a + 0.45), y: p[1].y - head * sin(a + 0.45)),
                ], color: color)
        }
        if d.kind == .line, p.count == 2 {
            var deg = atan2(-(p[1].y - p[0].y), p[1].x - p[0].x) * 180 / .pi
            if deg > 90 { deg -= 180 } else if deg < -90 { deg += 180 }
            label(String(format: "%.1f°", abs(deg)), (p[0].x + p[1].x) / 2, (p[0].y + p[1].y) / 2)
        }
        if d.kind == .angle, p.count == 3 {
            let u = (x: p[0].x - p[1].x, y: p[0].y - p[1].y)
            let v = (x: p[2].x - p[1].x, y: p[2].y - p[1].y)
            let n = (u.x * u.x + u.y * u.y).squareRoot() * (v.x * v.x + v.y * v.y).squareRoot()
            let deg = n > 0 ? acos(max(-1, min(1, (u.x * v.x + u.y * v.y) / n))) * 180 / .pi : 0
            label(String(format: "%.1f°", deg), p[1].x, p[1].y)
        }
    }

    /// An export's title in a coach's words: whose swings, how laid out, how slowed ("Ana Ruiz's swing, 2 angles side by
    /// side, ¼× from −0.2 s to +0.2 s").
    func exportTitle(_ q: StudioAPI.ExportRequest) -> String {
        let placement = roster?.placement
        let whose = q.swings.map { side -> String in
            guard let s = try? swing(side.swing) else { return "a swing" }
            return standing(s, placement).student.map { "\($0.name)'s swing" } ?? "a swing"
        }
        var what: String
        if q.swings.count == 1 {
            let n = q.swings[0].angle == nil ? ((try? swing(q.swings[0].swing))??.count ?? 1) : 1
            what = whose[0].prefix(1).uppercased() + whose[0].dropFirst() + (n > 1 ? ", \(n) angles side by side" : "")
        } else {
            what = (q.layout == "overlay" ? "Overlay: " : "Comparison: ") + whose.joined(separator: " and ")
        }
        if let s = q.slow {
            let rate = [1: "1×", 0.5: "½×", 0.25: "¼×", 0.125: "⅛×"][s.factor] ?? "\(s.factor)×"
            what += ", \(rate) from \(String(format: "%+.1f", s.from)) s to \(String(format: "%+.1f", s.to)) s"
        }
        return what
    }

    // MARK: Requests

    func exportsJSON() -> WebServer.Response { .json(StudioAPI.ExportList(exports: exports.all)) }

    func addExport(_ body: Data) throws -> WebServer.Response {
        let q = try Self.body(
            StudioAPI.ExportRequest.self, body,
            shape:
                #"{"swings": [{"swing": id, "angle": clipId?}], "layout", "align", "slow": {"factor", "from", "to"}, …}"#
        )
        do {
            let e = try exports.add(q, title: exportTitle(q))
            return .json(e, status: 202)
        } catch let e as StudioError { throw e } catch {
            throw StudioError(500, "the export could not be queued (\(error))")
        }
    }

    func exportJSON(_ id: String) throws -> WebServer.Response {
        guard let e = exports.export(id) else { throw StudioError(404, "\(id): no such export") }
        return .json(e)
    }

    func deleteExport(_ id: String) throws -> WebServer.Response {
        guard exports.remove(id) else { throw StudioError(404, "\(id): no such export") }
        return .json(StudioAPI.ExportList(exports: exports.all))
    }

    /// `/exports/<id>.mp4`: a finished export, by Range, named for saving.
    func exportFile(_ r: WebServer.Request) -> WebServer.Response {
        let parts = r.path.split(separator: "/").map(String.init)
        guard parts.count == 2, parts[1].hasSuffix(".mp4") else {
            return .error(404, "\(r.path): exports are /exports/<id>.mp4")
        }
        let id = String(parts[1].dropLast(4))
        guard exports.export(id)?.state == "done", FileSystem.isRegularFile(exports.file(id)) else {
            return .error(404, "\(id): no such export made (GET /api/exports lists them)")
        }
        return .file(
            path: exports.file(id), contentType: "video/mp4",
            headers: ["Content-Disposition: inline; filename=\"ppc-\(id).mp4\""])
    }
}
