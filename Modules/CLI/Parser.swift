import Foundation
import Syscall

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a command line asks for once parsed.
public enum ParseResult: Sendable {
    case run(Command, Invocation)
    case help(String)
    case version
}

/// The hand-written argument parser: walks the command tree by subcommand names, then reads options and positionals.
/// `--help`/`-h` works at every level; `--version` at the root.
public enum Parser {
    public static func parse(_ args: [String], root: Command) throws(CommandFailure) -> ParseResult {
        var command = root
        var path = [root.name]
        var i = 0
        // Descend through subcommand names.
        while i < args.count, let sub = command.subcommands.first(where: { $0.name == args[i] }) {
            command = sub
            path.append(sub.name)
            i += 1
        }
        var flags: Set<String> = []
        var values: [String: [String]] = [:]
        var positionals: [String] = []
        var onlyPositionals = false
        while i < args.count {
            let a = args[i]
            i += 1
            if onlyPositionals || !a.hasPrefix("-") || a == "-" {
                positionals.append(a)
                continue
            }
            if a == "--" {
                onlyPositionals = true
                continue
            }
            if a == "--help" || a == "-h" { return .help(Help.text(for: command, path: path)) }
            if a == "--version" && path.count == 1 { return .version }
            guard a.hasPrefix("--") else {
                throw .usage(
                    "\(path.joined(separator: " ")): unknown option '\(a)'\n\(Help.usageLine(command, path: path))")
            }
            var name = String(a.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = command.options.first(where: { $0.name == name }) else {
                let hint = nearest(name, command.options.map(\.name)).map { " (did you mean --\($0)?)" } ?? ""
                throw .usage(
                    "\(path.joined(separator: " ")): unknown option '--\(name)'\(hint)\n\(Help.usageLine(command, path: path))"
                )
            }
            if option.valueName == nil {
                if inline != nil { throw .usage("--\(name) takes no value") }
                flags.insert(name)
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < args.count else { throw .usage("--\(name) needs a value <\(option.valueName!)>") }
                value = args[i]
                i += 1
            }
            if !option.repeatable, values[name] != nil { throw .usage("--\(name) given more than once") }
            values[name, default: []].append(value)
        }
        if command.run == nil {
            if let first = positionals.first {
                let hint = nearest(first, command.subcommands.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""
                throw .usage(
                    "\(path.joined(separator: " ")): unknown subcommand '\(first)'\(hint)\n\(Help.usageLine(command, path: path))"
                )
            }
            return .help(Help.text(for: command, path: path))
        }
        let required = command.arguments.filter { !$0.optional }.count
        if positionals.count < required {
            let missing = command.arguments[positionals.count]
            throw .usage(
                "\(path.joined(separator: " ")): missing <\(missing.name)>\n\(Help.usageLine(command, path: path))")
        }
        if positionals.count > command.arguments.count, command.arguments.last?.repeating != true {
            throw .usage(
                "\(path.joined(separator: " ")): unexpected argument '\(positionals[command.arguments.count])'\n\(Help.usageLine(command, path: path))"
            )
        }
        return .run(command, Invocation(path: path, flags: flags, values: values, arguments: positionals))
    }

    static func nearest(_ word: String, _ names: [String]) -> String? {
        names.first { $0.hasPrefix(word) || word.hasPrefix($0) } ?? names.first { Self.close(word, $0) }
    }

    /// Within one edit or one transposition.
    static func close(_ a: String, _ b: String) -> Bool {
        let x = Array(a)
        let y = Array(b)
        if abs(x.count - y.count) > 1 { return false }
        var i = 0
        while i < min(x.count, y.count), x[i] == y[i] { i += 1 }
        if x.count == y.count {
            if i + 1 < x.count, x[i] == y[i + 1], x[i + 1] == y[i] {
                return Array(x[(i + 2)...]) == Array(y[(i + 2)...])
            }
            return i >= x.count || Array(x[(i + 1)...]) == Array(y[(i + 1)...])
        }
        let (long, short) = x.count > y.count ? (x, y) : (y, x)
        return Array(long[(i + 1)...]) == Array(short[i...])
    }
}

/// Help text, generated from the command tree so it never disagrees with what the parser accepts.
public enum Help {
    public static func usageLine(_ c: Command, path: [String]) -> String {
        var parts = ["USAGE:", path.joined(separator: " ")]
        if !c.subcommands.isEmpty { parts.append(c.run == nil ? "<subcommand>" : "[<subcommand>]") }
        for o in c.options {
            let shown = o.valueName.map { "--\(o.name) <\($0)>" } ?? "--\(o.name)"
            parts.append(o.repeatable ? "[\(shown) ...]" : "[\(shown)]")
        }
        for a in c.arguments { parts.append((a.optional ? "[<\(a.name)>]" : "<\(a.name)>") + (a.repeating ? "…" : "")) }
        return parts.joined(separator: " ")
    }

    public static func text(for c: Command, path: [String]) -> String {
        var out = "OVERVIEW: \(c.abstract)\n"
        if !c.discussion.isEmpty { out += "\n\(c.discussion)\n" }
        out += "\n\(usageLine(c, path: path))\n"
        if !c.arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            for a in c.arguments { out += "  " + pad("<\(a.name)>") + a.help + "\n" }
        }
        out += "\nOPTIONS:\n"
        for o in c.options {
            let shown = o.valueName.map { "--\(o.name) <\($0)>" } ?? "--\(o.name)"
            out += "  " + pad(shown) + o.help + (o.repeatable ? " (repeatable)" : "") + "\n"
        }
        if path.count == 1 { out += "  " + pad("--version") + "Show the version.\n" }
        out += "  " + pad("-h, --help") + "Show help information.\n"
        if !c.subcommands.isEmpty {
            out += "\nSUBCOMMANDS:\n"
            for s in c.subcommands { out += "  " + pad(s.name) + s.abstract + "\n" }
            out += "\n  See '\(path.joined(separator: " ")) <subcommand> --help' for detailed help.\n"
        }
        return out
    }

    static func pad(_ s: String) -> String {
        s.count >= 26 ? s + "\n" + String(repeating: " ", count: 28) : s + String(repeating: " ", count: 26 - s.count)
    }
}

/// Runs a command tree as a process's main: parses, dispatches, prints errors, and returns the exit status.
public enum Main {
    public static func run(_ root: Command, version: String, arguments: [String]) -> Int32 {
        do {
            switch try Parser.parse(arguments, root: root) {
            case .help(let text):
                Terminal.out(text, terminator: "")
                return ExitCode.success.rawValue
            case .version:
                Terminal.out(version)
                return ExitCode.success.rawValue
            case .run(let command, let invocation):
                return try command.run!(invocation).rawValue
            }
        } catch let failure as CommandFailure {
            Terminal.err("\(root.name): error: \(failure.message)")
            return failure.exitCode.rawValue
        } catch {
            Terminal.err("\(root.name): error: \(error)")
            return ExitCode.failure.rawValue
        }
    }
}

/// Unbuffered-enough output on stdout and stderr.
public enum Terminal {
    /// Prints a Foundation JSON object (keys sorted, pretty, slashes unescaped) on stdout: every `--json` output.
    public static func json(_ object: Any) throws {
        let data = try JSONSerialization.data(
            withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        write(1, String(decoding: data, as: UTF8.self) + "\n")  // JSON escapes control characters itself
    }

    /// Prints an Encodable value as `json(_:)` prints a Foundation object: keys sorted, pretty, slashes unescaped.
    public static func json<T: Encodable>(_ value: T) throws {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        write(1, String(decoding: try e.encode(value), as: UTF8.self) + "\n")
    }

    /// A line on stdout. Control characters in it are shown, not obeyed (`StandardStream.visible`): much of what a
    /// tool prints carries text from outside — a peer's reason, a name on the network, a file's path.
    public static func out(_ s: String, terminator: String = "\n") {
        write(1, StandardStream.visible(s) + terminator)
    }
    public static func err(_ s: String, terminator: String = "\n") {
        write(2, StandardStream.visible(s) + terminator)
    }
    /// A progress line that replaces the one before it on a terminal (a carriage return, then the line).
    public static func progress(_ line: String) {
        write(1, "\r" + StandardStream.visible(line, newlines: true))
    }
    /// Asks a yes/no question on stdout and waits up to `timeoutNs` for a line on stdin; yes only for `y` or `yes`.
    /// No answer in time, or stdin closed, is no.
    public static func ask(_ question: String, timeoutNs: Int64) -> Bool {
        out(question + " [y/N] ", terminator: "")
        let deadline = Syscall.monotonicNowNs() + timeoutNs
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let left = deadline - Syscall.monotonicNowNs()
            guard left > 0,
                let ready = try? Descriptor.poll(
                    0, events: Int16(POLLIN), timeoutMs: Int32(clamping: (left + 999_999) / 1_000_000)), ready != 0
            else {
                out("")
                return false
            }
            let n = withUnsafeMutableBytes(of: &byte) { StandardStream.read(0, $0) }
            if n <= 0 || byte == 10 { break }
            line.append(byte)
        }
        let answer = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        return answer == "y" || answer == "yes"
    }

    private static func write(_ fd: Int32, _ s: String) {
        var s = s
        // A closed or full stream loses the line, never the process.
        s.withUTF8 { _ = StandardStream.write(fd, UnsafeRawBufferPointer($0)) }
    }
}
