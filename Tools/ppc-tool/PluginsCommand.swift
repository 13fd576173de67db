import CLI
import Foundation
import Pipeline

/// `ppc-tool plugins`: every registered plugin with its kind, parameters, defaults and description.
enum PluginsCommand {
    static let command = Command(
        "plugins", abstract: "List every plugin with its kind, parameters and defaults.", options: [jsonFlag], run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let all = PluginRegistry.default.descriptors()
        if inv.flag("json") {
            try printJSON(
                all.map { d in
                    [
                        "name": d.name, "kind": d.kind.rawValue, "summary": d.summary,
                        "parameters": d.parameters.map { p in
                            [
                                "name": p.name, "type": p.type.description, "required": p.isRequired,
                                "default": p.defaultValue.map(foundationValue) ?? NSNull(), "summary": p.summary,
                            ] as [String: Any]
                        },
                    ] as [String: Any]
                })
            return .success
        }
        for d in all {
            Terminal.out("\(d.name)  [\(d.kind)]  \(d.summary)")
            for p in d.parameters {
                let def = p.defaultValue.map { "default \(render($0))" } ?? "required"
                Terminal.out("    \(p.name): \(p.type) (\(def)) — \(p.summary)")
            }
        }
        return .success
    }

    static func foundationValue(_ v: JSONValue) -> Any {
        switch v {
        case .number(let d, let isInteger): return isInteger ? NSNumber(value: Int64(d)) : NSNumber(value: d)
        case .string(let s): return s
        case .bool(let b): return b
        case .array(let a): return a.map { foundationValue($0.value) }
        case .object(let m):
            return Dictionary(uniqueKeysWithValues: m.map { ($0.key, foundationValue($0.value.value)) })
        case .null: return NSNull()
        }
    }

    static func render(_ v: JSONValue) -> String {
        switch v {
        case .number(let d, _): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .string(let s): return "\"\(s)\""
        case .bool(let b): return String(b)
        case .array(let a): return "[" + a.map { render($0.value) }.joined(separator: ", ") + "]"
        default: return "\(v)"
        }
    }
}
