import Foundation

extension ResolvedParameter {
    /// The JSON object `config show --json` prints: `key`, `value`, `unit`, `provenance`, `note`, `setBy`, and
    /// `derivation` (derived) or `measurement` (measured) or `vendorSource` (vendor).
    public var jsonObject: [String: Any] {
        var o: [String: Any] = [
            "key": key,
            "value": value.jsonValue,
            "unit": unit,
            "provenance": provenance.mark.rawValue,
            "note": note,
            "setBy": setBy,
        ]
        switch provenance {
        case .measured(let m):
            o["measurement"] = ["value": m.value, "date": m.date, "instrument": m.instrument]
        case .derived(let d):
            o["derivation"] = ["formula": d.formula, "inputs": d.inputs, "arithmetic": d.arithmetic]
        case .vendor(let source):
            o["vendorSource"] = source
        case .assumed:
            break
        }
        return o
    }

    /// Several lines a person reads: value, mark, where it came from, why.
    public var explanation: String {
        var lines = ["\(key) = \(shown)  [\(provenance.mark.rawValue)]"]
        switch provenance {
        case .measured(let m):
            lines.append("  measured \(m.date) with \(m.instrument): \(ParameterValue.format(m.value))")
        case .derived(let d):
            lines.append("  derived: \(d.formula)")
            lines.append("           \(d.arithmetic)")
        case .vendor(let source):
            lines.append("  vendor-documented: \(source)")
        case .assumed:
            lines.append("  assumed: a defensible starting value nobody has verified")
        }
        lines.append("  set by: \(setBy)")
        if case .given(let v, _) = definition.source, v != value { lines.append("  default: \(v)") }
        lines.append("  note: \(note)")
        return lines.joined(separator: "\n")
    }
}

extension ParameterValue {
    /// The value as a JSON-serialisable Foundation object.
    public var jsonValue: Any {
        switch self {
        case .integer(let i): return NSNumber(value: i)
        case .real(let d): return NSNumber(value: d)
        case .boolean(let b): return b
        case .text(let s): return s
        }
    }
}
