import CSQLite
import Foundation

/// Why the catalogue could not be read or written: the database file and SQLite's own words.
public struct CatalogueError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// SQLite found the file is no database or a damaged one (SQLITE_NOTADB, SQLITE_CORRUPT): the library's files
    /// are still the truth, and `ppc-host catalogue rebuild` makes a new catalogue from them.
    public let damaged: Bool
    /// The catalogue's server cannot be reached now (PostgreSQL restarting, or down): it is being reconnected to, and
    /// the library goes on taking clips; a studio says so (503) rather than failing.
    public let unavailable: Bool
    public init(_ d: String, damaged: Bool = false, unavailable: Bool = false) {
        description = d
        self.damaged = damaged
        self.unavailable = unavailable
    }

    /// SQLite's words for `db`'s last error, marked damaged by its code.
    init(_ path: String, _ db: OpaquePointer) {
        self.init("\(path): \(String(cString: sqlite3_errmsg(db)))", code: sqlite3_errcode(db))
    }

    /// `message`, marked damaged when SQLite's (primary) result `code` says the file is no database or a damaged one.
    init(_ message: String, code: Int32) {
        let primary = code & 0xFF
        self.init(message, damaged: primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    }
}

/// One confirmed clip as the catalogue holds it. The library's files stay the truth; this is their index.
public struct CatalogueClip: Sendable, Equatable {
    public var clipID: String
    public var device: String
    public var session: String
    public var sessionID: String
    /// t0 on the device's capture clock, ns.
    public var t0DeviceNs: Int64
    /// t0 on the host's clock (device time + the relation's offset), ns, and how uncertain: nil without a relation.
    public var t0HostNs: Int64?
    public var t0UncertaintyNs: Int64?
    public var frames: Int
    public var captureProfile: String
    public var belowPolicy: String?
    public var receivedAt: String
    public var path: String
    public var bytes: Int64
    /// What a person said of it: any of `ClipFlag` (kept and discarded exclude each other), and notes. Kept across
    /// rebuilds and re-recording: the files do not hold them.
    public var flags: Set<ClipFlag>
    public var notes: String
    /// The swing it is an angle of: the id of the swing's first clip, given when the swing began and never changed as
    /// angles join it (nil until the catalogue placed it).
    public var swingID: String?
    /// Its place in the order the host received clips (1, 2, …): "newest" means the highest, whatever the clocks said.
    public var receivedSeq: Int64?
    /// The boot of the host that received it (`/proc/sys/kernel/random/boot_id`), and that host's monotonic clock then:
    /// host-clock times compare only within one boot.
    public var hostBoot: String?
    public var receivedMonoNs: Int64?
    /// The bay its device belonged to when it arrived (nil: none set).
    public var bay: String?
    /// How its shot was known: "heard" (its own microphone) or "relayed from DEVICE …" (a bay-mate heard it).
    public var trigger: String?

    public init(
        clipID: String, device: String, session: String, sessionID: String, t0DeviceNs: Int64, t0HostNs: Int64?,
        t0UncertaintyNs: Int64?,
        frames: Int, captureProfile: String, belowPolicy: String?, receivedAt: String, path: String, bytes: Int64,
        flags: Set<ClipFlag> = [], notes: String = "", swingID: String? = nil, receivedSeq: Int64? = nil,
        hostBoot: String? = nil,
        receivedMonoNs: Int64? = nil, bay: String? = nil, trigger: String? = nil
    ) {
        self.flags = flags
        self.notes = notes
        self.swingID = swingID
        self.receivedSeq = receivedSeq
        self.hostBoot = hostBoot
        self.receivedMonoNs = receivedMonoNs
        self.bay = bay
        self.trigger = trigger
        self.clipID = clipID
        self.device = device
        self.session = session
        self.sessionID = sessionID
        self.t0DeviceNs = t0DeviceNs
        self.t0HostNs = t0HostNs
        self.t0UncertaintyNs = t0UncertaintyNs
        self.frames = frames
        self.captureProfile = captureProfile
        self.belowPolicy = belowPolicy
        self.receivedAt = receivedAt
        self.path = path
        self.bytes = bytes
    }
}

