#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process exit status convention shared by every ppc tool (sysexits.h): 0 ok, 64 usage, 65 bad data,
/// 1 runtime failure.
public struct ExitCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    public static let success = ExitCode(0)
    public static let failure = ExitCode(1)
    /// EX_USAGE: the command was used wrongly (unknown option, missing argument).
    public static let usage = ExitCode(64)
    /// EX_DATAERR: the input data was bad (manifest, media file, wire message, disk state).
    public static let dataError = ExitCode(65)
    /// The input is not damaged, only interrupted: what a crash leaves (a torn tail, a fragment in flight), which the next
    /// run repairs (sysexits' EX_TEMPFAIL). 65 is kept for real damage.
    public static let recoverable = ExitCode(75)

    public var description: String { String(rawValue) }
}

/// A command failed; `message` is printed to stderr and the process exits with `exitCode`.
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    public let exitCode: ExitCode
    public let message: String
    public init(_ exitCode: ExitCode, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }
    public var description: String { message }

    public static func usage(_ message: String) -> CommandFailure { .init(.usage, message) }
    public static func dataError(_ message: String) -> CommandFailure { .init(.dataError, message) }
    public static func failure(_ message: String) -> CommandFailure { .init(.failure, message) }
}

/// An option: `--name` (a flag) or `--name VALUE` / `--name=VALUE`, optionally repeatable.
public struct Option: Sendable {
    public let name: String
    public let valueName: String?
    public let repeatable: Bool
    public let help: String

    /// A boolean flag such as `--json`.
    /// `--json`: machine-readable output (printed with ``Terminal/json(_:)``).
    public static let json = Option.flag("json", help: "Print machine-readable JSON.")

    public static func flag(_ name: String, help: String) -> Option {
        Option(name: name, valueName: nil, repeatable: false, help: help)
    }
    /// An option that takes a value, such as `--manifest FILE`.
    public static func value(_ name: String, _ valueName: String, repeatable: Bool = false, help: String) -> Option {
        Option(name: name, valueName: valueName, repeatable: repeatable, help: help)
    }
}

/// A positional argument.
public struct Argument: Sendable {
    public let name: String
    public let help: String
    public let optional: Bool
    /// The last argument may take any number of values (none, when it is also optional).
    public let repeating: Bool
    public init(_ name: String, optional: Bool = false, repeating: Bool = false, help: String) {
        self.name = name
        self.optional = optional
        self.repeating = repeating
        self.help = help
    }
}

/// A node of the command tree: either it runs, or it has subcommands (or both, when it runs with no subcommand named).
public struct Command: Sendable {
    public typealias Run = @Sendable (Invocation) throws -> ExitCode

    public let name: String
    public let abstract: String
    public let discussion: String
    public let options: [Option]
    public let arguments: [Argument]
    public let subcommands: [Command]
    public let run: Run?

    public init(
        _ name: String, abstract: String, discussion: String = "", options: [Option] = [],
        arguments: [Argument] = [], subcommands: [Command] = [], run: Run? = nil
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.run = run
    }
}

/// What the parser found for one command: its path, its options and its positional arguments.
public struct Invocation: Sendable {
    /// The command path, e.g. `["ppc-tool", "config", "show"]`.
    public let path: [String]
    let flags: Set<String>
    let values: [String: [String]]
    public let arguments: [String]

    public func flag(_ name: String) -> Bool { flags.contains(name) }
    /// The last value given for `--name`, if any.
    public func value(_ name: String) -> String? { values[name]?.last }
    /// Every value given for a repeatable `--name`, in order.
    public func values(_ name: String) -> [String] { values[name] ?? [] }
    /// The positional argument at `index`, if given.
    public func argument(_ index: Int) -> String? { index < arguments.count ? arguments[index] : nil }

    /// `--name` parsed as `T`, or a usage error naming the option and the value.
    public func parsed<T: LosslessStringConvertible>(_ name: String, as: T.Type = T.self) throws(CommandFailure) -> T? {
        guard let s = value(name) else { return nil }
        guard let v = T(s) else { throw CommandFailure.usage("--\(name) '\(s)': expected \(T.self)") }
        // "nan" and "inf" parse as Double; no option means them
        if let f = v as? any BinaryFloatingPoint, !f.isFinite {
            throw CommandFailure.usage("--\(name) '\(s)': expected a finite number")
        }
        return v
    }

    /// `--name` parsed as `T` and held to `range`: anything outside it is a usage error naming the option, the value and
    /// the range (a careless `--seconds 1e12` is refused, not tried).
    public func parsed<T: LosslessStringConvertible & Comparable>(_ name: String, in range: ClosedRange<T>)
        throws(CommandFailure) -> T?
    {
        guard let v = try parsed(name, as: T.self) else { return nil }
        guard range.contains(v) else {
            throw CommandFailure.usage(
                "--\(name) '\(value(name) ?? "")': expected \(range.lowerBound) to \(range.upperBound)")
        }
        return v
    }
}
