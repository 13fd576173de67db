/// A JSON value that remembers where it stood in its text, so a manifest error can name the line and column.
///
/// Foundation's JSONSerialization reports only a character offset and blurs booleans into numbers; a manifest checker
/// needs both exact types and positions, so manifests are read with this small parser (RFC 8259; objects keep their
/// key order; duplicate keys are an error).
public indirect enum JSONValue: Sendable, Equatable {
    case object([(key: String, value: JSONNode)])
    case array([JSONNode])
    case string(String)
    /// A number with its source spelling; `isInteger` when written without fraction or exponent.
    case number(Double, isInteger: Bool)
    case bool(Bool)
    case null

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value.value == $1.value.value }
        case (.array(let x), .array(let y)): return x.map(\.value) == y.map(\.value)
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x, let i), .number(let y, let j)): return x == y && i == j
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        default: return false
        }
    }

    /// The JSON type's name, for "expected X, found Y" messages.
    public var typeName: String {
        switch self {
        case .object: "object"
        case .array: "array"
        case .string: "string"
        case .number(_, let isInteger): isInteger ? "integer" : "number"
        case .bool: "boolean"
        case .null: "null"
        }
    }
}

/// A JSON value and its 1-based line and column.
public struct JSONNode: Sendable, Equatable {
    public let value: JSONValue
    public let line: Int
    public let column: Int

    /// A value with a position; 0 means it did not come from a text (a default, say).
    public init(_ value: JSONValue, line: Int = 0, column: Int = 0) {
        self.value = value
        self.line = line
        self.column = column
    }
}

/// Malformed JSON, with where it went wrong.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    public let message: String
    public var description: String { "line \(line), column \(column): \(message)" }
}

public enum JSONReader {
    /// Parses a whole document; trailing content other than whitespace is an error.
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONNode {
        var p = Cursor(bytes: Array(text.utf8))
        p.skipSpace()
        let node = try p.value(depth: 0)
        p.skipSpace()
        if p.i < p.bytes.count { throw p.error("unexpected '\(p.peekChar)' after the top-level value") }
        return node
    }

    struct Cursor {
        let bytes: [UInt8]
        var i = 0
        var line = 1
        var lineStart = 0

        var column: Int { i - lineStart + 1 }
        var peekChar: String {
            i < bytes.count ? String(decoding: [bytes[i]], as: UTF8.self) : "end of input"
        }

        func error(_ m: String) -> JSONSyntaxError { JSONSyntaxError(line: line, column: column, message: m) }

        mutating func skipSpace() {
            while i < bytes.count {
                switch bytes[i] {
                case 0x20, 0x09, 0x0D: i += 1
                case 0x0A:
                    i += 1
                    line += 1
                    lineStart = i
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONNode {
            guard depth < 64 else { throw error("nesting deeper than 64 levels") }
            guard i < bytes.count else { throw error("unexpected end of input, expected a value") }
            let (l, c) = (line, column)
            switch bytes[i] {
            case UInt8(ascii: "{"): return JSONNode(try object(depth: depth), line: l, column: c)
            case UInt8(ascii: "["): return JSONNode(try array(depth: depth), line: l, column: c)
            case UInt8(ascii: "\""): return JSONNode(.string(try string()), line: l, column: c)
            case UInt8(ascii: "t"):
                try literal("true")
                return JSONNode(.bool(true), line: l, column: c)
            case UInt8(ascii: "f"):
                try literal("false")
                return JSONNode(.bool(false), line: l, column: c)
            case UInt8(ascii: "n"):
                try literal("null")
                return JSONNode(.null, line: l, column: c)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return JSONNode(try number(), line: l, column: c)
            default: throw error("unexpected '\(peekChar)', expected a value")
            }
        }

        mutating func literal(_ word: String) throws(JSONSyntaxError) {
            let w = Array(word.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else {
                throw error("unexpected '\(peekChar)', expected a value")
            }
            i += w.count
        }

        mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            i += 1
            var members: [(key: String, value: JSONNode)] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                i += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
                    throw error("unexpected '\(peekChar)', expected a quoted key")
                }
                let keyError = error("")
                let key = try string()
                if members.contains(where: { $0.key == key }) {
                    throw JSONSyntaxError(
                        line: keyError.line, column: keyError.column, message: "duplicate key '\(key)'")
                }
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else {
                    throw error("unexpected '\(peekChar)', expected ':' after key '\(key)'")
                }
                i += 1
                skipSpace()
                members.append((key, try value(depth: depth + 1)))
                skipSpace()
                guard i < bytes.count else { throw error("unexpected end of input, expected ',' or '}'") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                if bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    return .object(members)
                }
                throw error("unexpected '\(peekChar)', expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            i += 1
            var items: [JSONNode] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard i < bytes.count else { throw error("unexpected end of input, expected ',' or ']'") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                if bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    return .array(items)
                }
                throw error("unexpected '\(peekChar)', expected ',' or ']'")
            }
        }

        mutating func string() throws(JSONSyntaxError) -> String {
            i += 1
            var out: [UInt8] = []
            while i < bytes.count {
                let b = bytes[i]
                switch b {
                case UInt8(ascii: "\""):
                    i += 1
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    i += 1
                    guard i < bytes.count else { break }
                    let e = bytes[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar), i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"),
                            bytes[i + 1] == UInt8(ascii: "u")
                        {
                            i += 2
                            let low = try hex4()
                            // A high surrogate pairs only with a low one (found by fuzzing: `\uDBBB\uDBBB` overflowed).
                            guard (0xDC00..<0xE000).contains(low) else {
                                throw error("invalid \\u escape: a high surrogate not followed by a low one")
                            }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                        out.append(contentsOf: Array(String(Character(u)).utf8))
                    default:
                        i -= 1
                        throw error("invalid escape '\\\(peekChar)' in string")
                    }
                case 0x00..<0x20:
                    throw error("control character in string (a string cannot span lines)")
                default:
                    out.append(b)
                    i += 1
                }
            }
            throw error("unterminated string")
        }

        mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
            guard i + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[i..<(i + 4)], as: UTF8.self), radix: 16)
            else { throw error("invalid \\u escape") }
            i += 4
            return v
        }

        mutating func number() throws(JSONSyntaxError) -> JSONValue {
            let start = i
            var isInteger = true
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            func digits(_ c: inout Cursor) -> Int {
                let s = c.i
                while c.i < c.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c.bytes[c.i]) { c.i += 1 }
                return c.i - s
            }
            let intStart = i
            guard digits(&self) > 0 else { throw error("invalid number") }
            if bytes[intStart] == UInt8(ascii: "0"), i - intStart > 1 {
                throw error("invalid number: leading zero")
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                isInteger = false
                i += 1
                guard digits(&self) > 0 else { throw error("invalid number: digits expected after '.'") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                isInteger = false
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { throw error("invalid number: digits expected in exponent") }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            guard let d = Double(text), d.isFinite else { throw error("number '\(text)' out of range") }
            return .number(d, isInteger: isInteger)
        }
    }
}

extension JSONNode {
    /// Members of an object, or nil.
    public var members: [(key: String, value: JSONNode)]? {
        if case .object(let m) = value { return m }
        return nil
    }
    /// The member named `key` of an object.
    public subscript(key: String) -> JSONNode? { members?.first { $0.key == key }?.value }
}
