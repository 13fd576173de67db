import CPostgres
import Catalogue
import Foundation

/// The clip catalogue on PostgreSQL (libpq), for a facility whose hosts share one: chosen by a connection URL
/// (`postgresql://user@host/db`, or `…?host=/socket/dir`). The same schema as the SQLite catalogue, versioned the same
/// way; the only importer of CPostgres.
public final class PostgresCatalogue: CatalogueStore, @unchecked Sendable {
    // @unchecked: every use of `conn` holds `lock` (a libpq connection serves one query at a time).
    let conn: OpaquePointer
    let lock = NSLock()
    public let url: String

    /// The catalogue's own migrations, with SQLite's 64-bit INTEGER as PostgreSQL's BIGINT.
    static let migrations = Catalogue.migrations.map { $0.replacingOccurrences(of: " INTEGER", with: " BIGINT") }

    /// How long connecting may take unless the URL says (`connect_timeout`), s: libpq's own default is to wait for
    /// ever — for a server that never answers, the kernel's SYN retries, about two minutes — before the host can say why
    /// it will not start. Assumed.
    public static let defaultConnectTimeoutSeconds = 5

    public init(url: String) throws(CatalogueError) {
        self.url = url
        // The URL is expanded in place of `dbname`; key words are taken in order and the last wins, so a
        // `connect_timeout` the URL gives overrides this default.
        let keywords = ["connect_timeout", "dbname"]
        let values = ["\(Self.defaultConnectTimeoutSeconds)", url]
        let connection = keywords.withCStrings { k in values.withCStrings { v in PQconnectdbParams(k, v, 1) } }
        guard let c = connection else { throw CatalogueError("\(url): out of memory") }
        guard PQstatus(c) == CONNECTION_OK else {
            let why = String(cString: PQerrorMessage(c)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(c)
            throw CatalogueError("\(url): \(why)")
        }
        conn = c
        try query("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        // One host migrates at a time: an advisory lock held for the migration's transaction.
        try query("BEGIN")
        try query("SELECT pg_advisory_xact_lock(7600)")
        let version = Int((try query("SELECT value FROM meta WHERE key = 'schema_version'").first?.first ?? nil) ?? "0") ?? 0
        guard version <= Catalogue.schemaVersion else {
            _ = try? query("ROLLBACK")
            throw CatalogueError("\(url): schema version \(version) is newer than this ppc-host knows (\(Catalogue.schemaVersion)); use a newer ppc-host")
        }
        for v in version..<Catalogue.schemaVersion {
            try script(Self.migrations[v])
            try query("INSERT INTO meta(key, value) VALUES('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", ["\(v + 1)"])
        }
        try query("COMMIT")
    }

    deinit { PQfinish(conn) }

    /// Runs several statements without parameters (a migration).
    func script(_ sql: String) throws(CatalogueError) {
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw CatalogueError("\(url): \(String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    /// Runs one statement with text parameters (nil for NULL); the rows, as text (nil for NULL).
    @discardableResult
    func query(_ sql: String, _ params: [String?] = []) throws(CatalogueError) -> [[String?]] {
        let cstrings = params.map { $0.map { strdup($0) } ?? nil }
        defer { for p in cstrings { free(p) } }
        var pointers = cstrings.map { UnsafePointer($0) }
        let result = pointers.withUnsafeMutableBufferPointer { b in
            PQexecParams(conn, sql, Int32(params.count), nil, b.baseAddress, nil, nil, 0)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let why = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            throw CatalogueError("\(url): \(why)")
        }
        var rows: [[String?]] = []
        for r in 0..<PQntuples(result) {
            rows.append((0..<PQnfields(result)).map { f in PQgetisnull(result, r, f) == 1 ? nil : String(cString: PQgetvalue(result, r, f)) })
        }
        return rows
    }

    /// Runs `body` in one transaction (the caller holds `lock`): committed when it returns, rolled back when it throws.
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

    public func record(_ clip: CatalogueClip, files: [(name: String, bytes: Int64, xxh3: String)]) throws(CatalogueError) {
        lock.lock()
        defer { lock.unlock() }
        try transaction { () throws(CatalogueError) in
            try query(
                """
                INSERT INTO clips(clip_id, device, session, session_id, t0_device_ns, t0_host_ns, t0_uncertainty_ns, frames, capture_profile,
                  below_policy, received_at, path, bytes) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)
                ON CONFLICT (clip_id) DO UPDATE SET device = EXCLUDED.device, session = EXCLUDED.session, session_id = EXCLUDED.session_id,
                  t0_device_ns = EXCLUDED.t0_device_ns, t0_host_ns = EXCLUDED.t0_host_ns, t0_uncertainty_ns = EXCLUDED.t0_uncertainty_ns,
                  frames = EXCLUDED.frames, capture_profile = EXCLUDED.capture_profile, below_policy = EXCLUDED.below_policy,
                  received_at = EXCLUDED.received_at, path = EXCLUDED.path, bytes = EXCLUDED.bytes
                """,
                [clip.clipID, clip.device, clip.session, clip.sessionID, "\(clip.t0DeviceNs)", clip.t0HostNs.map { "\($0)" },
                 clip.t0UncertaintyNs.map { "\($0)" }, "\(clip.frames)", clip.captureProfile, clip.belowPolicy, clip.receivedAt, clip.path, "\(clip.bytes)"])
            try query("DELETE FROM files WHERE clip_id = $1", [clip.clipID])
            for f in files { try query("INSERT INTO files(clip_id, name, bytes, xxh3) VALUES($1,$2,$3,$4)", [clip.clipID, f.name, "\(f.bytes)", f.xxh3]) }
        }
    }

    public func forget(clipID: String) throws(CatalogueError) {
        lock.lock()
        defer { lock.unlock() }
        try transaction { () throws(CatalogueError) in
            try query("DELETE FROM files WHERE clip_id = $1", [clipID])
            try query("DELETE FROM clips WHERE clip_id = $1", [clipID])
        }
    }

    public func clips() throws(CatalogueError) -> [CatalogueClip] {
        try select("ORDER BY COALESCE(t0_host_ns, t0_device_ns), clip_id", [])
    }

    public func clip(_ clipID: String) throws(CatalogueError) -> CatalogueClip? {
        try select("WHERE clip_id = $1", [clipID]).first
    }

    func select(_ tail: String, _ params: [String?]) throws(CatalogueError) -> [CatalogueClip] {
        lock.lock()
        defer { lock.unlock() }
        let rows = try query("SELECT \(Catalogue.columns) FROM clips \(tail)", params)
        return rows.map { r in
            CatalogueClip(
                clipID: r[0] ?? "", device: r[1] ?? "", session: r[2] ?? "", sessionID: r[3] ?? "", t0DeviceNs: Int64(r[4] ?? "0") ?? 0,
                t0HostNs: r[5].flatMap { Int64($0) }, t0UncertaintyNs: r[6].flatMap { Int64($0) }, frames: Int(r[7] ?? "0") ?? 0,
                captureProfile: r[8] ?? "", belowPolicy: r[9], receivedAt: r[10] ?? "", path: r[11] ?? "", bytes: Int64(r[12] ?? "0") ?? 0,
                flags: ClipFlag.parse(r[13] ?? ""), notes: r[14] ?? "")
        }
    }

    public func annotate(clipID: String, flags: Set<ClipFlag>?, notes: String?) throws(CatalogueError) {
        if let flags, let why = ClipFlag.problem(flags) { throw CatalogueError("\(clipID): \(why)") }
        lock.lock()
        defer { lock.unlock() }
        var changed = 0
        if let flags { changed += try query("UPDATE clips SET flags = $1 WHERE clip_id = $2 RETURNING clip_id", [ClipFlag.text(flags), clipID]).count }
        if let notes { changed += try query("UPDATE clips SET notes = $1 WHERE clip_id = $2 RETURNING clip_id", [notes, clipID]).count }
        guard changed > 0 || (flags == nil && notes == nil) else { throw CatalogueError("\(clipID): no such clip in the catalogue") }
    }

    /// Files recorded for a clip (tests and a later studio use it).
    public func fileCount(_ clipID: String) throws(CatalogueError) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return Int(try query("SELECT COUNT(*) FROM files WHERE clip_id = $1", [clipID]).first?.first.flatMap { $0 } ?? "0") ?? 0
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
