import Syscall
import Testing

@testable import CLI

@Suite("CLI parser: subcommands, options, help and exit codes")
struct ParserTests {
    static let leaf = Command(
        "check", abstract: "Check a thing.",
        options: [
            .flag("json", help: "JSON."), .value("set", "k=v", repeatable: true, help: "Set."),
            .value("out", "dir", help: "Out."),
        ],
        arguments: [Argument("file", help: "A file."), Argument("extra", optional: true, help: "More.")],
        run: { _ in .success })
    static let root = Command(
        "tool", abstract: "A tool.", subcommands: [Command("config", abstract: "Config.", subcommands: [leaf])])

    func parse(_ args: [String]) throws(CommandFailure) -> ParseResult { try Parser.parse(args, root: Self.root) }

    @Test func descendsAndCollects() throws {
        guard
            case .run(let c, let inv) = try parse([
                "config", "check", "a.json", "--json", "--set", "x=1", "--set=y=2", "--out", "d",
            ])
        else {
            Issue.record("expected run")
            return
        }
        #expect(c.name == "check")
        #expect(inv.path == ["tool", "config", "check"])
        #expect(inv.flag("json"))
        #expect(inv.values("set") == ["x=1", "y=2"])
        #expect(inv.value("out") == "d")
        #expect(inv.arguments == ["a.json"])
    }

