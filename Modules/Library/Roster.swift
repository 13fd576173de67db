import Foundation
import JSONInput
import Syscall

/// A coach's students and who is hitting at each bay, kept in the library (`LIBRARY/students.json`, written whole or
/// not at all). Setting the student now hitting at a bay is a *turn*: every swing of that bay received from then until
/// the next turn there is that student's. A swing's student is never written into its clip: it is read from the turns,
/// so a turn set late (or corrected) reassigns nothing by hand, and the catalogue's stores need no column for it.
public final class Roster: @unchecked Sendable {
    // @unchecked: `current` is only touched under `lock`.
    public enum Handedness: String, Codable, Sendable { case right, left }

    public struct Student: Codable, Sendable, Equatable {
        /// A plain name made from the name when the student is added, kept for good (addresses use it).
        public var id: String
        public var name: String
        public var handedness: Handedness
        public var notes: String
        public init(id: String, name: String, handedness: Handedness = .right, notes: String = "") {
            self.id = id
            self.name = name
            self.handedness = handedness
            self.notes = notes
        }
    }

    /// From `since` (ISO 8601, UTC) the swings of `bay` (nil: devices in no bay) are `student`'s (nil: nobody's).
    /// A turn set on this boot of the host also holds the host's monotonic clock then (`hostBoot`, `sinceMonoNs`): a
    /// clip's receipt is stamped on it too, so a swing received in the same second as a change of student is placed
    /// by the nanosecond, not by a wall clock that says only the second.
    public struct Turn: Codable, Sendable, Equatable {
        @Nullable public var bay: String?
        @Nullable public var student: String?
        public var since: String
        @Nullable public var hostBoot: String?
        @Nullable public var sinceMonoNs: Int64?
        public init(bay: String?, student: String?, since: String, hostBoot: String? = nil, sinceMonoNs: Int64? = nil) {
            self.bay = bay
            self.student = student
            self.since = since
            self.hostBoot = hostBoot
            self.sinceMonoNs = sinceMonoNs
        }

        /// Whether a clip received at `receivedAt` (and, on a boot of the host, at `receivedMonoNs`) came at or after
        /// this turn began.
        func began(before receivedAt: String, hostBoot boot: String?, receivedMonoNs mono: Int64?) -> Bool {
            if let b = hostBoot, b == boot, let t = sinceMonoNs, let m = mono { return t <= m }
            return Roster.instant(since) <= Roster.instant(receivedAt)
        }
    }

    /// An ISO 8601 UTC time as a string that sorts as the time does: whole seconds given three decimals
    /// (`…:07Z` → `…:07.000Z`), so a turn stamped to the millisecond and a receipt to the second compare as times.
    static func instant(_ iso: String) -> String {
        guard iso.hasSuffix("Z"), !iso.contains(".") else { return iso }
        return iso.dropLast() + ".000Z"
    }

    struct File: Codable {
        var format = "ppc-students"
        var version = 1
        var students: [Student]
        var turns: [Turn]
    }

    public static let fileName = "students.json"
    /// At most this many students, and turns kept (a turn is a few dozen bytes: years of lessons).
    public static let maxStudents = 10_000, maxTurns = 200_000
    public let path: String
    private let lock = NSLock()
    private var current: File
    private var changes = 0
    /// How many times the roster was written since it was read: what a reader caches its placements against.
    public var generation: Int { lock.withLock { changes } }

    /// The roster of `library`; empty when it has no students.json. One that does not read is an error naming it.
    public init(library: String) throws {
        path = "\(library)/\(Self.fileName)"
        current = File(students: [], turns: [])
        guard let file = try LibraryFile.read(File.self, from: path, limit: 64 << 20, what: "a library's students")
        else { return }
        current = file
        if let why = Self.problem(current) { throw LibraryError("\(path): \(why)") }
    }

    public var students: [Student] { lock.withLock { current.students } }
    public var turns: [Turn] { lock.withLock { current.turns } }

    public func student(_ id: String) -> Student? { lock.withLock { current.students.first { $0.id == id } } }

    /// Adds a student named `name`; its id is made from the name (a second "Ana" is ana-2).
    public func add(name: String, handedness: Handedness, notes: String) throws -> Student {
        try lock.withLock {
            var file = current
            var base = String(
                name.lowercased().unicodeScalars.map {
                    ($0.isASCII && (CharacterSet.alphanumerics.contains($0))) ? Character($0) : "-"
                }
            ).split(separator: "-").joined(separator: "-")
            if base.isEmpty { base = "student" }
            base = String(base.prefix(48))
            var id = base
            var n = 2
            while file.students.contains(where: { $0.id == id }) {
                id = "\(base)-\(n)"
                n += 1
            }
            let s = Student(id: id, name: name, handedness: handedness, notes: notes)
            file.students.append(s)
            try write(file)
            return s
        }
    }

    /// Changes a student's name, handedness or notes (nil: as they are).
    public func update(_ id: String, name: String?, handedness: Handedness?, notes: String?) throws -> Student {
        try lock.withLock {
            var file = current
            guard let i = file.students.firstIndex(where: { $0.id == id }) else {
                throw LibraryError("\(id): no such student")
            }
            if let name { file.students[i].name = name }
            if let handedness { file.students[i].handedness = handedness }
            if let notes { file.students[i].notes = notes }
            try write(file)
            return file.students[i]
        }
    }

