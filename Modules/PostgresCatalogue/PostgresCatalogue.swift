import CPostgres
import Catalogue
import Foundation

/// The clip catalogue on PostgreSQL (libpq), for a facility whose hosts share one: chosen by a connection URL
/// (`postgresql://user@host/db`, or `…?host=/socket/dir`). The same schema as the SQLite catalogue, versioned the same
/// way; the only importer of CPostgres.
public final class PostgresCatalogue: CatalogueStore, @unchecked Sendable {
    // @unchecked: `conn` and `down` are touched only under `lock` (a libpq connection serves one query at a time).
    /// The connection, or nil while the server cannot be reached.
    var conn: OpaquePointer?
    let lock = NSLock()
    public let url: String

    /// While the server cannot be reached: why, since when, and when to try again (1 s, doubling to 30 s).
    struct Down {
        var why: String
        var sinceNs: Int64
        var nextTryNs: Int64
        var backOffNs: Int64
    }
    var down: Down?

    /// Called (on the thread that reconnected, outside the catalogue's lock) each time the server is reached again after
    /// it could not be: the host catches up from its library then, as at a start. Set before the catalogue is shared.
    public var onReconnect: (@Sendable () -> Void)?

    /// The catalogue's own migrations, with SQLite's 64-bit INTEGER as PostgreSQL's BIGINT.
    static let migrations = Catalogue.migrations.map { $0.replacingOccurrences(of: " INTEGER", with: " BIGINT") }

    /// How long connecting may take unless the URL says (`connect_timeout`), s: libpq's own default is to wait for
    /// ever — for a server that never answers, the kernel's SYN retries, about two minutes — before the host can say why
    /// it will not start. Assumed.
    public static let defaultConnectTimeoutSeconds = 5

    /// Connects and migrates. `waitForServer`: a server that cannot be reached now is not an error — the catalogue
    /// starts unavailable and reconnects (a host must start and take clips while PostgreSQL is down); otherwise it is.
    /// A URL libpq cannot read is an error either way.
    public init(url: String, waitForServer: Bool = false) throws(CatalogueError) {
        self.url = url
        var problem: UnsafeMutablePointer<CChar>?
        if let options = PQconninfoParse(url, &problem) {
            PQconninfoFree(options)
        } else {
            let why =
                problem.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
                ?? "not a connection URL"
            if let problem { PQfreemem(problem) }
            throw CatalogueError("\(url): \(why)")
        }
        do { conn = try Self.connect(url) } catch {
            guard waitForServer else { throw error }
            let now = Self.monotonicNow()
            down = Down(why: error.description, sinceNs: now, nextTryNs: now + 1_000_000_000, backOffNs: 1_000_000_000)
        }
    }

    deinit { if let conn { PQfinish(conn) } }

