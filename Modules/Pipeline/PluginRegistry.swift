import Config
import Synchronization
import Syscall

/// What role a plugin plays in a pipeline.
public enum PluginKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case videoSource = "video-source"
    case audioSource = "audio-source"
    case imuSource = "imu-source"
    case encoder
    case detector
    case sink

    public var description: String { rawValue }

    /// The kinds a manifest's `sources` array may name.
    public static let sources: [PluginKind] = [.videoSource, .audioSource, .imuSource]
}

/// One parameter a plugin accepts, with its type, default and a one-line description.
public struct PluginParameterSpec: Sendable {
    public enum ValueType: Sendable, Equatable, CustomStringConvertible {
        case integer, number, boolean, string
        case numberArray
        /// One of a fixed set of strings.
        case choice([String])

        public var description: String {
            switch self {
            case .integer: "integer"
            case .number: "number"
            case .boolean: "boolean"
            case .string: "string"
            case .numberArray: "array of numbers"
            case .choice(let c): "one of " + c.map { "\"\($0)\"" }.joined(separator: ", ")
            }
        }
    }

    public let name: String
    public let type: ValueType
    /// The default; nil means the parameter is required.
    public let defaultValue: JSONValue?
    public let summary: String
    /// Inclusive lower bound for numbers (each element of a number array); required for every numeric parameter.
    public let minimum: Double?
    /// Inclusive upper bound for numbers (each element of a number array); required for every numeric parameter, so a
    /// value a plugin turns into an integer or multiplies always fits.
    public let maximum: Double?

    public init(
        _ name: String, _ type: ValueType, default defaultValue: JSONValue?, minimum: Double? = nil,
        maximum: Double? = nil,
        _ summary: String
    ) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.minimum = minimum
        self.maximum = maximum
        self.summary = summary
    }

    /// True for integer, number and number-array parameters: the ones that need a range.
    public var isNumeric: Bool { type == .integer || type == .number || type == .numberArray }

    public var isRequired: Bool { defaultValue == nil }

    /// The most elements a number array may hold.
    public static let maxArrayItems = 10_000

    /// Why `value` is not acceptable for this parameter — the wrong type, not one of the choices, or out of range (for
    /// a number array, `item` says which element) — or nil when it is. The one check both a manifest and
    /// `PluginRegistry.make` apply.
    public func problem(with value: JSONValue) -> (item: Int?, reason: String)? {
        switch (type, value) {
        case (.integer, .number(let d, true)), (.number, .number(let d, _)):
            return outOfRange(d).map { (nil, $0) }
        case (.boolean, .bool), (.string, .string): return nil
        case (.choice(let options), .string(let s)):
            return options.contains(s) ? nil : (nil, "'\(s)' is not \(type)")
        case (.numberArray, .array(let items)):
            for (i, item) in items.enumerated() {
                guard case .number(let d, _) = item.value else {
                    return (i, "expected number, found \(Self.describe(item.value))")
                }
                if let why = outOfRange(d) { return (i, why) }
            }
            return items.count > Self.maxArrayItems ? (nil, "\(items.count) items; at most \(Self.maxArrayItems)") : nil
        default:
            return (nil, "expected \(type), found \(Self.describe(value))")
        }
    }

    /// Why `d` is outside the range, or nil (NaN is outside every range).
    public func outOfRange(_ d: Double) -> String? {
        if let min = minimum, !(d >= min) {
            return "\(ParameterValue.format(d)) is below the minimum \(ParameterValue.format(min))"
        }
        if let max = maximum, !(d <= max) {
            return "\(ParameterValue.format(d)) is above the maximum \(ParameterValue.format(max))"
        }
        return nil
    }

    /// A value as an error message names it: its type, and its value when it is short.
    public static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): "string \"\(s)\""
        case .number(let d, let i): "\(i ? "integer" : "number") \(ParameterValue.format(d))"
        case .bool(let b): "boolean \(b)"
        default: value.typeName
        }
    }
}

/// What a plugin is: its name, kind, parameters and a one-line description.
public struct PluginDescriptor: Sendable {
    public let name: String
    public let kind: PluginKind
    public let summary: String
    public let parameters: [PluginParameterSpec]
    /// Rules across parameters (each alone is checked by its spec), run by every manifest check — `manifest check` and
    /// `run` share this one path, so what check calls valid, run accepts. Returns why the values do not go together.
    public let check: @Sendable (PluginParameters) -> String?

    public init(
        name: String, kind: PluginKind, summary: String, parameters: [PluginParameterSpec],
        check: @escaping @Sendable (PluginParameters) -> String? = { _ in nil }
    ) {
        self.name = name
        self.kind = kind
        self.summary = summary
        self.parameters = parameters
        self.check = check
    }
}

/// A plugin's parameters after validation, defaults filled in.
public struct PluginParameters: Sendable {
    public let values: [String: JSONValue]
    public init(_ values: [String: JSONValue]) { self.values = values }

