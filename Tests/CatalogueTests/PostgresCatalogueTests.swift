import Foundation
import Glibc
import TestSupport
import Testing

@testable import Catalogue
@testable import PostgresCatalogue

/// The same catalogue on PostgreSQL: a throwaway PostgreSQL 15 cluster started for the suite (Debian's initdb and
/// pg_ctl, run as an unprivileged user — initdb refuses root — on a Unix socket in a temporary directory), stopped after.
@Suite("Catalogue on PostgreSQL", .serialized)
struct PostgresCatalogueTests {
    static let bin = "/usr/lib/postgresql/15/bin"

    /// Why the suite cannot run here, or nil.
    static var missing: String? {
        if !FileManager.default.isExecutableFile(atPath: bin + "/initdb") { return "\(bin)/initdb is missing (scripts/install-deps installs postgresql-15)" }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") { return "setpriv is missing (util-linux)" }
        if getuid() != 0 { return "needs root to run the cluster as an unprivileged user" }
        return nil
    }

    /// A running cluster; stopped when the value is released.
    final class Cluster {
        let dir: TemporaryDirectory
        let url: String
        init() throws {
            dir = TemporaryDirectory("ppc-pg")
            chmod(dir.path, 0o777)
            let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            let initdb = try ToolRunner.runProgram(asNobody[0], Array(asNobody.dropFirst()) + [bin + "/initdb", "-D", dir.path + "/data", "-A", "trust", "-U", "ppc"])
            guard initdb.status == 0 else { throw CatalogueError("initdb: \(initdb.stderr)") }
            // The server must keep no descriptor of this process's beyond stdio: Foundation learns that a child exited
            // from a socket the child holds, and a daemon holding it would make this wait for ever. So: closed first.
            let closeInherited = "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done 2>/dev/null; exec \"$@\""
            let start = try ToolRunner.runProgram("/bin/bash", ["-c", closeInherited, "bash"] + asNobody + [
                bin + "/pg_ctl", "-D", dir.path + "/data", "-o", "-k \(dir.path) -c listen_addresses=''", "-l", dir.path + "/log", "-w", "start",
            ])
            guard start.status == 0 else { throw CatalogueError("pg_ctl start: \(start.stderr) \((try? String(contentsOfFile: dir.path + "/log", encoding: .utf8)) ?? "")") }
            url = "postgresql://ppc@/postgres?host=\(dir.path)"
        }
        deinit {
            _ = try? ToolRunner.runProgram("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", PostgresCatalogueTests.bin + "/pg_ctl", "-D", dir.path + "/data", "-m", "immediate", "stop"])
        }
    }

    @Test(.enabled(if: PostgresCatalogueTests.missing == nil, "PostgreSQL suite skipped: \(PostgresCatalogueTests.missing ?? "")"))
    func clipsAndSwingsAreTheSameOnPostgreSQL() throws {
        let cluster = try Cluster()
        do {
            let c = try PostgresCatalogue(url: cluster.url)
            try c.record(CatalogueTests.clip("a-1", "bay-a", t0: 10_000_000_000), files: [("clip.mp4", 900, "00ff"), ("meta.json", 100, "ff00")])
            try c.record(CatalogueTests.clip("a-1", "bay-a", t0: 10_000_000_000), files: [("clip.mp4", 900, "00ff")])
            try c.record(CatalogueTests.clip("b-1", "bay-b", t0: 10_004_000_000), files: [])
            try c.record(CatalogueTests.clip("c-1", "bay-c", t0: 15_000_000_000, offset: nil), files: [])
            #expect(try c.fileCount("a-1") == 1)
        }
        // A second host (a new connection) sees the same catalogue, already at its schema version.
        let other = try PostgresCatalogue(url: cluster.url)
        let clips = try other.clips()
        #expect(clips.map(\.clipID) == ["a-1", "b-1", "c-1"])
        #expect(clips.first { $0.clipID == "c-1" }?.t0HostNs == nil)
        #expect(Catalogue.swings(clips).map { $0.map(\.clipID) } == [["a-1", "b-1"], ["c-1"]])
        #expect(try other.query("SELECT value FROM meta WHERE key = 'schema_version'").first?.first == .some("\(Catalogue.schemaVersion)"))
        // ppc-host reads the same catalogue by its URL.
        let listed = try ToolRunner.run(["clips", "--json", "--catalogue", cluster.url], tool: "ppc-host")
        #expect(listed.status == 0, "\(listed.stderr)")
        let swings = (try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]) ?? []
        #expect(swings.count == 2 && (swings.first?["angles"] as? [Any])?.count == 2, "\(listed.stdout)")
        // Flags and notes, the same as on SQLite: kept across a re-record, seen by another connection.
        try other.annotate(clipID: "b-1", flags: [.kept, .starred], notes: "from the side")
        #expect { try other.annotate(clipID: "b-1", flags: [.kept, .discarded], notes: nil) } throws: { "\($0)".contains("not both") }
        try other.record(CatalogueTests.clip("b-1", "bay-b", t0: 10_004_000_000), files: [])
        let b = try PostgresCatalogue(url: cluster.url).clips().first { $0.clipID == "b-1" }
        #expect(b?.flags == [.kept, .starred] && b?.notes == "from the side")
        #expect(try other.clip("b-1")?.notes == "from the side")
        #expect(try other.clip("nope") == nil)
        // A clip whose folder is gone is forgotten, files and all; forgetting one not there is nothing.
        try other.forget(clipID: "a-1")
        try other.forget(clipID: "nope")
        #expect(try other.clips().map(\.clipID) == ["b-1", "c-1"] && other.fileCount("a-1") == 0)
        // A URL that reaches nothing is an error naming it.
        #expect { try PostgresCatalogue(url: "postgresql://ppc@/postgres?host=/nonexistent-dir") } throws: { "\($0)".contains("/nonexistent-dir") }
    }
}

/// Needs no cluster: a server that never answers.
@Suite("Catalogue on PostgreSQL: a server that never answers")
struct PostgresConnectTimeoutTests {
    /// libpq waits for ever by default (for a server that never answers, the kernel's two minutes of SYN retries); the
    /// host gives up after its own default, or the URL's `connect_timeout`, and names the URL.
    @Test(arguments: ["", "?connect_timeout=2"])
    func aServerThatNeverAnswersIsGivenUpAndNamed(query: String) throws {
        let silent = try SilentListener()
        let url = "postgresql://ppc@127.0.0.1:\(silent.port)/postgres\(query)"
        #expect { try PostgresCatalogue(url: url) } throws: { "\($0)".contains(url) && "\($0)".contains("timeout expired") }
    }
}