extension CatalogueClip {
    /// The largest magnitude of a device-clock t0, ns: 2^60, as a clip's meta.json allows (`ClipMeta.maxTimeNs`).
    public static let maxDeviceTimeNs: Int64 = 1 << 60
    /// The largest magnitude of a host-clock t0, ns: a device t0 plus a clock offset, each within 2^60.
    public static let maxHostTimeNs: Int64 = 1 << 61
    /// The largest clock uncertainty, ns (2^60, as host-meta.json allows).
    public static let maxUncertaintyNs: Int64 = 1 << 60
    /// The most frames (2^32) and bytes (16 files of 1 TiB: 2^44) a clip's meta.json may state.
    public static let maxFrames = 1 << 32, maxBytes: Int64 = 1 << 44

    /// What in this entry no host could have catalogued from a clip's files — a time, uncertainty, frame count or size
    /// out of the ranges `ppc-host` checks on the way in — naming the field and value; nil when all are in range. A
    /// catalogue is a file anyone with the library can edit, and a PostgreSQL catalogue is shared with other hosts
    /// (an older one may not have checked): every reader does arithmetic on these figures (swings compare host times,
    /// a session sums bytes and spans its t0s), which must not overflow.
    public var problem: String? {
        func out<I: BinaryInteger>(_ v: I, _ field: String, _ range: ClosedRange<I>) -> String? {
            range.contains(v) ? nil : "\(field) \(v) is out of range \(range.lowerBound)…\(range.upperBound)"
        }
        let checks: [String?] = [
            out(t0DeviceNs, "t0_device_ns", -Self.maxDeviceTimeNs...Self.maxDeviceTimeNs),
            t0HostNs.flatMap { out($0, "t0_host_ns", -Self.maxHostTimeNs...Self.maxHostTimeNs) },
            t0UncertaintyNs.flatMap { out($0, "t0_uncertainty_ns", 0...Self.maxUncertaintyNs) },
            out(frames, "frames", 0...Self.maxFrames), out(bytes, "bytes", 0...Self.maxBytes),
        ]
        return checks.lazy.compactMap { $0 }.first.map { "clip \(clipID): catalogue entry's \($0)" }
    }
}

extension Catalogue {
    /// `clips` split into those whose figures are in range and those refused, each with its `problem` — so one bad row
    /// costs a reader that clip, named, not every page.
    public static func readable(_ clips: [CatalogueClip]) -> (
        clips: [CatalogueClip], refused: [(clipID: String, problem: String)]
    ) {
        var good: [CatalogueClip] = []
        var refused: [(clipID: String, problem: String)] = []
        for c in clips {
            if let p = c.problem { refused.append((c.clipID, p)) } else { good.append(c) }
        }
        return (good, refused)
    }

    /// The sum of `values`, held at Int64.max rather than trapping (bytes summed over a session's clips).
    public static func total<S: Sequence>(_ values: S) -> Int64 where S.Element == Int64 {
        values.reduce(Int64(0)) { s, v in
            let (r, o) = s.addingReportingOverflow(v)
            return o ? (v > 0 ? .max : .min) : r
        }
    }
}

/// A person's mark on a clip.
public enum ClipFlag: String, Sendable, CaseIterable, Comparable {
    case kept, discarded, starred
    /// The coach's word that what was heard was not a swing (a false trigger): a label for the field corpus
    /// (`ppc-host corpus export`); it comes with discarded.
    case notASwing = "not-a-swing"

    public static func < (a: ClipFlag, b: ClipFlag) -> Bool { a.rawValue < b.rawValue }

    /// The column's text: sorted names joined by commas ("" for none).
    public static func text(_ flags: Set<ClipFlag>) -> String { flags.sorted().map(\.rawValue).joined(separator: ",") }

    /// Reads the column's text; unknown names (a newer host's) are kept out, not failed on.
    public static func parse(_ text: String) -> Set<ClipFlag> {
        Set(text.split(separator: ",").compactMap { ClipFlag(rawValue: String($0)) })
    }

