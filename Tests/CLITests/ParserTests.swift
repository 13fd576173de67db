import Testing

@testable import CLI

@Suite("CLI parser: subcommands, options, help and exit codes")
struct ParserTests {
    static let leaf = Command(
        "check", abstract: "Check a thing.",
        options: [.flag("json", help: "JSON."), .value("set", "k=v", repeatable: true, help: "Set."), .value("out", "dir", help: "Out.")],
        arguments: [Argument("file", help: "A file."), Argument("extra", optional: true, help: "More.")],
        run: { _ in .success })
    static let root = Command(
        "tool", abstract: "A tool.", subcommands: [Command("config", abstract: "Config.", subcommands: [leaf])])

    func parse(_ args: [String]) throws(CommandFailure) -> ParseResult { try Parser.parse(args, root: Self.root) }

    @Test func descendsAndCollects() throws {
        guard case .run(let c, let inv) = try parse(["config", "check", "a.json", "--json", "--set", "x=1", "--set=y=2", "--out", "d"]) else {
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