    /// A new connection, its schema migrated forward.
    static func connect(_ url: String) throws(CatalogueError) -> OpaquePointer {
        // The URL is expanded in place of `dbname`; key words are taken in order and the last wins, so a
        // `connect_timeout` the URL gives overrides this default.
        let keywords = ["connect_timeout", "dbname"]
        let values = ["\(defaultConnectTimeoutSeconds)", url]
        let connection = keywords.withCStrings { k in values.withCStrings { v in PQconnectdbParams(k, v, 1) } }
        guard let c = connection else { throw CatalogueError("\(url): out of memory") }
        guard PQstatus(c) == CONNECTION_OK else {
            let why = String(cString: PQerrorMessage(c)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(c)
            throw CatalogueError("\(url): \(why.isEmpty ? "cannot connect" : why)")
        }
        do { try migrate(c, url) } catch {
            PQfinish(c)
            throw error
        }
        return c
    }

    static func migrate(_ c: OpaquePointer, _ url: String) throws(CatalogueError) {
        try query(c, url, "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        // One host migrates at a time: an advisory lock held for the migration's transaction.
        try query(c, url, "BEGIN")
        try query(c, url, "SELECT pg_advisory_xact_lock(7600)")
        let version =
            Int((try query(c, url, "SELECT value FROM meta WHERE key = 'schema_version'").first?.first ?? nil) ?? "0")
            ?? 0
        guard version <= Catalogue.schemaVersion else {
            _ = try? query(c, url, "ROLLBACK")
            throw CatalogueError(
                "\(url): schema version \(version) is newer than this ppc-host knows (\(Catalogue.schemaVersion)); use a newer ppc-host"
            )
        }
        for v in version..<Catalogue.schemaVersion {
            try script(c, url, migrations[v])
            try query(
                c, url,
                "INSERT INTO meta(key, value) VALUES('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                ["\(v + 1)"])
        }
        // Clips catalogued before swings were placed get the swings and the order the old rule gave them.
        let unplaced = try query(c, url, "SELECT \(Catalogue.columns) FROM clips WHERE swing_id IS NULL").map(Self.clip)
        if !unplaced.isEmpty {
            let base =
                Int64(
                    (try query(c, url, "SELECT COALESCE(MAX(received_seq), 0) FROM clips").first?.first ?? nil) ?? "0")
                ?? 0
            for a in Catalogue.backfill(unplaced) {
                try query(
                    c, url, "UPDATE clips SET swing_id = $1, received_seq = $2 WHERE clip_id = $3",
                    [a.swingID, "\(base + a.seq)", a.clipID])
            }
        }
        try query(c, url, "COMMIT")
    }

    static func monotonicNow() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }

    /// Whether the catalogue's server is reached now.
    public var isAvailable: Bool {
        lock.lock()
        defer { lock.unlock() }
        return conn != nil
    }

    /// Runs `body` on the connection, under the lock. A server that could not be reached is tried again when its back-off
    /// allows; one that went mid-way (a restart: "server closed the connection unexpectedly") is reconnected to at once
    /// and `body` run once more. While it cannot be reached, the error says so (`unavailable`).
    func withConnection<T>(_ body: () throws(CatalogueError) -> T) throws(CatalogueError) -> T {
        lock.lock()
        var cameBack = false
        defer {
            lock.unlock()
            if cameBack { onReconnect?() }
        }
        if conn == nil { cameBack = try reconnect(force: false) }
        do { return try body() } catch {
            guard let c = conn, error.unavailable || PQstatus(c) == CONNECTION_BAD else { throw error }
            lost(error.description)
            cameBack = try reconnect(force: true)
            return try body()
        }
    }

    /// Under the lock: the connection is gone.
    func lost(_ why: String) {
        if let c = conn { PQfinish(c) }
        conn = nil
        let now = Self.monotonicNow()
        down = Down(why: why, sinceNs: now, nextTryNs: now, backOffNs: 1_000_000_000)
    }

    /// Under the lock: connects again if it is time (or `force`); true when it did; throws `unavailable` when not.
    func reconnect(force: Bool) throws(CatalogueError) -> Bool {
        let now = Self.monotonicNow()
        var d = down ?? Down(why: "not connected", sinceNs: now, nextTryNs: now, backOffNs: 1_000_000_000)
        if force || now >= d.nextTryNs {
            do {
                conn = try Self.connect(url)
                down = nil
                return true
            } catch {
                d.why = error.description
                d.nextTryNs = now + d.backOffNs
                d.backOffNs = min(d.backOffNs * 2, 30_000_000_000)
                down = d
            }
        }
        let secs = Double(now - d.sinceNs) / 1e9
        throw CatalogueError(
            "catalogue unavailable — reconnecting (\(String(format: "%.0f", secs)) s so far; clips are kept in the library and catalogued when it is back): \(d.why)",
            unavailable: true)
    }

    /// Tries to reach a server that could not be reached, when its back-off allows; true when it came back now (and
    /// `onReconnect` was called). For a host's watch, so the catalogue returns without waiting for a request.
    @discardableResult
    public func reconnectIfDown() -> Bool {
        lock.lock()
        guard conn == nil else {
            lock.unlock()
            return false
        }
        let back = (try? reconnect(force: false)) ?? false
        lock.unlock()
        if back { onReconnect?() }
        return back
    }

    /// Why the server cannot be reached, while it cannot.
    public var unavailableBecause: String? {
        lock.lock()
        defer { lock.unlock() }
        return conn == nil ? down?.why ?? "not connected" : nil
    }

    /// Runs several statements without parameters (a migration).
    static func script(_ c: OpaquePointer, _ url: String, _ sql: String) throws(CatalogueError) {
        let result = PQexec(c, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw CatalogueError("\(url): \(reason(c, result))")
        }
    }

    /// Whether a failed statement failed because the connection did (the server went: a restart, a crash, a shutdown),
    /// not because of the statement: libpq reports those with no SQLSTATE, the server with class 08 or 57P01–03. The
    /// status can still read CONNECTION_OK on a Unix socket after "server closed the connection unexpectedly".
    static func connectionFailed(_ c: OpaquePointer, _ result: OpaquePointer?) -> Bool {
        if PQstatus(c) == CONNECTION_BAD { return true }
        guard let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map({ String(cString: $0) }) else {
            return true
        }
        return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
    }

    /// libpq's words for a failed statement; the connection's when the result has none (a server gone mid-way).
    static func reason(_ c: OpaquePointer, _ result: OpaquePointer?) -> String {
        let r = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        if !r.isEmpty { return r }
        let e = String(cString: PQerrorMessage(c)).trimmingCharacters(in: .whitespacesAndNewlines)
        return e.isEmpty ? "the server gave no reason" : e
    }

    /// Runs one statement with text parameters (nil for NULL); the rows, as text (nil for NULL).
    @discardableResult
    static func query(_ c: OpaquePointer, _ url: String, _ sql: String, _ params: [String?] = []) throws(CatalogueError)
        -> [[String?]]
    {
        let cstrings = params.map { $0.map { strdup($0) } ?? nil }
        defer { for p in cstrings { free(p) } }
        var pointers = cstrings.map { UnsafePointer($0) }
        let result = pointers.withUnsafeMutableBufferPointer { b in
            PQexecParams(c, sql, Int32(params.count), nil, b.baseAddress, nil, nil, 0)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw CatalogueError("\(url): \(reason(c, result))", unavailable: connectionFailed(c, result))
        }
        var rows: [[String?]] = []
        for r in 0..<PQntuples(result) {
            rows.append(
                (0..<PQnfields(result)).map { f in
                    PQgetisnull(result, r, f) == 1 ? nil : String(cString: PQgetvalue(result, r, f))
                })
        }
        return rows
    }

    /// `query` on this catalogue's connection (the caller is inside `withConnection`).
    @discardableResult
    func query(_ sql: String, _ params: [String?] = []) throws(CatalogueError) -> [[String?]] {
        guard let c = conn else { throw CatalogueError("\(url): not connected", unavailable: true) }
        return try Self.query(c, url, sql, params)
    }

    /// Runs `body` in one transaction (the caller is inside `withConnection`): committed when it returns, rolled back when it throws.
    func transaction(_ body: () throws(CatalogueError) -> Void) throws(CatalogueError) {
        try query("BEGIN")
        do throws(CatalogueError) {
            try body()
            try query("COMMIT")
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    public func record(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)])
        throws(CatalogueError)
    {
        try withConnection { () throws(CatalogueError) in
            try transaction { () throws(CatalogueError) in try insert(clip, files: files) }
        }
    }

    /// The insert itself (the caller is inside a transaction). Flags and notes, and a placement the entry does not
    /// give, are kept from the entry it replaces.
    func insert(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)]) throws(CatalogueError) {
        try query(
            """
            INSERT INTO clips(clip_id, device, session, session_id, t0_device_ns, t0_host_ns, t0_uncertainty_ns, frames, capture_profile,
              below_policy, received_at, path, bytes, swing_id, received_seq, host_boot, received_mono_ns, bay, trigger)
              VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)
            ON CONFLICT (clip_id) DO UPDATE SET device = EXCLUDED.device, session = EXCLUDED.session, session_id = EXCLUDED.session_id,
              t0_device_ns = EXCLUDED.t0_device_ns, t0_host_ns = EXCLUDED.t0_host_ns, t0_uncertainty_ns = EXCLUDED.t0_uncertainty_ns,
              frames = EXCLUDED.frames, capture_profile = EXCLUDED.capture_profile, below_policy = EXCLUDED.below_policy,
              received_at = EXCLUDED.received_at, path = EXCLUDED.path, bytes = EXCLUDED.bytes,
              swing_id = COALESCE(EXCLUDED.swing_id, clips.swing_id), received_seq = COALESCE(EXCLUDED.received_seq, clips.received_seq),
              host_boot = COALESCE(EXCLUDED.host_boot, clips.host_boot), received_mono_ns = COALESCE(EXCLUDED.received_mono_ns, clips.received_mono_ns),
              bay = COALESCE(EXCLUDED.bay, clips.bay), trigger = COALESCE(EXCLUDED.trigger, clips.trigger)
            """,
            [
                clip.clipID, clip.device, clip.session, clip.sessionID, "\(clip.t0DeviceNs)",
                clip.t0HostNs.map { "\($0)" },
                clip.t0UncertaintyNs.map { "\($0)" }, "\(clip.frames)", clip.captureProfile, clip.belowPolicy,
                clip.receivedAt, clip.path, "\(clip.bytes)",
                clip.swingID, clip.receivedSeq.map { "\($0)" }, clip.hostBoot, clip.receivedMonoNs.map { "\($0)" },
                clip.bay, clip.trigger,
            ])
        try query("DELETE FROM files WHERE clip_id = $1", [clip.clipID])
        for f in files {
            try query(
                "INSERT INTO files(clip_id, name, bytes, xxh3) VALUES($1,$2,$3,$4)",
                [clip.clipID, f.name, "\(f.bytes)", f.xxh3])
        }
    }