    /// Why a set of flags cannot be stored, if it cannot.
    public static func problem(_ flags: Set<ClipFlag>) -> String? {
        if flags.contains(.kept) && flags.contains(.discarded) { return "a clip is kept or discarded, not both" }
        if flags.contains(.notASwing) && !flags.contains(.discarded) {
            return "not-a-swing comes with discarded (a false trigger is not kept)"
        }
        return nil
    }
}

/// Where a catalogue is kept: SQLite in the library (the embedded default) or a PostgreSQL database a facility's hosts
/// share. Both hold the same schema and answer the same questions.
public protocol CatalogueStore: AnyObject, Sendable {
    /// Records (or replaces) a clip and its files, in one transaction.
    func record(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)]) throws(CatalogueError)
    /// Every clip, oldest first by host-clock t0 (device-clock t0 where no relation is known).
    func clips() throws(CatalogueError) -> [CatalogueClip]
    /// Records a clip and places it in a swing (`SwingRule`), in one transaction; a clip already placed keeps its
    /// place. Returns the entry as stored.
    func place(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)], rule: SwingRule)
        throws(CatalogueError) -> CatalogueClip
    /// One clip by its id (nil when it is not catalogued): a keyed lookup, for a server answering per request.
    func clip(_ clipID: String) throws(CatalogueError) -> CatalogueClip?
    /// The angles of swing `id` (its clips placed there, or the clip of that id not placed yet): an indexed lookup.
    func angles(ofSwing id: String) throws(CatalogueError) -> [CatalogueClip]
    /// The clips of the newest `limit` swings — by the order of receipt of each one's first angle, before `before` when
    /// given — and how many swings there are in all: one page of a long list without reading the whole catalogue.
    /// `hidingDiscarded`: leaving out swings every angle of which is discarded (and not counting them).
    func newestSwings(limit: Int, before: Int64?, hidingDiscarded: Bool) throws(CatalogueError) -> (
        clips: [CatalogueClip], swings: Int
    )
    /// Sets a clip's flags and notes (nil: leave as they are); throws naming the clip when it is not catalogued.
    func annotate(clipID: String, flags: Set<ClipFlag>?, notes: String?) throws(CatalogueError)
    /// Removes a clip and its files from the catalogue (its folder is gone from the library); nothing when it is not
    /// catalogued. The library's files are never touched.
    func forget(clipID: String) throws(CatalogueError)
}

/// The host's clip catalogue: SQLite, one file in the library (`catalogue.sqlite`), its schema versioned and migrated
/// forward on open. Written as each clip is confirmed, rebuilt from the library at will; the only importer of CSQLite.
public final class Catalogue: CatalogueStore, @unchecked Sendable {
    // @unchecked: every use of `db` holds `lock` (SQLite is opened in serialized mode besides).
    let db: OpaquePointer
    let lock = NSLock()
    public let path: String
    public static let schemaVersion = 2

    /// Migrations, in order: schema version n is reached by running migrations[0..<n]. Written once, in SQL both
    /// SQLite and PostgreSQL take (a store for another engine maps the column types it must: `PostgresCatalogue`).
    public static let migrations = [
        """
        CREATE TABLE clips(
          clip_id TEXT PRIMARY KEY, device TEXT NOT NULL, session TEXT NOT NULL, session_id TEXT NOT NULL,
          t0_device_ns INTEGER NOT NULL, t0_host_ns INTEGER, t0_uncertainty_ns INTEGER, frames INTEGER NOT NULL,
          capture_profile TEXT NOT NULL, below_policy TEXT, received_at TEXT NOT NULL, path TEXT NOT NULL, bytes INTEGER NOT NULL,
          flags TEXT NOT NULL DEFAULT '', notes TEXT NOT NULL DEFAULT '');
        CREATE INDEX clips_t0_host ON clips(t0_host_ns);
        CREATE TABLE files(clip_id TEXT NOT NULL, name TEXT NOT NULL, bytes INTEGER NOT NULL, xxh3 TEXT NOT NULL, PRIMARY KEY(clip_id, name));
        """,
        // 2: swings placed once and kept (`SwingRule`), the order of receipt, the host's boot, bays, how a shot was known.
        """
        ALTER TABLE clips ADD COLUMN swing_id TEXT;
        ALTER TABLE clips ADD COLUMN received_seq INTEGER;
        ALTER TABLE clips ADD COLUMN host_boot TEXT;
        ALTER TABLE clips ADD COLUMN received_mono_ns INTEGER;
        ALTER TABLE clips ADD COLUMN bay TEXT;
        ALTER TABLE clips ADD COLUMN trigger TEXT;
        CREATE INDEX clips_swing ON clips(swing_id);
        CREATE INDEX clips_seq ON clips(received_seq);
        """,
    ]

