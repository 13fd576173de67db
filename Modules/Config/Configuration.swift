import Foundation

/// A person's change to one parameter, from a manifest's `config` section or from `--set key=value`.
///
/// An override is `assumed` unless it carries a ``MeasurementRecord``; there is no way to make it `measured` without one.
public struct Override: Sendable, Equatable {
    public let key: String
    public let value: ParameterValue
    public let measurement: MeasurementRecord?
    public let note: String?
    /// Where the override came from, for messages: `--set`, `manifest config.capture.clipPostNs`, ….
    public let origin: String

    public init(
        key: String, value: ParameterValue, measurement: MeasurementRecord? = nil, note: String? = nil,
        origin: String
    ) {
        self.key = key
        self.value = value
        self.measurement = measurement
        self.note = note
        self.origin = origin
    }
}

/// One parameter with its value in force and where that value came from.
public struct ResolvedParameter: Sendable {
    public let definition: ParameterDefinition
    public let value: ParameterValue
    public let provenance: Provenance
    public let note: String
    /// `default`, or the origin of the override that set it.
    public let setBy: String

    public var key: String { definition.key }
    public var unit: String { definition.unit }

    /// The value with its unit, e.g. `0.5 s`.
    public var shown: String { unit.isEmpty ? value.description : "\(value) \(unit)" }
}

/// A catalogue parameter's name with the type of its value: `Configuration`'s subscript reads it as that type, so a
/// misspelt key or a wrong type is a compile error, not a trap at run time. Only Config mints keys (`Keys.swift`).
public struct ConfigurationKey<Value>: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    init(_ name: String) { self.name = name }
    public var description: String { name }
}

/// Every parameter in force: the catalogue's defaults, overridden, with derived values computed (never typed in).
public struct Configuration: Sendable {
    public let parameters: [ResolvedParameter]
    private let index: [String: Int]
    private let inputs: Inputs

    /// The catalogue's defaults with nothing overridden.
    public static let defaults: Configuration = try! Configuration(overrides: [])

