import Foundation

/// JSON text for a response built as `[String: Any]` trees (the studio's API), through Foundation's `JSONEncoder`.
/// `JSONSerialization` with sorted keys took 1.7 s for the 10 000-clip list (`ppc-tool bench studio`; 2.0 s against
/// 0.23 s this way for the same bytes, measured 2026-12-02): the tree is first turned into `JSONValue`, then encoded.
///
/// Numbers keep their kind: Swift integers and `Bool` as they are; an `NSNumber` (what `JSONSerialization` parses) by
/// its `objCType` — a boolean, a floating-point value or an integer. A value of any other type is a programming error,
/// reported as such (`JSONBodyError`), never written as something else.
public enum JSONBody {
    public static func data(_ object: Any) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(try JSONValue(object))
    }

    /// JSON text for a typed answer, keys sorted, slashes as they are (the same bytes a tree of the same values gives).
    public static func data<T: Encodable>(encoding value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }
}

/// A value `JSONBody` cannot write, named by its type and where it sits.
public struct JSONBodyError: Error, CustomStringConvertible {
    public let description: String
}

enum JSONValue: Encodable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// `path` is only built when a value has no JSON form (it names where that value sits).
    init(_ v: Any, at path: @autoclosure () -> String = "$") throws {
        switch v {
        case let s as String: self = .string(s)
        case let o as [String: Any]:
            var out: [String: JSONValue] = [:]
            out.reserveCapacity(o.count)
            for (k, x) in o { out[k] = try JSONValue(x, at: path() + "." + k) }
            self = .object(out)
        case let a as [Any]:
            self = .array(try a.enumerated().map { try JSONValue($0.element, at: "\(path())[\($0.offset)]") })
        case is NSNull: self = .null
        case let n as NSNumber where type(of: v) is NSNumber.Type:
            // Parsed JSON: its numbers come boxed; the box says which kind.
            switch String(cString: n.objCType) {
            case "c", "B": self = .bool(n.boolValue)
            case "f", "d": self = .double(n.doubleValue)
            case "Q", "L", "I", "S", "C": self = .uint(n.uint64Value)
            default: self = .int(n.int64Value)
            }
        case let b as Bool: self = .bool(b)
        case let i as Int: self = .int(Int64(i))
        case let i as Int64: self = .int(i)
        case let i as Int32: self = .int(Int64(i))
        case let u as UInt64: self = .uint(u)
        case let u as UInt32: self = .uint(UInt64(u))
        case let u as UInt: self = .uint(UInt64(u))
        case let d as Double: self = .double(d)
        case let f as Float: self = .double(Double(f))
        default:
            // An optional that was nil, boxed as Any.
            let m = Mirror(reflecting: v)
            if m.displayStyle == .optional {
                guard let wrapped = m.children.first?.value else {
                    self = .null
                    return
                }
                self = try JSONValue(wrapped, at: path())
                return
            }
            throw JSONBodyError(description: "\(path()): a \(type(of: v)) has no JSON form")
        }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .uint(let u): try c.encode(u)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}