    public init(path: String) throws(CatalogueError) {
        self.path = path
        var handle: OpaquePointer?
        let r = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nil)
        guard r == SQLITE_OK, let handle else {
            let error = handle.map { CatalogueError(path, $0) } ?? CatalogueError("\(path): cannot open")
            if let handle { sqlite3_close(handle) }
            throw error
        }
        db = handle
        sqlite3_busy_timeout(db, 5000)
        try exec(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        )
        let version = Int(try scalar("SELECT value FROM meta WHERE key = 'schema_version'") ?? "0") ?? 0
        guard version <= Self.schemaVersion else {
            throw CatalogueError(
                "\(path): schema version \(version) is newer than this ppc-host knows (\(Self.schemaVersion)); use a newer ppc-host"
            )
        }
        for v in version..<Self.schemaVersion {
            try exec(
                "BEGIN; \(Self.migrations[v]) INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '\(v + 1)'); COMMIT;"
            )
        }
        // Clips catalogued before swings were placed get the swings and the order the old rule gave them.
        let unplaced = try select("WHERE swing_id IS NULL", [])
        if !unplaced.isEmpty {
            let assignments = Self.backfill(unplaced)
            let base = Int64(try scalar("SELECT COALESCE(MAX(received_seq), 0) FROM clips") ?? "0") ?? 0
            lock.lock()
            defer { lock.unlock() }
            try transaction { () throws(CatalogueError) in
                for a in assignments {
                    try run(
                        "UPDATE clips SET swing_id = ?, received_seq = ? WHERE clip_id = ?",
                        [.text(a.swingID), .int(base + a.seq), .text(a.clipID)])
                }
            }
        }
    }

    deinit { sqlite3_close(db) }

    func exec(_ sql: String) throws(CatalogueError) {
        var err: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &err) != SQLITE_OK {
            let why = err.map { String(cString: $0) } ?? "failed"
            let code = sqlite3_errcode(db)  // before the rollback sets its own
            sqlite3_free(err)
            _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw CatalogueError("\(path): \(why)", code: code)
        }
    }

    func scalar(_ sql: String) throws(CatalogueError) -> String? {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { throw CatalogueError(path, db) }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW, let text = sqlite3_column_text(stmt, 0) else { return nil }
        return String(cString: text)
    }

    /// Runs `body` in one transaction (the caller holds `lock`): committed when it returns, rolled back when it throws.
    func transaction(_ body: () throws(CatalogueError) -> Void) throws(CatalogueError) {
        try exec("BEGIN")
        do throws(CatalogueError) {
            try body()
            try exec("COMMIT")
        } catch {
            _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// Records (or replaces) a clip and its files, in one transaction. Its flags and notes, and where it was placed
    /// (swing, order of receipt, boot, bay, trigger) when the entry given does not say, are kept from the entry it
    /// replaces.
    public func record(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)])
        throws(CatalogueError)
    {
        lock.lock()
        defer { lock.unlock() }
        try transaction { () throws(CatalogueError) in try insert(clip, files: files) }
    }

    /// The insert itself (the caller holds `lock` and a transaction).
    func insert(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)]) throws(CatalogueError) {
        func keep(_ column: String) -> String { "COALESCE(?, (SELECT \(column) FROM clips WHERE clip_id = ?1))" }
        try run(
            "INSERT OR REPLACE INTO clips(clip_id, device, session, session_id, t0_device_ns, t0_host_ns, t0_uncertainty_ns, frames, capture_profile, below_policy, received_at, path, bytes, flags, notes, swing_id, received_seq, host_boot, received_mono_ns, bay, trigger) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?, COALESCE((SELECT flags FROM clips WHERE clip_id = ?1), ''), COALESCE((SELECT notes FROM clips WHERE clip_id = ?1), ''), \(keep("swing_id")), \(keep("received_seq")), \(keep("host_boot")), \(keep("received_mono_ns")), \(keep("bay")), \(keep("trigger")))",
            [
                .text(clip.clipID), .text(clip.device), .text(clip.session), .text(clip.sessionID),
                .int(clip.t0DeviceNs),
                clip.t0HostNs.map { .int($0) } ?? .null, clip.t0UncertaintyNs.map { .int($0) } ?? .null,
                .int(Int64(clip.frames)),
                .text(clip.captureProfile), clip.belowPolicy.map { .text($0) } ?? .null, .text(clip.receivedAt),
                .text(clip.path), .int(clip.bytes),
                clip.swingID.map { .text($0) } ?? .null, clip.receivedSeq.map { .int($0) } ?? .null,
                clip.hostBoot.map { .text($0) } ?? .null,
                clip.receivedMonoNs.map { .int($0) } ?? .null, clip.bay.map { .text($0) } ?? .null,
                clip.trigger.map { .text($0) } ?? .null,
            ])
        try run("DELETE FROM files WHERE clip_id = ?", [.text(clip.clipID)])
        for f in files {
            try run(
                "INSERT INTO files(clip_id, name, bytes, xxh3) VALUES(?,?,?,?)",
                [.text(clip.clipID), .text(f.name), .int(f.bytes), .text(f.xxh3)])
        }
    }

    /// Records a clip and places it in a swing, in one transaction: a clip already placed keeps its place; a new one
    /// gets the next number in the order of receipt and joins a swing by `rule` (taking that swing's flags and notes)
    /// or begins one named by its id. Returns the entry as stored.
    public func place(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)], rule: SwingRule)
        throws(CatalogueError) -> CatalogueClip
    {
        lock.lock()
        defer { lock.unlock() }
        var placed = clip
        try transaction { () throws(CatalogueError) in
            let before = try selectLocked("WHERE clip_id = ?", [.text(clip.clipID)]).first
            if let before, before.swingID != nil, placed.swingID == nil {
                placed.swingID = before.swingID
                placed.receivedSeq = before.receivedSeq
            }
            if placed.receivedSeq == nil {
                placed.receivedSeq =
                    (Int64(try scalar("SELECT COALESCE(MAX(received_seq), 0) FROM clips") ?? "0") ?? 0) + 1
            }
            var inherited: CatalogueClip?
            if placed.swingID == nil {
                var known: [CatalogueClip] = []
                if let w = rule.arrivalWindow(of: clip) {
                    known = try selectLocked(
                        "WHERE host_boot = ? AND received_mono_ns BETWEEN ? AND ?",
                        [.text(w.boot), .int(w.fromNs), .int(w.toNs)])
                }
                (placed.swingID, inherited) = rule.placement(of: clip, among: known)
            }
            try insert(placed, files: files)
            // A new angle of a swing a coach already marked carries the marks (the page shows the swing's).
            if before == nil, let first = inherited, !first.flags.isEmpty || !first.notes.isEmpty {
                try run(
                    "UPDATE clips SET flags = ?, notes = ? WHERE clip_id = ?",
                    [.text(ClipFlag.text(first.flags)), .text(first.notes), .text(clip.clipID)])
            }
        }
        return try selectLocked("WHERE clip_id = ?", [.text(clip.clipID)]).first ?? placed
    }

    enum Value {
        case text(String)
        case int(Int64)
        case null
    }

    func run(_ sql: String, _ values: [Value]) throws(CatalogueError) {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { throw CatalogueError(path, db) }
        defer { sqlite3_finalize(stmt) }
        for (i, v) in values.enumerated() {
            let n = Int32(i + 1)
            switch v {
            case .text(let s): sqlite3_bind_text(stmt, n, s, -1, ppc_sqlite_transient())
            case .int(let x): sqlite3_bind_int64(stmt, n, x)
            case .null: sqlite3_bind_null(stmt, n)
            }
        }
        guard sqlite3_step(stmt) == SQLITE_DONE else { throw CatalogueError(path, db) }
    }

    /// Every clip, oldest first by host-clock t0 (device-clock t0 where no relation is known).
    public func clips() throws(CatalogueError) -> [CatalogueClip] {
        try select("ORDER BY COALESCE(t0_host_ns, t0_device_ns), clip_id", [])
    }

    public func clip(_ clipID: String) throws(CatalogueError) -> CatalogueClip? {
        try select("WHERE clip_id = ?", [.text(clipID)]).first
    }

    public func angles(ofSwing id: String) throws(CatalogueError) -> [CatalogueClip] {
        try select("WHERE swing_id = ? OR (swing_id IS NULL AND clip_id = ?)", [.text(id), .text(id)])
    }

    public func newestSwings(limit: Int, before: Int64?, hidingDiscarded: Bool) throws(CatalogueError) -> (
        clips: [CatalogueClip], swings: Int
    ) {
        // A swing is discarded when every angle is: the smallest place of 'discarded' in its angles' flags is then > 0.
        let kept = hidingDiscarded ? " AND MIN(instr(flags, 'discarded')) = 0" : ""
        let clips = try select(
            """
            WHERE COALESCE(swing_id, clip_id) IN (SELECT COALESCE(swing_id, clip_id) AS s FROM clips GROUP BY s
              HAVING MIN(COALESCE(received_seq, 0)) < ?\(kept) ORDER BY MIN(COALESCE(received_seq, 0)) DESC LIMIT ?)
            """,
            [.int(before ?? .max), .int(Int64(max(0, limit)))])
        lock.lock()
        defer { lock.unlock() }
        let count =
            Int(
                try scalar(
                    hidingDiscarded
                        ? "SELECT COUNT(*) FROM (SELECT COALESCE(swing_id, clip_id) AS s FROM clips GROUP BY s HAVING MIN(instr(flags, 'discarded')) = 0)"
                        : "SELECT COUNT(DISTINCT COALESCE(swing_id, clip_id)) FROM clips") ?? "0") ?? 0
        return (clips, count)
    }

    /// The clips table's columns as every store reads them, in order.
    public static let columns =
        "clip_id, device, session, session_id, t0_device_ns, t0_host_ns, t0_uncertainty_ns, frames, capture_profile, below_policy, received_at, path, bytes, flags, notes, swing_id, received_seq, host_boot, received_mono_ns, bay, trigger"

    func select(_ tail: String, _ values: [Value]) throws(CatalogueError) -> [CatalogueClip] {
        lock.lock()
        defer { lock.unlock() }
        return try selectLocked(tail, values)
    }

    /// `select` for a caller that holds `lock`.
    func selectLocked(_ tail: String, _ values: [Value]) throws(CatalogueError) -> [CatalogueClip] {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT \(Self.columns) FROM clips \(tail)", -1, &stmt, nil) == SQLITE_OK else {
            throw CatalogueError(path, db)
        }
        defer { sqlite3_finalize(stmt) }
        for (i, v) in values.enumerated() {
            switch v {
            case .text(let t): sqlite3_bind_text(stmt, Int32(i + 1), t, -1, ppc_sqlite_transient())
            case .int(let x): sqlite3_bind_int64(stmt, Int32(i + 1), x)
            case .null: sqlite3_bind_null(stmt, Int32(i + 1))
            }
        }
        func text(_ i: Int32) -> String { sqlite3_column_text(stmt, i).map { String(cString: $0) } ?? "" }
        func optionalText(_ i: Int32) -> String? { sqlite3_column_type(stmt, i) == SQLITE_NULL ? nil : text(i) }
        func optionalInt(_ i: Int32) -> Int64? {
            sqlite3_column_type(stmt, i) == SQLITE_NULL ? nil : sqlite3_column_int64(stmt, i)
        }
        var out: [CatalogueClip] = []
        while sqlite3_step(stmt) == SQLITE_ROW {
            out.append(
                CatalogueClip(
                    clipID: text(0), device: text(1), session: text(2), sessionID: text(3),
                    t0DeviceNs: sqlite3_column_int64(stmt, 4),
                    t0HostNs: optionalInt(5), t0UncertaintyNs: optionalInt(6),
                    frames: Int(sqlite3_column_int64(stmt, 7)),
                    captureProfile: text(8), belowPolicy: sqlite3_column_type(stmt, 9) == SQLITE_NULL ? nil : text(9),
                    receivedAt: text(10),
                    path: text(11), bytes: sqlite3_column_int64(stmt, 12), flags: ClipFlag.parse(text(13)),
                    notes: text(14),
                    swingID: optionalText(15), receivedSeq: optionalInt(16), hostBoot: optionalText(17),
                    receivedMonoNs: optionalInt(18),
                    bay: optionalText(19), trigger: optionalText(20)))
        }
        return out
    }

    public func forget(clipID: String) throws(CatalogueError) {
        lock.lock()
        defer { lock.unlock() }
        try transaction { () throws(CatalogueError) in
            try run("DELETE FROM files WHERE clip_id = ?", [.text(clipID)])
            try run("DELETE FROM clips WHERE clip_id = ?", [.text(clipID)])
        }
    }

    public func annotate(clipID: String, flags: Set<ClipFlag>?, notes: String?) throws(CatalogueError) {
        if let flags, let why = ClipFlag.problem(flags) { throw CatalogueError("\(clipID): \(why)") }
        lock.lock()
        defer { lock.unlock() }
        var changed = 0
        if let flags {
            try run("UPDATE clips SET flags = ? WHERE clip_id = ?", [.text(ClipFlag.text(flags)), .text(clipID)])
            changed += Int(sqlite3_changes(db))
        }
        if let notes {
            try run("UPDATE clips SET notes = ? WHERE clip_id = ?", [.text(notes), .text(clipID)])
            changed += Int(sqlite3_changes(db))
        }
        guard changed > 0 || (flags == nil && notes == nil) else {
            throw CatalogueError("\(clipID): no such clip in \(path)")
        }
    }

    /// Swings: clips from different devices whose host-clock t0 agree within their combined uncertainty plus
    /// `toleranceNs` are one swing seen from several angles. Clips without a host-clock t0 are swings of their own.
    public static func swings(_ clips: [CatalogueClip], toleranceNs: Int64 = 20_000_000) -> [[CatalogueClip]] {
        var out: [[CatalogueClip]] = []
        for c in clips.sorted(by: { ($0.t0HostNs ?? $0.t0DeviceNs) < ($1.t0HostNs ?? $1.t0DeviceNs) }) {
            if let t = c.t0HostNs, var last = out.last, let first = last.first, let ft = first.t0HostNs,
                !last.contains(where: { $0.device == c.device }),
                within(t, ft, c.t0UncertaintyNs, first.t0UncertaintyNs, toleranceNs)
            {
                last.append(c)
                out[out.count - 1] = last
            } else {
                out.append([c])
            }
        }
        return out
    }

    /// |a − b| ≤ ua + ub + tolerance, for any values (an entry out of range is not in range of another, not a trap).
    static func within(_ a: Int64, _ b: Int64, _ ua: Int64?, _ ub: Int64?, _ tolerance: Int64) -> Bool {
        let (d, o) = a.subtractingReportingOverflow(b)
        guard !o else { return false }
        let bound = total([max(0, ua ?? 0), max(0, ub ?? 0), max(0, tolerance)])
        return d.magnitude <= UInt64(bound)
    }
}
