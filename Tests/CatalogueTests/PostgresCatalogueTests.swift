import Foundation
import Glibc
import Syscall
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
        if !FileManager.default.isExecutableFile(atPath: bin + "/initdb") {
            return "\(bin)/initdb is missing (scripts/install-deps installs postgresql-15)"
        }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            return "setpriv is missing (util-linux)"
        }
        if getuid() != 0 { return "needs root to run the cluster as an unprivileged user" }
        return nil
    }

    /// A running cluster; stopped when the value is released.
    final class Cluster {
        let dir: TemporaryDirectory
        let url: String
        static let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        init() throws {
            dir = TemporaryDirectory("ppc-pg")
            chmod(dir.path, 0o777)
            let initdb = try ToolRunner.runProgram(
                Self.asNobody[0],
                Array(Self.asNobody.dropFirst()) + [
                    bin + "/initdb", "-D", dir.path + "/data", "-A", "trust", "-U", "ppc",
                ])
            guard initdb.status == 0 else { throw CatalogueError("initdb: \(initdb.stderr)") }
            url = "postgresql://ppc@/postgres?host=\(dir.path)"
            try start()
        }

        /// Starts the server and waits until it takes connections (pg_ctl -w).
        func start() throws {
            // The server must keep no descriptor of this process's beyond stdio: Foundation learns that a child exited
            // from a socket the child holds, and a daemon holding it would make this wait for ever. So: closed first.
            let closeInherited =
                "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done 2>/dev/null; exec \"$@\""
            let start = try ToolRunner.runProgram(
                "/bin/bash",
                ["-c", closeInherited, "bash"] + Self.asNobody + [
                    bin + "/pg_ctl", "-D", dir.path + "/data", "-o", "-k \(dir.path) -c listen_addresses=''", "-l",
                    dir.path + "/log", "-w", "start",
                ])
            guard start.status == 0 else {
                throw CatalogueError(
                    "pg_ctl start: \(start.stderr) \((try? String(contentsOfFile: dir.path + "/log", encoding: .utf8)) ?? "")"
                )
            }
        }

        /// Stops the server at once (as a crash or a restart would; pg_ctl -w waits until it has).
        func stop() {
            _ = try? ToolRunner.runProgram(
                Self.asNobody[0],
                Array(Self.asNobody.dropFirst()) + [
                    PostgresCatalogueTests.bin + "/pg_ctl", "-D", dir.path + "/data", "-m", "immediate", "-w", "stop",
                ])
        }

        deinit { stop() }
    }

    /// Issue 33: after PostgreSQL restarted, every clip was "not catalogued: server closed the connection unexpectedly"
    /// until ppc-host was restarted, and a host started while it was down exited 1. A catalogue now reconnects — at
    /// once for a server that went mid-way, then every 1 to 30 s — says it is unavailable while it is, and tells its
    /// host when it is back.
    @Test(
        .enabled(
            if: PostgresCatalogueTests.missing == nil,
            "PostgreSQL suite skipped: \(PostgresCatalogueTests.missing ?? "")"))
    func aServerThatRestartsOrIsDownAtTheStartIsReconnectedTo() throws {
        let cluster = try Cluster()
        let c = try PostgresCatalogue(url: cluster.url)
        try c.record(CatalogueTests.clip("a-1", "bay-a", t0: 1_000_000_000), files: [])
        cluster.stop()
        try cluster.start()
        // the connection the restart cut is made again
        try c.record(CatalogueTests.clip("a-2", "bay-a", t0: 2_000_000_000), files: [])
        #expect(try c.clips().map(\.clipID) == ["a-1", "a-2"])
        cluster.stop()
        #expect { try c.clips() } throws: {
            ($0 as? CatalogueError)?.unavailable == true && "\($0)".contains("catalogue unavailable — reconnecting")
        }
        #expect { try c.annotate(clipID: "a-1", flags: [.starred], notes: nil) } throws: {
            ($0 as? CatalogueError)?.unavailable == true
        }

        // A catalogue opened while the server is down starts unavailable, and comes back by itself.
        let late = try PostgresCatalogue(url: cluster.url, waitForServer: true)
        #expect(!late.isAvailable && late.unavailableBecause != nil)
        let told = Guarded(0)
        late.onReconnect = { told.withLock { $0 += 1 } }
        c.onReconnect = { told.withLock { $0 += 10 } }
        try cluster.start()
        #expect(awaitCondition { late.reconnectIfDown() || late.isAvailable })
        #expect(awaitCondition { c.reconnectIfDown() || c.isAvailable })
        #expect(told.withLock { $0 } == 11)
        #expect(try late.clips().map(\.clipID) == ["a-1", "a-2"])
        // Without waiting for the server, a catalogue that cannot reach it is an error (the catalogue commands).
        cluster.stop()
        #expect { try PostgresCatalogue(url: cluster.url) } throws: { "\($0)".contains(cluster.dir.path) }
        #expect {
            try PostgresCatalogue(url: "postgresql://ppc@/postgres?host=/x&nonsense=1", waitForServer: true)
        } throws: { "\($0)".contains("nonsense") }
    }

    /// The host's side of it: started while PostgreSQL is down (it used to exit 1), it takes a device's clip, its studio
    /// says the catalogue is unavailable (503, not an empty 500), and once the server is up the clip stored meanwhile is
    /// catalogued from the library and listed.
    @Test(
        .enabled(
            if: PostgresCatalogueTests.missing == nil,
            "PostgreSQL suite skipped: \(PostgresCatalogueTests.missing ?? "")"))
    func aHostStartsWhileTheCatalogueIsDownAndCatchesUpWhenItIsBack() throws {
        let cluster = try Cluster()
        cluster.stop()
        let tmp = TemporaryDirectory("ppc-pg-host")
        let port = freeLoopbackPort(SOCK_STREAM)
        let http = freeLoopbackPort(SOCK_STREAM)
        let log = tmp.sub("host.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let host = Process()
        host.executableURL = URL(fileURLWithPath: ToolRunner.executable("ppc-host"))
        host.arguments = [
            "--listen", "127.0.0.1:\(port)", "--library", tmp.sub("library"), "--ingest-policy", "any",
            "--insecure-loopback-only",
            "--state", tmp.sub("state"), "--catalogue", cluster.url, "--http", "127.0.0.1:\(http)",
        ]
        host.standardOutput = FileHandle(forWritingAtPath: log)
        host.standardError = host.standardOutput
        try host.run()
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        func said() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        #expect(awaitCondition { said().contains("listening on 127.0.0.1:\(port)") || !host.isRunning }, "\(said())")
        #expect(host.isRunning && said().contains("the catalogue cannot be reached now"), "\(said())")
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub("out"), "--host", "127.0.0.1:\(port)",
            "--device-id", "bay-p",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let swings = rawHTTPHead(
            port: http, "GET /api/swings HTTP/1.1\r\nHost: 127.0.0.1:\(http)\r\nConnection: close\r\n\r\n")
        #expect(swings.hasPrefix("HTTP/1.1 503"), "\(swings.prefix(100))")
        try cluster.start()
        #expect(awaitCondition { said().contains("catalogued 1 clip(s) already in") }, "\(said())")
        #expect(said().contains("while the catalogue was away"))
        let listed = try ToolRunner.run(["clips", "--json", "--catalogue", cluster.url], tool: "ppc-host")
        #expect(listed.status == 0 && listed.stdout.contains("bay-p"), "\(listed.stdout) \(listed.stderr)")
        #expect(
            rawHTTPHead(port: http, "GET /api/swings HTTP/1.1\r\nHost: 127.0.0.1:\(http)\r\nConnection: close\r\n\r\n")
                .hasPrefix("HTTP/1.1 200"))
    }

    @Test(
        .enabled(
            if: PostgresCatalogueTests.missing == nil,
            "PostgreSQL suite skipped: \(PostgresCatalogueTests.missing ?? "")"))
    func clipsAndSwingsAreTheSameOnPostgreSQL() throws {
        let cluster = try Cluster()
        do {
            let c = try PostgresCatalogue(url: cluster.url)
            try c.record(
                CatalogueTests.clip("a-1", "bay-a", t0: 10_000_000_000),
                files: [("clip.mp4", 900, "00ff"), ("meta.json", 100, "ff00")])
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
        #expect(
            try other.query("SELECT value FROM meta WHERE key = 'schema_version'").first?.first
                == .some("\(Catalogue.schemaVersion)"))
        // ppc-host reads the same catalogue by its URL.
        let listed = try ToolRunner.run(["clips", "--json", "--catalogue", cluster.url], tool: "ppc-host")
        #expect(listed.status == 0, "\(listed.stderr)")
        let swings = (try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]) ?? []
        #expect(swings.count == 2 && (swings.first?["angles"] as? [Any])?.count == 2, "\(listed.stdout)")
        // Flags and notes, the same as on SQLite: kept across a re-record, seen by another connection.
        try other.annotate(clipID: "b-1", flags: [.kept, .starred], notes: "from the side")
        #expect { try other.annotate(clipID: "b-1", flags: [.kept, .discarded], notes: nil) } throws: {
            "\($0)".contains("not both")
        }
        try other.record(CatalogueTests.clip("b-1", "bay-b", t0: 10_004_000_000), files: [])
        let b = try PostgresCatalogue(url: cluster.url).clips().first { $0.clipID == "b-1" }
        #expect(b?.flags == [.kept, .starred] && b?.notes == "from the side")
        #expect(try other.clip("b-1")?.notes == "from the side")
        #expect(try other.clip("nope") == nil)
        // Discarded swings left out of the newest when asked, as on SQLite.
        try other.annotate(clipID: "c-1", flags: [.discarded], notes: nil)
        let shown = try other.newestSwings(limit: 10, before: nil, hidingDiscarded: true)
        #expect(!shown.clips.contains { $0.clipID == "c-1" }, "\(shown.clips.map(\.clipID))")
        let every = try other.newestSwings(limit: 10, before: nil, hidingDiscarded: false)
        #expect(
            every.swings == shown.swings + 1,
            "\(every.swings) \(shown.swings) \(every.clips.map { ($0.clipID, $0.swingID ?? "-", $0.flags) })")
        // A clip whose folder is gone is forgotten, files and all; forgetting one not there is nothing.
        try other.forget(clipID: "a-1")
        try other.forget(clipID: "nope")
        #expect(try other.clips().map(\.clipID) == ["b-1", "c-1"] && other.fileCount("a-1") == 0)
        // A URL that reaches nothing is an error naming it.
        #expect { try PostgresCatalogue(url: "postgresql://ppc@/postgres?host=/nonexistent-dir") } throws: {
            "\($0)".contains("/nonexistent-dir")
        }
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
        #expect { try PostgresCatalogue(url: url) } throws: {
            "\($0)".contains(url) && "\($0)".contains("timeout expired")
        }
    }
}