    /// `student` (nil: nobody) is hitting at `bay` from `since` on (and from `sinceMonoNs` on this boot's monotonic
    /// clock, when given).
    public func setHitting(
        bay: String?, student: String?, since: String, hostBoot: String? = nil, sinceMonoNs: Int64? = nil
    ) throws {
        try lock.withLock {
            var file = current
            if let student, !file.students.contains(where: { $0.id == student }) {
                throw LibraryError("\(student): no such student")
            }
            file.turns.append(
                Turn(bay: bay, student: student, since: since, hostBoot: hostBoot, sinceMonoNs: sinceMonoNs))
            try write(file)
        }
    }

    /// Who is hitting at each bay now (the last turn of each).
    public var hitting: [Turn] {
        lock.withLock {
            var last: [String: Turn] = [:]
            for t in current.turns { last[t.bay ?? ""] = t }
            return last.values.sorted { ($0.bay ?? "") < ($1.bay ?? "") }
        }
    }

    /// The turns of each bay in time order, for placing swings (`turn(of:at:)`).
    public struct Placement: Sendable {
        let byBay: [String: [(index: Int, turn: Turn)]]

        /// The turn a swing of `bay` received at `receivedAt` (on `hostBoot`'s monotonic clock at `receivedMonoNs`)
        /// falls in, with its index in the roster; nil before the bay's first turn.
        public func turn(bay: String?, receivedAt: String, hostBoot: String? = nil, receivedMonoNs: Int64? = nil)
            -> (index: Int, turn: Turn)?
        {
            guard let list = byBay[bay ?? ""] else { return nil }
            // The last turn that began at or before receipt (a bay's turns are in time order).
            var lo = 0
            var hi = list.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if list[mid].turn.began(before: receivedAt, hostBoot: hostBoot, receivedMonoNs: receivedMonoNs) {
                    lo = mid + 1
                } else {
                    hi = mid
                }
            }
            return lo > 0 ? list[lo - 1] : nil
        }
    }

    public var placement: Placement {
        lock.withLock {
            var byBay: [String: [(index: Int, turn: Turn)]] = [:]
            for (i, t) in current.turns.enumerated() { byBay[t.bay ?? "", default: []].append((i, t)) }
            for k in byBay.keys {
                byBay[k]?.sort { (Roster.instant($0.turn.since), $0.index) < (Roster.instant($1.turn.since), $1.index) }
            }
            return Placement(byBay: byBay)
        }
    }

    /// Why a roster cannot stand, naming the field; nil when it can.
    static func problem(_ f: File) -> String? {
        guard f.format == "ppc-students", f.version == 1 else {
            return "format '\(f.format)' version \(f.version): this host reads ppc-students version 1"
        }
        guard f.students.count <= maxStudents else { return "\(f.students.count) students: at most \(maxStudents)" }
        guard f.turns.count <= maxTurns else { return "\(f.turns.count) turns: at most \(maxTurns)" }
        var ids = Set<String>()
        for (i, s) in f.students.enumerated() {
            if let why = PlainName.problem(s.id, what: "students[\(i)].id") { return why }
            guard ids.insert(s.id).inserted else { return "students[\(i)].id '\(s.id)': named twice" }
            if let why = Self.textProblem(s.name, what: "students[\(i)].name", max: 200, empty: false) { return why }
            if let why = Self.textProblem(s.notes, what: "students[\(i)].notes", max: 10_000, empty: true) {
                return why
            }
        }
        for (i, t) in f.turns.enumerated() {
            if let b = t.bay, let why = PlainName.problem(b, what: "turns[\(i)].bay") { return why }
            if let s = t.student, !ids.contains(s) { return "turns[\(i)].student '\(s)': no such student" }
            guard t.since.utf8.count <= 40, Self.isTime(t.since) else {
                return "turns[\(i)].since '\(t.since.prefix(40))': a time, ISO 8601 (2026-12-04T16:53:07Z)"
            }
        }
        return nil
    }

    /// Whether `iso` is an ISO 8601 UTC time, to the second or finer.
    static func isTime(_ iso: String) -> Bool {
        let fine = ISO8601DateFormatter()
        fine.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return ISO8601DateFormatter().date(from: iso) != nil || fine.date(from: iso) != nil
    }

    /// Why `text` cannot be a name or notes: too long, empty when it may not be, or holding a NUL or a line break (a
    /// name) — naming `what`.
    public static func textProblem(_ text: String, what: String, max: Int, empty: Bool) -> String? {
        if !empty, text.trimmingCharacters(in: .whitespaces).isEmpty { return "\(what) is empty" }
        if text.utf8.count > max { return "\(what): \(text.utf8.count) bytes, at most \(max)" }
        if text.unicodeScalars.contains("\u{0}") { return "\(what) holds a NUL character (U+0000)" }
        return nil
    }

    func write(_ file: File) throws {
        if let why = Self.problem(file) { throw LibraryError(why) }
        try LibraryFile.write(file, to: path)
        current = file
        changes += 1
    }
}
