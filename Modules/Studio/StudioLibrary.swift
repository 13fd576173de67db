import Catalogue
import Foundation
import JSONInput
import Library
import Syscall
import WebServer

extension StudioAPI {
    /// A student of the library's roster, with how many swings are theirs.
    public struct Student: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var handedness: String
        public var notes: String
        public var swings: Int
        /// When their newest swing was received; null before their first.
        @Nullable public var lastSwingAt: String?
    }

    /// Who is hitting at a bay now (null bay: the devices in no bay).
    public struct Hitting: Codable, Sendable, Equatable {
        @Nullable public var bay: String?
        @Nullable public var student: String?
        @Nullable public var studentName: String?
        public var since: String
    }

    public struct Roster: Codable, Sendable, Equatable {
        public var students: [Student]
        public var hitting: [Hitting]
    }

    /// A student's swings at one bay in one sitting (one turn, one day on the host's clock), across every camera.
    public struct Lesson: Codable, Sendable, Equatable {
        public var id: String
        @Nullable public var student: String?
        @Nullable public var studentName: String?
        @Nullable public var bay: String?
        /// The host's local day, YYYY-MM-DD.
        public var day: String
        /// When its first and last swings were received.
        public var from: String
        public var to: String
        public var swings: Int
        public var devices: [String]
        public var starred: Int
        public var kept: Int
        public var discarded: Int
    }

    public struct Lessons: Codable, Sendable, Equatable {
        public var lessons: [Lesson]
    }

    /// What a delete removed.
    public struct Removed: Codable, Sendable, Equatable {
        public var swing: String
        public var clips: [String]
        public var bytes: Int64
    }
}

/// Where a swing stands in the coach's library: whose it is and in which lesson.
struct Standing {
    var student: Roster.Student?
    var lesson: String
    var day: String
}

extension Studio {
    /// A swing's student (the turn of its bay in effect when its first angle was received) and lesson.
    func standing(_ s: [CatalogueClip], _ placement: Roster.Placement?) -> Standing {
        // The angle received first places the swing.
        let first = s.min { ($0.receivedSeq ?? .max, $0.receivedAt) < ($1.receivedSeq ?? .max, $1.receivedAt) }
        let received = s.map(\.receivedAt).min() ?? ""
        let bay = s.first?.bay
        let day = Self.localDay(received)
        let turn = placement?.turn(
            bay: bay, receivedAt: first?.receivedAt ?? received, hostBoot: first?.hostBoot,
            receivedMonoNs: first?.receivedMonoNs)
        let student = turn?.turn.student.flatMap { roster?.student($0) }
        let lesson = turn.map { "t\($0.index)-\(day)" } ?? "b-\(bay ?? "none")-\(day)"
        return Standing(student: student, lesson: lesson, day: day)
    }

