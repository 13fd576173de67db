import Foundation

/// A parameter's value. Integers are 64-bit (nanoseconds, bytes, counts); reals are for seconds and metres.
public enum ParameterValue: Sendable, Hashable, CustomStringConvertible {
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case text(String)

    public var type: ParameterType {
        switch self {
        case .integer: .integer
        case .real: .real
        case .boolean: .boolean
        case .text: .text
        }
    }

    /// The value as a Double, for arithmetic; nil for booleans and text.
    public var number: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .real(let d): d
        case .boolean, .text: nil
        }
    }

    public var description: String {
        switch self {
        case .integer(let i): String(i)
        case .real(let d): ParameterValue.format(d)
        case .boolean(let b): String(b)
        case .text(let s): s
        }
    }

    /// A readable decimal: integers exactly (`10`, `62500000`), others to six significant digits (`0.5`, `209.656`).
    /// JSON output carries the exact value; this is for people.
    public static func format(_ d: Double) -> String {
        if d.isFinite, d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return String(format: "%.6g", d)
    }
}

/// The type a parameter's value must have.
public enum ParameterType: String, Sendable, CustomStringConvertible {
    case integer, real, boolean, text
    public var description: String { rawValue }

    /// Parses a command-line spelling (`50_000_000`, `0.5`, `true`) into a value of this type.
    public func parse(_ s: String) -> ParameterValue? {
        let digits = s.replacingOccurrences(of: "_", with: "")
        switch self {
        case .integer: return Int64(digits).map(ParameterValue.integer)
        case .real: return Double(digits).flatMap { $0.isFinite ? ParameterValue.real($0) : nil }
        case .boolean:
            switch s.lowercased() {
            case "true": return .boolean(true)
            case "false": return .boolean(false)
            default: return nil
            }
        case .text: return .text(s)
        }
    }
}

/// A check on a single value, stated so its message can name what was expected.
public enum ValueConstraint: Sendable {
    /// Greater than zero.
    case positive
    /// Zero or more.
    case nonNegative
    /// Exactly this value: a hard limit from seed 000 (⛔).
    case hardLimit(ParameterValue, reason: String)
    /// Within a closed range.
    case range(Double, Double)

    func violation(key: String, value: ParameterValue, unit: String) -> String? {
        let shown = unit.isEmpty ? value.description : "\(value) \(unit)"
        switch self {
        case .positive:
            if let n = value.number, n > 0 { return nil }
            return "\(key) = \(shown): must be greater than 0"
        case .nonNegative:
            if let n = value.number, n >= 0 { return nil }
            return "\(key) = \(shown): must be 0 or more"
        case .hardLimit(let required, let reason):
            if value == required { return nil }
            return "\(key) = \(shown): hard limit is \(required) (\(reason))"
        case .range(let lo, let hi):
            if let n = value.number, n >= lo, n <= hi { return nil }
            return "\(key) = \(shown): must be between \(ParameterValue.format(lo)) and \(ParameterValue.format(hi))"
        }
    }
}

/// How a derived parameter is computed from others.
public struct DerivationRule: Sendable {
    public let formula: String
    public let inputs: [String]
    let compute: @Sendable (Configuration.Inputs) -> ParameterValue

    public init(
        _ formula: String, inputs: [String], compute: @escaping @Sendable (Configuration.Inputs) -> ParameterValue
    ) {
        self.formula = formula
        self.inputs = inputs
        self.compute = compute
    }
}

/// One parameter ppc is built with: key, type, unit, default value and its provenance, and a note.
public struct ParameterDefinition: Sendable {
    public enum Source: Sendable {
        /// A value set by default, with its provenance (never `.derived`).
        case given(ParameterValue, Provenance)
        /// A value computed from other parameters; cannot be overridden.
        case derived(DerivationRule)
    }

    public let key: String
    public let type: ParameterType
    public let unit: String
    public let source: Source
    public let note: String
    public let constraints: [ValueConstraint]

    public init(
        _ key: String, _ type: ParameterType, unit: String, _ source: Source, note: String,
        constraints: [ValueConstraint] = []
    ) {
        self.key = key
        self.type = type
        self.unit = unit
        self.source = source
        self.note = note
        self.constraints = constraints
    }

    public var isDerived: Bool {
        if case .derived = source { return true }
        return false
    }
}
