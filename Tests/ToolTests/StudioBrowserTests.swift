import Foundation
import TestSupport
import Testing

/// ppc Studio in a real browser: Debian's chromium through chromium-driver and python3-selenium (installed by
/// scripts/install-deps; nothing is downloaded). The steps and what each asserts are in Tests/Browser/studio_test.py;
/// its screenshots are kept in .build/studio-screenshots/ for a person to look at.
@Suite("ppc Studio in a browser: live updates, synchronised angles, frame step, flags across a restart", .serialized)
struct StudioBrowserTests {
    static let python = "/usr/bin/python3"

    /// What is missing for a browser test, if anything (install-deps installs all of it).
    static var missing: [String] {
        var out: [String] = []
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") { out.append("chromium") }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") { out.append("chromium-driver") }
        if !FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/selenium") {
            out.append("python3-selenium")
        }
        return out
    }

    /// Runs one of Tests/Browser's scripts against the built tools; its output, after the test has checked it passed.
    /// The script must not hold this process's pipes or sockets open (another test's child, or a connection a test
    /// closed, would never be seen to end): every inherited descriptor above 2 is closed — but for the Unix socket by
    /// which Foundation learns that this child exited. Closing that one too made Foundation take the script for ended
    /// and wait for it in its one reaping thread for minutes, so no other test's child was seen to exit meanwhile (a
    /// loaded clean-clone run: BayTests stalled behind the bay screen's script).
    func runBrowserScript(_ script: String, screenshots: String) throws -> String {
        try #require(
            Self.missing.isEmpty, "install \(Self.missing.joined(separator: ", ")) (scripts/install-deps does)")
        let work = TemporaryDirectory("ppc-browser-\(script)")
        let closeInherited = """
            for fd in $(ls /proc/$$/fd); do
              [ "$fd" -gt 2 ] || continue
              t=$(readlink /proc/$$/fd/$fd)
              case "$t" in socket:\\[*) i=${t#socket:[}; i=${i%]}
                awk -v i="$i" '$7 == i { f = 1 } END { exit !f }' /proc/net/unix && continue;; esac
              eval "exec $fd>&-"
            done 2>/dev/null
            exec "$@"
            """
        let r = try ToolRunner.runProgram(
            "/bin/bash",
            [
                "-c", closeInherited, script, Self.python, ToolRunner.repoFile("Tests/Browser/\(script).py"),
                "--host-tool", ToolRunner.executable("ppc-host"), "--tool", ToolRunner.executable("ppc-tool"), "--out",
                screenshots, "--work", work.path,
            ])
        let out = String(decoding: r.stdout, as: UTF8.self)
        print(out)
        #expect(r.status == 0, "\(out)\n\(r.stderr)")
        #expect(out.contains("PASS"))
        return out
    }

    @Test func theStudioInChromium() throws {
        let shots = ToolRunner.repoFile(".build/studio-screenshots")
        _ = try runBrowserScript("studio_test", screenshots: shots)
        for page in ["live", "swing", "compare", "sessions", "session"] {
            #expect(FileManager.default.fileExists(atPath: "\(shots)/studio-\(page).png"), "screenshot of \(page)")
        }
    }

    /// The bay loop (issue 32): the bay screen plays each new swing of two devices — one with no microphone — with no
    /// input, in sync, looping, first from its first looks and then its clips; its keys; two screen sizes; a host
    /// restart; a swing's star, notes and address kept when its second angle arrives. Steps in Tests/Browser/bay_test.py.
    @Test func theBayLoopInChromium() throws {
        let shots = ToolRunner.repoFile(".build/studio-screenshots")
        _ = try runBrowserScript("bay_test", screenshots: shots)
        for size in ["1920x1080", "1024x768"] {
            #expect(FileManager.default.fileExists(atPath: "\(shots)/bay-\(size).png"), "screenshot at \(size)")
        }
    }

    /// The coach's library (issue 35): students set hitting from Live, lessons across cameras, search, a swing's place
    /// in its lesson and the keys that move through it, notes kept as typed, discard that hides, delete that asks, a
    /// phone-sized screen. Steps in Tests/Browser/library_test.py.
    @Test func theCoachsLibraryInChromium() throws {
        let shots = ToolRunner.repoFile(".build/studio-screenshots")
        _ = try runBrowserScript("library_test", screenshots: shots)
        for page in ["swings", "lessons", "swing", "phone"] {
            #expect(FileManager.default.fileExists(atPath: "\(shots)/library-\(page).png"), "screenshot of \(page)")
        }
    }

    /// The coach lost the link: `ppc-host studio-link` gives it again — the key the running studio asks for — and
    /// `--new` makes another.
    @Test func theStudioLinkIsGivenAgainWithTheKeyTheStudioAsksFor() throws {
        let tmp = TemporaryDirectory("ppc-studio-link")
        let state = tmp.sub("state")
        let link = try ToolRunner.run(
            ["studio-link", "--state", state, "--http", "192.168.1.20:8080"], tool: "ppc-host")
        #expect(link.status == 0, "\(link.stderr)")
        let line = link.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            line.hasPrefix("http://192.168.1.20:8080/?key=")
                && line.count == "http://192.168.1.20:8080/?key=".count + 64, "\(line)")
        let key = String(line.suffix(64))
        let again = try ToolRunner.run(["studio-link", "--state", state, "--http", "0.0.0.0:8080"], tool: "ppc-host")
        #expect(again.stdout.hasSuffix("/?key=\(key)\n") && !again.stdout.contains("0.0.0.0"), "\(again.stdout)")
        // The studio served with that state asks for that key.
        let host = try HostLog(
            library: tmp.sub("library"), state: state, extra: ["--http", "127.0.0.1:0", "--studio-on-network"])
        #expect(host.await("/?key=\(key) "), "\(host.log.text)")
        host.stop()
        let renewed = try ToolRunner.run(
            ["studio-link", "--state", state, "--http", "192.168.1.20:8080", "--new"], tool: "ppc-host")
        #expect(
            renewed.status == 0 && !renewed.stdout.contains(key) && renewed.stderr.contains("until it starts again"),
            "\(renewed.stdout)\(renewed.stderr)")
        let noPort = try ToolRunner.run(["studio-link", "--state", state, "--http", "192.168.1.20"], tool: "ppc-host")
        #expect(
            noPort.status == 64 && noPort.stderr.contains("--http '192.168.1.20': expected HOST:PORT"),
            "\(noPort.stderr)")
    }

    @Test func aStudioOffLoopbackMustBeAskedForAndABadAddressIsNamed() throws {
        let tmp = TemporaryDirectory("ppc-studio-lan")
        let lan = try ToolRunner.run(
            ["--listen", "127.0.0.1:0", "--library", tmp.path, "--http", "0.0.0.0:0"], tool: "ppc-host")
        #expect(lan.status == 64 && lan.stderr.contains("--studio-on-network"), "\(lan.stderr)")
        let bad = try ToolRunner.run(
            ["--listen", "127.0.0.1:0", "--library", tmp.path, "--http", "127.0.0.1"], tool: "ppc-host")
        #expect(bad.status == 64 && bad.stderr.contains("--http '127.0.0.1': expected HOST:PORT"), "\(bad.stderr)")
        // A port taken: the host's own flag named, with the address, and a usage exit.
        let taken = try withLoopbackPortInUse { port in
            try ToolRunner.run(
                ["--listen", "127.0.0.1:0", "--library", tmp.path, "--http", "127.0.0.1:\(port)"], tool: "ppc-host")
        }
        #expect(
            taken.status == 64 && taken.stderr.contains("--http 127.0.0.1:")
                && taken.stderr.contains("cannot listen there (in use)"), "\(taken.stderr)")
    }
}