    /// A number that is no number, or out of what the option can mean, is a usage error naming the option and the value
    /// (before, `--mic-to-ball nan` and `--duration 1e300` trapped converting to an integer, and `--seconds 1e12` tried
    /// to allocate 192 PB).
    @Test func numbersAreFiniteAndHeldToTheirRange() throws {
        func inv(_ value: String) throws(CommandFailure) -> Invocation {
            guard case .run(_, let inv) = try parse(["config", "check", "a.json", "--out", value]) else {
                throw CommandFailure.usage("no run")
            }
            return inv
        }
        for bad in ["nan", "inf", "-inf", "1e400"] {
            #expect(throws: CommandFailure.self) { try inv(bad).parsed("out", as: Double.self) }
        }
        #expect(try inv("2.5").parsed("out", as: Double.self) == 2.5)
        #expect(try inv("2.5").parsed("out", in: 1.0...3.0) == 2.5)
        for (bad, range) in [("1e300", 0.001...100.0), ("0", 0.001...100.0), ("-1", 0.001...100.0)] {
            do {
                _ = try inv(bad).parsed("out", in: range)
                Issue.record("\(bad) accepted")
            } catch {
                #expect(
                    error.exitCode == .usage && error.message.contains("--out '\(bad)'")
                        && error.message.contains("0.001 to 100.0"), "\(error.message)")
            }
        }
        #expect(throws: CommandFailure.self) { try inv("99999999999999999999").parsed("out", in: 1...10) }
        #expect(throws: CommandFailure.self) { try inv("11").parsed("out", in: 1...10) }
        #expect(try inv("10").parsed("out", in: 1...10) == 10)
    }

    /// Text from outside reaches a terminal as what it is: an escape sequence, a carriage return, BEL or a
    /// bidirectional override in a name is shown as `\u{…}`, not obeyed; plain text (accents included) is untouched.
    @Test func controlCharactersAreShownNotObeyed() {
        #expect(StandardStream.visible("bay-1 café ⛳ 120 fps") == "bay-1 café ⛳ 120 fps")
        #expect(StandardStream.visible("evil\u{1B}]0;owned\u{07}name") == "evil\\u{1B}]0;owned\\u{7}name")
        #expect(StandardStream.visible("ok\rppc-host: paired") == "ok\\u{D}ppc-host: paired")
        #expect(StandardStream.visible("abc\u{202E}gnp.exe") == "abc\\u{202E}gnp.exe")
        #expect(StandardStream.visible("a\u{9B}2J") == "a\\u{9B}2J")  // C1 CSI
        #expect(StandardStream.visible("two\nlines\tok") == "two\nlines\tok")
        #expect(StandardStream.visible("two\nlines", newlines: true) == "two\\u{A}lines")
    }

    @Test func doubleDashEndsOptions() throws {
        guard case .run(_, let inv) = try parse(["config", "check", "--", "--json"]) else { return }
        #expect(inv.arguments == ["--json"])
        #expect(!inv.flag("json"))
    }

    @Test(arguments: [["--help"], ["config", "--help"], ["config", "check", "-h"], ["config"], []])
    func helpAtEveryLevel(args: [String]) throws {
        guard case .help(let text) = try parse(args) else {
            Issue.record("expected help for \(args)")
            return
        }
        #expect(text.contains("USAGE:"))
    }

    @Test func helpListsOptionsAndSubcommands() throws {
        guard case .help(let text) = try parse(["config", "check", "--help"]) else { return }
        #expect(text.contains("--set <k=v>"))
        #expect(text.contains("(repeatable)"))
        #expect(text.contains("<file>"))
        guard case .help(let top) = try parse([]) else { return }
        #expect(top.contains("SUBCOMMANDS:"))
        #expect(top.contains("--version"))
    }

    @Test func versionAtTheRoot() throws {
        guard case .version = try parse(["--version"]) else {
            Issue.record("expected version")
            return
        }
    }

    @Test(arguments: [
        (["config", "check", "f", "--jsno"], "unknown option '--jsno'"),
        (["config", "check", "f", "--js"], "did you mean --json?"),
        (["config", "check"], "missing <file>"),
        (["config", "check", "a", "b", "c"], "unexpected argument 'c'"),
        (["config", "check", "f", "--out"], "--out needs a value"),
        (["config", "check", "f", "--out", "a", "--out", "b"], "--out given more than once"),
        (["config", "check", "f", "--json=1"], "--json takes no value"),
        (["config", "chek"], "unknown subcommand 'chek' (did you mean 'check'?)"),
        (["config", "check", "f", "-x"], "unknown option '-x'"),
    ])
    func usageErrorsExit64(args: [String], message: String) {
        do {
            _ = try parse(args)
            Issue.record("\(args) parsed")
        } catch {
            #expect(error.exitCode == .usage)
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test func mainMapsFailuresToExitCodes() {
        let failing = Command("t", abstract: "", run: { _ in throw CommandFailure.dataError("bad") })
        #expect(Main.run(failing, version: "1", arguments: []) == 65)
        #expect(Main.run(failing, version: "1", arguments: ["--bogus"]) == 64)
        #expect(Main.run(failing, version: "1", arguments: ["--version"]) == 0)
        struct Boom: Error {}
        let crashing = Command("t", abstract: "", run: { _ in throw Boom() })
        #expect(Main.run(crashing, version: "1", arguments: []) == 1)
    }
}

@Suite("CLI values: HOST:PORT and WIDTHxHEIGHT, parsed once, errors naming the option and the value")
struct ValueTests {
    @Test(arguments: ["127.0.0.1:7600", "studio.local:8080", "host:1", "host:65535"])
    func anEndpointIsAHostAndAPort(_ text: String) throws {
        let e = try Endpoint(text)
        #expect(e.description == text && !e.host.isEmpty && (1...65535).contains(e.port))
    }

    @Test(arguments: ["localhost", ":80", "host:", "host:0", "host:65536", "host:-1", "a:b:c", "host:８０", "host:80 "])
    func anythingElseIsAUsageErrorNamingTheOptionAndTheValue(_ text: String) {
        #expect {
            try Endpoint(text, option: "listen")
        } throws: { e in
            let f = e as? CommandFailure
            return f?.exitCode == .usage && f?.message.hasPrefix("--listen '\(text)': expected HOST:PORT") == true
        }
    }

    @Test func portZeroIsTakenWhereTheKernelMayPick() throws {
        #expect(try Endpoint("127.0.0.1:0", ports: 0...65535).port == 0)
    }

    @Test func aFrameSizeIsTwoSidesWithinTheirBounds() throws {
        #expect(try FrameSize("1280x720", option: "size") == FrameSize(width: 1280, height: 720))
        for bad in ["1280", "1280x", "x720", "0x720", "1280x0", "99999x720", "1280x720x3", "-2x4", "1281x720"] {
            #expect(throws: CommandFailure.self) { try FrameSize(bad, option: "size", even: true, minimumWidth: 160) }
        }
        #expect(throws: CommandFailure.self) { try FrameSize("100x720", option: "size", minimumWidth: 160) }
        #expect(try FrameSize("161x9", option: "size", minimumWidth: 160).width == 161)
    }
}