    public func place(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)], rule: SwingRule)
        throws(CatalogueError) -> CatalogueClip
    {
        try withConnection { () throws(CatalogueError) -> CatalogueClip in
            var placed = clip
            try transaction { () throws(CatalogueError) in
                // Hosts sharing the catalogue place one clip at a time: the order of receipt and the swings stay one.
                try query("SELECT pg_advisory_xact_lock(7601)")
                let before = try query("SELECT \(Catalogue.columns) FROM clips WHERE clip_id = $1", [clip.clipID]).map(
                    Self.clip
                ).first
                if let before, before.swingID != nil, placed.swingID == nil {
                    placed.swingID = before.swingID
                    placed.receivedSeq = before.receivedSeq
                }
                if placed.receivedSeq == nil {
                    placed.receivedSeq =
                        (Int64(
                            (try query("SELECT COALESCE(MAX(received_seq), 0) FROM clips").first?.first ?? nil) ?? "0")
                            ?? 0) + 1
                }
                var inherited: CatalogueClip?
                if placed.swingID == nil {
                    var known: [CatalogueClip] = []
                    if let w = rule.arrivalWindow(of: clip) {
                        known = try query(
                            "SELECT \(Catalogue.columns) FROM clips WHERE host_boot = $1 AND received_mono_ns BETWEEN $2 AND $3",
                            [w.boot, "\(w.fromNs)", "\(w.toNs)"]
                        ).map(Self.clip)
                    }
                    (placed.swingID, inherited) = rule.placement(of: clip, among: known)
                }
                try insert(placed, files: files)
                if before == nil, let first = inherited, !first.flags.isEmpty || !first.notes.isEmpty {
                    try query(
                        "UPDATE clips SET flags = $1, notes = $2 WHERE clip_id = $3",
                        [ClipFlag.text(first.flags), first.notes, clip.clipID])
                }
            }
            return try query("SELECT \(Catalogue.columns) FROM clips WHERE clip_id = $1", [clip.clipID]).map(Self.clip)
                .first ?? placed
        }
    }

    public func forget(clipID: String) throws(CatalogueError) {
        try withConnection { () throws(CatalogueError) in
            try transaction { () throws(CatalogueError) in
                try query("DELETE FROM files WHERE clip_id = $1", [clipID])
                try query("DELETE FROM clips WHERE clip_id = $1", [clipID])
            }
        }
    }

    public func clips() throws(CatalogueError) -> [CatalogueClip] {
        try select("ORDER BY COALESCE(t0_host_ns, t0_device_ns), clip_id", [])
    }

    public func clip(_ clipID: String) throws(CatalogueError) -> CatalogueClip? {
        try select("WHERE clip_id = $1", [clipID]).first
    }

    public func angles(ofSwing id: String) throws(CatalogueError) -> [CatalogueClip] {
        try select("WHERE swing_id = $1 OR (swing_id IS NULL AND clip_id = $1)", [id])
    }

    public func newestSwings(limit: Int, before: Int64?, hidingDiscarded: Bool) throws(CatalogueError) -> (
        clips: [CatalogueClip], swings: Int
    ) {
        // A swing is discarded when every angle is: the smallest place of 'discarded' in its angles' flags is then > 0.
        let kept = hidingDiscarded ? " AND MIN(strpos(flags, 'discarded')) = 0" : ""
        let clips = try select(
            """
            WHERE COALESCE(swing_id, clip_id) IN (SELECT COALESCE(swing_id, clip_id) AS s FROM clips GROUP BY s
              HAVING MIN(COALESCE(received_seq, 0)) < $1\(kept) ORDER BY MIN(COALESCE(received_seq, 0)) DESC LIMIT $2)
            """,
            ["\(before ?? .max)", "\(max(0, limit))"])
        let count = try withConnection { () throws(CatalogueError) in
            try query(
                hidingDiscarded
                    ? "SELECT COUNT(*) FROM (SELECT COALESCE(swing_id, clip_id) AS s FROM clips GROUP BY s HAVING MIN(strpos(flags, 'discarded')) = 0) AS kept"
                    : "SELECT COUNT(DISTINCT COALESCE(swing_id, clip_id)) FROM clips")
        }
        return (clips, Int((count.first?.first ?? nil) ?? "0") ?? 0)
    }

    func select(_ tail: String, _ params: [String?]) throws(CatalogueError) -> [CatalogueClip] {
        try withConnection { () throws(CatalogueError) in
            try query("SELECT \(Catalogue.columns) FROM clips \(tail)", params)
        }.map(Self.clip)
    }

    /// A row of `Catalogue.columns` as an entry.
    static func clip(_ r: [String?]) -> CatalogueClip {
        CatalogueClip(
            clipID: r[0] ?? "", device: r[1] ?? "", session: r[2] ?? "", sessionID: r[3] ?? "",
            t0DeviceNs: Int64(r[4] ?? "0") ?? 0,
            t0HostNs: r[5].flatMap { Int64($0) }, t0UncertaintyNs: r[6].flatMap { Int64($0) },
            frames: Int(r[7] ?? "0") ?? 0,
            captureProfile: r[8] ?? "", belowPolicy: r[9], receivedAt: r[10] ?? "", path: r[11] ?? "",
            bytes: Int64(r[12] ?? "0") ?? 0,
            flags: ClipFlag.parse(r[13] ?? ""), notes: r[14] ?? "", swingID: r[15],
            receivedSeq: r[16].flatMap { Int64($0) }, hostBoot: r[17],
            receivedMonoNs: r[18].flatMap { Int64($0) }, bay: r[19], trigger: r[20])
    }

    public func annotate(clipID: String, flags: Set<ClipFlag>?, notes: String?) throws(CatalogueError) {
        if let flags, let why = ClipFlag.problem(flags) { throw CatalogueError("\(clipID): \(why)") }
        let changed = try withConnection { () throws(CatalogueError) -> Int in
            var changed = 0
            if let flags {
                changed += try query(
                    "UPDATE clips SET flags = $1 WHERE clip_id = $2 RETURNING clip_id", [ClipFlag.text(flags), clipID]
                ).count
            }
            if let notes {
                changed += try query(
                    "UPDATE clips SET notes = $1 WHERE clip_id = $2 RETURNING clip_id", [notes, clipID]
                ).count
            }
            return changed
        }
        guard changed > 0 || (flags == nil && notes == nil) else {
            throw CatalogueError("\(clipID): no such clip in the catalogue")
        }
    }

    /// Files recorded for a clip (tests and a later studio use it).
    public func fileCount(_ clipID: String) throws(CatalogueError) -> Int {
        try withConnection { () throws(CatalogueError) -> Int in
            Int(try query("SELECT COUNT(*) FROM files WHERE clip_id = $1", [clipID]).first?.first.flatMap { $0 } ?? "0")
                ?? 0
        }
    }
}

extension Array where Element == String {
    /// `body` given the strings as a NULL-terminated array of C strings, valid for the call.
    fileprivate func withCStrings<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = map { strdup($0) }
        defer { for c in copies { free(c) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