    /// Resolves the catalogue with `overrides` applied in order (a later override of a key wins).
    /// Throws naming every override that is unknown, of the wrong type, or aimed at a derived parameter.
    public init(overrides: [Override], definitions: [ParameterDefinition] = Catalog.definitions) throws(ConfigError) {
        let byKey = Dictionary(definitions.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        var problems: [ConfigError.Problem] = []
        var latest: [String: Override] = [:]
        for o in overrides {
            guard let def = byKey[o.key] else {
                let hint = Spelling.nearest(to: o.key, among: byKey.keys).map { " (did you mean \($0)?)" } ?? ""
                problems.append(.init(.unknownKey, key: o.key, "\(o.origin): unknown parameter '\(o.key)'\(hint)"))
                continue
            }
            if case .derived(let rule) = def.source {
                problems.append(
                    .init(
                        .derivedNotSettable, key: o.key,
                        "\(o.origin): \(o.key) is derived (\(rule.formula)); set its inputs instead"))
                continue
            }
            var value = o.value
            if value.type != def.type {
                // An integer is an acceptable spelling of a real.
                if def.type == .real, case .integer(let i) = value {
                    value = .real(Double(i))
                } else {
                    problems.append(
                        .init(
                            .wrongType, key: o.key,
                            "\(o.origin): \(o.key) expects \(def.type), found \(o.value.type) '\(o.value)'"))
                    continue
                }
            }
            if let m = o.measurement, let n = value.number, m.value != n {
                problems.append(
                    .init(
                        .invalidMeasurement, key: o.key,
                        "\(o.origin): \(o.key) = \(value) but its measurement record says \(ParameterValue.format(m.value))"
                    ))
                continue
            }
            // Each value is judged against its own range here, before any derived value is computed from it: derived
            // arithmetic runs only on values inside their ranges, so it never overflows.
            if let violation = def.constraints.lazy.compactMap({
                $0.violation(key: o.key, value: value, unit: def.unit)
            }).first {
                problems.append(.init(.constraintViolated, key: o.key, "\(o.origin): \(violation)"))
                continue
            }
            latest[o.key] = Override(
                key: o.key, value: value, measurement: o.measurement, note: o.note, origin: o.origin)
        }
        if !problems.isEmpty { throw ConfigError(problems) }

        var resolved: [ResolvedParameter] = []
        var values: [String: ParameterValue] = [:]
        for def in definitions {
            let r: ResolvedParameter
            switch def.source {
            case .given(let value, let provenance):
                if let o = latest[def.key] {
                    let p: Provenance = o.measurement.map { .measured($0) } ?? .assumed
                    r = ResolvedParameter(
                        definition: def, value: o.value, provenance: p, note: o.note ?? def.note, setBy: o.origin)
                } else {
                    r = ResolvedParameter(
                        definition: def, value: value, provenance: provenance, note: def.note, setBy: "default")
                }
            case .derived(let rule):
                let inputs = Inputs(values: values)
                let value = rule.compute(inputs)
                let shownInputs = rule.inputs.map { key in
                    let p = resolved.first { $0.key == key }
                    return p.map { "\(key) = \($0.shown)" } ?? key
                }
                let unit = def.unit.isEmpty ? "" : " \(def.unit)"
                let arithmetic = "\(shownInputs.joined(separator: ", ")) ⇒ \(value)\(unit)"
                r = ResolvedParameter(
                    definition: def, value: value,
                    provenance: .derived(
                        Derivation(formula: rule.formula, inputs: rule.inputs, arithmetic: arithmetic)),
                    note: def.note, setBy: "derived")
            }
            values[def.key] = r.value
            resolved.append(r)
        }
        self.parameters = resolved
        self.index = Dictionary(uniqueKeysWithValues: resolved.enumerated().map { ($1.key, $0) })
        self.inputs = Inputs(values: values)
    }

    /// A parameter by its catalogue name, as a person types it (`config explain KEY`); nil when there is none. Code
    /// reads values through typed keys instead: `config[.clipPreNs]`.
    public subscript(key: String) -> ResolvedParameter? { index[key].map { parameters[$0] } }

    /// The value of an integer parameter.
    public subscript(_ key: ConfigurationKey<Int64>) -> Int64 { inputs.integer(key.name) }
    /// The value of a real parameter.
    public subscript(_ key: ConfigurationKey<Double>) -> Double { inputs.real(key.name) }
    /// The value of a boolean parameter.
    public subscript(_ key: ConfigurationKey<Bool>) -> Bool { boolean(key.name) }
    /// An integer parameter's value as a Double (for arithmetic with reals).
    public func real(_ key: ConfigurationKey<Int64>) -> Double { Double(inputs.integer(key.name)) }
    /// A parameter with its provenance, by typed key.
    public func parameter<Value>(_ key: ConfigurationKey<Value>) -> ResolvedParameter { self[key.name]! }

    func integer(_ key: String) -> Int64 { inputs.integer(key) }
    func real(_ key: String) -> Double { inputs.real(key) }
    func boolean(_ key: String) -> Bool {
        guard case .boolean(let b) = self[key]?.value else { preconditionFailure("\(key) is not a boolean parameter") }
        return b
    }

    /// Read access to already-resolved values while derived ones are computed.
    public struct Inputs: Sendable {
        let values: [String: ParameterValue]
        public func real(_ key: String) -> Double {
            guard let n = values[key]?.number else { preconditionFailure("\(key) is not a numeric parameter") }
            return n
        }
        public func integer(_ key: String) -> Int64 {
            switch values[key] {
            case .integer(let i): return i
            case .real(let d): return Int64(d.rounded())
            default: preconditionFailure("\(key) is not a numeric parameter")
            }
        }
    }
}

// MARK: - Parsing overrides

extension Configuration {
    /// Parses `key=value` from the command line into an override typed by the catalogue.
    /// `measured` is an optional `YYYY-MM-DD INSTRUMENT` record for the same key.
    public static func override(
        assignment: String, measured: String? = nil, origin: String = "--set",
        definitions: [ParameterDefinition] = Catalog.definitions
    ) throws(ConfigError) -> Override {
        guard let eq = assignment.firstIndex(of: "="), eq != assignment.startIndex else {
            throw ConfigError([
                .init(.malformedOverride, key: nil, "\(origin) '\(assignment)': expected key=value")
            ])
        }
        let key = String(assignment[..<eq])
        let text = String(assignment[assignment.index(after: eq)...])
        guard let def = definitions.first(where: { $0.key == key }) else {
            let hint = Spelling.nearest(to: key, among: definitions.map(\.key)).map { " (did you mean \($0)?)" } ?? ""
            throw ConfigError([.init(.unknownKey, key: key, "\(origin): unknown parameter '\(key)'\(hint)")])
        }
        guard let value = def.type.parse(text) else {
            throw ConfigError([
                .init(.wrongType, key: key, "\(origin) \(key)='\(text)': expects \(def.type)")
            ])
        }
        var record: MeasurementRecord?
        if let measured {
            let parts = measured.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, let n = value.number else {
                throw ConfigError([
                    .init(
                        .invalidMeasurement, key: key,
                        "--measured for \(key): expected 'YYYY-MM-DD INSTRUMENT' on a numeric parameter, found '\(measured)'"
                    )
                ])
            }
            record = try MeasurementRecord(value: n, date: parts[0], instrument: parts[1])
        }
        return Override(key: key, value: value, measurement: record, origin: origin)
    }
}