    /// The host's local day (YYYY-MM-DD) of an ISO 8601 time as the host stamps receipts (`2026-12-04T16:53:07Z`);
    /// its first ten characters when it is not one.
    static func localDay(_ iso: String) -> String {
        let b = Array(iso.utf8)
        func n(_ from: Int, _ count: Int) -> Int? {
            guard b.count >= from + count else { return nil }
            var v = 0
            for c in b[from..<(from + count)] {
                guard (0x30...0x39).contains(c) else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            return v
        }
        guard let y = n(0, 4), let m = n(5, 2), let d = n(8, 2), let h = n(11, 2), let mi = n(14, 2), let s = n(17, 2),
            (1...12).contains(m)
        else { return String(iso.prefix(10)) }
        // Days from the civil date (proleptic Gregorian), then the host's offset from UTC at that moment.
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
        let utc = Double(days * 86_400 + h * 3600 + mi * 60 + s)
        let date = Date(timeIntervalSince1970: utc)
        let local = utc + Double(TimeZone.current.secondsFromGMT(for: date))
        let ld = Int((local / 86_400).rounded(.down))
        // And back to a civil date.
        let z = ld + 719_468
        let e2 = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - e2 * 146_097
        let yoe2 = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy2 = doe - (365 * yoe2 + yoe2 / 4 - yoe2 / 100)
        let mp = (5 * doy2 + 2) / 153
        let day = doy2 - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe2 + e2 * 400 + (month <= 2 ? 1 : 0)
        return String(format: "%04d-%02d-%02d", year, month, day)
    }

    // MARK: Students

    func rosterHere() throws -> Roster {
        guard let roster else { throw StudioError(409, "this studio was started without a library's students") }
        return roster
    }

    /// `GET /api/students`: every student with their swing count, and who is hitting at each bay now.
    func studentsJSON() throws -> WebServer.Response {
        let roster = try rosterHere()
        // Each student's swings from the cached placement of every swing (read again only when a swing arrives or goes,
        // or the roster changes): the Swings page asks for the students as it opens.
        var count: [String: (Int, String)] = [:]
        if !roster.students.isEmpty {
            for s in try lessonOrder().swings {
                guard let id = s.student else { continue }
                let c = count[id] ?? (0, "")
                count[id] = (c.0 + 1, max(c.1, s.receivedAt))
            }
        }
        return .json(
            StudioAPI.Roster(
                students: roster.students.map {
                    StudioAPI.Student(
                        id: $0.id, name: $0.name, handedness: $0.handedness.rawValue, notes: $0.notes,
                        swings: count[$0.id]?.0 ?? 0, lastSwingAt: count[$0.id]?.1)
                },
                hitting: roster.hitting.map {
                    StudioAPI.Hitting(
                        bay: $0.bay, student: $0.student, studentName: $0.student.flatMap { roster.student($0)?.name },
                        since: $0.since)
                }))
    }

    struct StudentBody: Decodable {
        var name: String?
        var handedness: Roster.Handedness?
        var notes: String?
    }

    /// `POST /api/students` (a new one) or `PUT /api/students/<id>` (a change): `{"name", "handedness", "notes"}`.
    func saveStudent(_ id: String?, _ body: Data) throws -> WebServer.Response {
        let roster = try rosterHere()
        let b = try Self.body(
            StudentBody.self, body, shape: #"{"name": …, "handedness": "right"|"left", "notes": …}"#)
        if let name = b.name, let why = Roster.textProblem(name, what: "name", max: 200, empty: false) {
            throw StudioError(400, why)
        }
        if let notes = b.notes, let why = Roster.textProblem(notes, what: "notes", max: 10_000, empty: true) {
            throw StudioError(400, why)
        }
        do {
            let s: Roster.Student
            if let id {
                guard roster.student(id) != nil else { throw StudioError(404, "\(id): no such student") }
                s = try roster.update(id, name: b.name, handedness: b.handedness, notes: b.notes)
            } else {
                guard let name = b.name else { throw StudioError(400, "name is missing: a new student has a name") }
                s = try roster.add(name: name, handedness: b.handedness ?? .right, notes: b.notes ?? "")
            }
            return .json(
                StudioAPI.Student(
                    id: s.id, name: s.name, handedness: s.handedness.rawValue, notes: s.notes, swings: 0,
                    lastSwingAt: nil))
        } catch let e as StudioError { throw e } catch let e as LibraryError {
            throw StudioError(400, e.description)
        } catch { throw StudioError(500, "\(roster.path): \(error)") }
    }

    struct HittingBody: Decodable {
        @Nullable var bay: String?
        @Nullable var student: String?
    }

    /// `PUT /api/hitting` `{"bay": B or null, "student": ID or null}`: from now, the bay's swings are the student's.
    func setHitting(_ body: Data) throws -> WebServer.Response {
        let roster = try rosterHere()
        let b = try Self.body(HittingBody.self, body, shape: #"{"bay": name or null, "student": id or null}"#)
        if let bay = b.bay, let why = PlainName.problem(bay, what: "bay") { throw StudioError(400, why) }
        do {
            let wall = ISO8601DateFormatter()
            wall.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            try roster.setHitting(
                bay: b.bay, student: b.student, since: wall.string(from: Date()), hostBoot: bootID,
                sinceMonoNs: monotonicNowNs())
        } catch let e as LibraryError { throw StudioError(400, e.description) } catch {
            throw StudioError(500, "\(roster.path): \(error)")
        }
        devicesChanged()
        return try studentsJSON()
    }

    // MARK: Lessons

    /// `GET /api/lessons`: a student's swings at one bay in one sitting, across every camera, newest first.
    func lessons() throws -> WebServer.Response {
        let placement = roster?.placement
        var byID: [String: StudioAPI.Lesson] = [:]
        var order: [String: Int64] = [:]
        for s in Catalogue.placedSwings(try clips()) {
            let st = standing(s, placement)
            let at = s.map(\.receivedAt).min() ?? ""
            let flags = Self.swingFlags(s)
            var l =
                byID[st.lesson]
                ?? StudioAPI.Lesson(
                    id: st.lesson, student: st.student?.id, studentName: st.student?.name, bay: s.first?.bay,
                    day: st.day, from: at, to: at, swings: 0, devices: [], starred: 0, kept: 0, discarded: 0)
            l.swings += 1
            l.from = min(l.from, at)
            l.to = max(l.to, at)
            for c in s where !l.devices.contains(c.device) { l.devices.append(c.device) }
            if flags.contains("starred") { l.starred += 1 }
            if flags.contains("kept") { l.kept += 1 }
            if flags.contains("discarded") { l.discarded += 1 }
            byID[st.lesson] = l
            order[st.lesson] = max(order[st.lesson] ?? 0, s.compactMap(\.receivedSeq).min() ?? 0)
        }
        return .json(
            StudioAPI.Lessons(
                lessons: byID.values.sorted { (order[$0.id] ?? 0, $0.id) > (order[$1.id] ?? 0, $1.id) }))
    }

    // MARK: Key positions

    /// A swing's key positions: those of the first angle that has them (each angle keeps the same).
    func keyPositions(_ s: [CatalogueClip]) throws -> KeyPositions {
        for c in s where FileSystem.exists("\(c.path)/\(KeyPositions.fileName)") {
            do { return try KeyPositions.read(c.path) } catch { throw StudioError(422, "\(error)") }
        }
        return KeyPositions()
    }

    /// `PUT /api/swings/<id>/positions` `{"address": s, "top": s, "finish": s}` (seconds from the impact; null or
    /// missing: not marked): replaces them, kept beside every angle; returns the swing.
    func setKeyPositions(_ id: String, _ body: Data) throws -> WebServer.Response {
        let p = try Self.body(
            KeyPositions.self, body,
            shape: #"{"address": s, "top": s, "finish": s} in seconds from the impact, or null"#, about: id)
        if let why = p.problem { throw StudioError(400, "\(id): \(why)") }
        guard let s = try swing(id) else { throw StudioError(404, "\(id): no such swing") }
        for c in s { try Self.requireFolder(c) }
        do { try besideLock.withLock { for c in s { try p.write(to: c.path) } } } catch {
            throw StudioError(500, "\(id): the key positions could not be kept beside its clips (\(error))")
        }
        return try swingDetail(id)
    }

    // MARK: Delete

    /// `DELETE /api/swings/<id>`: every angle's folder and catalogue entry. A kept or starred swing is refused (409,
    /// saying which) unless `?force=yes`: the coach is asked first.
    func deleteSwing(_ id: String, _ r: WebServer.Request) throws -> WebServer.Response {
        guard let s = try swing(id) else { throw StudioError(404, "\(id): no such swing") }
        let precious = s.flatMap { c in c.flags.filter { $0 == .kept || $0 == .starred }.map(\.rawValue) }
        if !precious.isEmpty, r.query["force"] != "yes" {
            throw StudioError(
                409,
                "\(id) is \(Set(precious).sorted().joined(separator: " and ")): not deleted; ask again with ?force=yes to delete it anyway"
            )
        }
        let removed = try LibraryRemoval.remove(s, library: library, catalogue: catalogue)
        if !tags.tags(id).isEmpty { _ = try? tags.set(id, []) }  // a swing gone takes its tags with it
        return .json(StudioAPI.Removed(swing: id, clips: removed.clips, bytes: removed.bytes))
    }
}

/// Removing clips from the library: each one's catalogue entry, then its folder — a folder left (a disk error) is said,
/// and `ppc-host catalogue rebuild` would record it again. Used by the studio's delete and `ppc-host retention`.
public enum LibraryRemoval {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Removes `clips` (each folder under `library`); returns what went.
    public static func remove(_ clips: [CatalogueClip], library: String, catalogue: any CatalogueStore) throws -> (
        clips: [String], bytes: Int64
    ) {
        let root = URL(fileURLWithPath: library).standardizedFileURL.path + "/"
        var gone: [String] = []
        var bytes: Int64 = 0
        for c in clips {
            let folder = URL(fileURLWithPath: c.path).standardizedFileURL.path
            // Only a folder inside the library is removed: a hand-edited catalogue cannot send this anywhere else.
            guard folder.hasPrefix(root), folder.count > root.count else {
                throw Failure(
                    description: "\(c.clipID): its folder \(c.path) is not in the library \(library); not removed")
            }
            do { try catalogue.forget(clipID: c.clipID) } catch {
                throw Failure(description: "\(c.clipID): the catalogue could not forget it (\(error)); nothing removed")
            }
            if FileManager.default.fileExists(atPath: folder) {
                do { try FileManager.default.removeItem(atPath: folder) } catch {
                    throw Failure(
                        description:
                            "\(c.clipID): forgotten by the catalogue, but its folder \(folder) could not be removed (\(error)); `ppc-host catalogue rebuild` would record it again"
                    )
                }
            }
            gone.append(c.clipID)
            bytes += c.bytes
        }
        return (gone, bytes)
    }
}