    /// The integer value (validated within its range, so it fits; a value that somehow does not is clamped, never a trap).
    public func integer(_ name: String) -> Int {
        guard case .number(let d, _) = values[name] else { preconditionFailure("parameter \(name) is not a number") }
        return Int(exactly: d.rounded()) ?? (d < 0 ? Int.min : Int.max)
    }
    public func number(_ name: String) -> Double {
        guard case .number(let d, _) = values[name] else { preconditionFailure("parameter \(name) is not a number") }
        return d
    }
    public func boolean(_ name: String) -> Bool {
        guard case .bool(let b) = values[name] else { preconditionFailure("parameter \(name) is not a boolean") }
        return b
    }
    public func string(_ name: String) -> String {
        guard case .string(let s) = values[name] else { preconditionFailure("parameter \(name) is not a string") }
        return s
    }
    public func numbers(_ name: String) -> [Double] {
        guard case .array(let a) = values[name] else { preconditionFailure("parameter \(name) is not an array") }
        return a.compactMap { if case .number(let d, _) = $0.value { d } else { nil } }
    }
}

/// Makes one plugin instance from its validated parameters and the configuration in force.
public struct PluginFactory: Sendable {
    /// Makes an instance. Instances are owned by the one stage thread that drives them, so they need not be Sendable.
    public typealias Make = @Sendable (PluginParameters, Configuration) throws -> AnyObject

    public let descriptor: PluginDescriptor
    public let make: Make

    public init(_ descriptor: PluginDescriptor, make: @escaping Make) {
        self.descriptor = descriptor
        self.make = make
    }
}

/// Named plugin factories by kind.
///
/// Tests build their own registry and pass it in, so they run in parallel without sharing state; ``default`` is the
/// process-wide convenience that a tool fills with the built-in plugins at start (as swift-log's LoggingSystem).
public final class PluginRegistry: Sendable {
    private let factories: Guarded<[PluginKind: [String: PluginFactory]]>

    public init(_ factories: [PluginFactory] = []) throws(RegistryError) {
        self.factories = Guarded([:])
        for f in factories { try register(f) }
    }

    /// The process-wide registry. Empty until a tool registers its built-ins.
    public static let `default`: PluginRegistry = try! PluginRegistry()

    /// Adds a factory; a second plugin of the same kind and name is refused, and so is a numeric parameter without both
    /// a minimum and a maximum (an unbounded number is how `2^31` samples a second reaches arithmetic that traps).
    public func register(_ factory: PluginFactory) throws(RegistryError) {
        let d = factory.descriptor
        for p in d.parameters where p.isNumeric && (p.minimum == nil || p.maximum == nil) {
            throw RegistryError("plugin '\(d.name)': numeric parameter '\(p.name)' needs a minimum and a maximum")
        }
        let added = factories.withLock { table -> Bool in
            if table[d.kind]?[d.name] != nil { return false }
            table[d.kind, default: [:]][d.name] = factory
            return true
        }
        if !added { throw RegistryError("a \(d.kind) plugin named '\(d.name)' is already registered") }
    }

    /// The factory for `name` among `kinds`, if registered.
    public func factory(named name: String, kinds: [PluginKind]) -> PluginFactory? {
        factories.withLock { table in
            for k in kinds { if let f = table[k]?[name] { return f } }
            return nil
        }
    }

    /// Every descriptor of the given kinds, sorted by kind then name.
    public func descriptors(kinds: [PluginKind] = PluginKind.allCases) -> [PluginDescriptor] {
        factories.withLock { table in
            kinds.flatMap { k in (table[k] ?? [:]).values.map(\.descriptor).sorted { $0.name < $1.name } }
        }
    }

    /// Makes the plugin `name` of `kinds` as `T`; throws when it is unknown or not a `T`.
    public func make<T>(
        _ type: T.Type, named name: String, kinds: [PluginKind], parameters: PluginParameters,
        config: Configuration
    ) throws -> T {
        guard let f = factory(named: name, kinds: kinds) else {
            throw RegistryError("no \(kinds.map(\.rawValue).joined(separator: "/")) plugin named '\(name)'")
        }
        // Every value checked against its spec here too, whoever assembled them (a manifest has been checked already;
        // a tool's own options, e.g. selftest's --source synthetic:640x360@1e300, had not, and trapped in the plugin).
        let d = f.descriptor
        for spec in d.parameters {
            guard let v = parameters.values[spec.name] else {
                throw RegistryError("\(name): missing required parameter '\(spec.name)' (\(spec.summary))")
            }
            if let (item, why) = spec.problem(with: v) {
                throw RegistryError("\(name).\(spec.name)\(item.map { "[\($0)]" } ?? ""): \(why)")
            }
        }
        if let why = d.check(parameters) { throw RegistryError("\(name): \(why)") }
        let made = try f.make(parameters, config)
        guard let typed = made as? T else {
            throw RegistryError("plugin '\(name)' made a \(Swift.type(of: made)), not a \(T.self)")
        }
        return typed
    }
}

public struct RegistryError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
