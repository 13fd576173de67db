import Foundation

/// Why JSON from outside was not parsed: too deeply nested, or not JSON at all.
public struct JSONInputError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The byte at which the nesting passed the limit; nil when Foundation refused the text itself.
    public let offset: Int?
    public init(_ description: String, offset: Int? = nil) {
        self.description = description
        self.offset = offset
    }
}

/// JSON from outside this process — a request body, a file a device sent or a person edited — parsed only after its
/// nesting is bounded.
///
/// Foundation's parsers recurse once per level of nesting. On a thread with a small stack (civetweb's workers have
/// about 100 KiB) 300 levels of `[` overflowed it: one 312-byte request crashed ppc-host, and one meta.json in the
/// library crashed it at every start. So every parse of outside JSON goes through here (`scripts/check-architecture`
/// refuses `JSONSerialization.jsonObject` and `JSONDecoder` anywhere else): the nesting is counted first, in one pass
/// that allocates nothing, and text deeper than `maxDepth` is refused, naming the byte, before Foundation sees it.
///
/// 32 levels is six times the deepest JSON ppc writes (a drawing's points: five). JSONDecoder, the hungrier of
/// Foundation's two parsers, took about 1.3 KiB of stack a level into a recursive Codable type (measured 2026-12-03,
/// this VM: 32 levels parsed on a 64 KiB thread, 40 did not; 64 parsed on 100 KiB, 100 did not), so a parse at the
/// bound fits a civetweb worker's stack with half of it to spare; the studio's handlers run on 1 MiB threads anyway
/// (`JSONInputTests.theDeepestAllowedTextParsesOnASmallStack` parses it on a 64 KiB thread).
public enum JSONInput {
    /// The deepest nesting of arrays and objects taken (assumed: far past any file or body ppc writes).
    public static let maxDepth = 32

    /// Where `bytes` nests deeper than `maxDepth`, or nil. Brackets inside strings (with their escapes) do not count;
    /// the text is not otherwise checked.
    public static func nestingProblem(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = maxDepth) -> JSONInputError? {
        var depth = 0
        var inString = false
        var escaped = false
        for (i, b) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if b == UInt8(ascii: "\\") {
                    escaped = true
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maxDepth {
                    return JSONInputError("nested deeper than \(maxDepth) levels (at byte \(i))", offset: i)
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return nil
    }

    /// `data` parsed by Foundation (`JSONSerialization`, fragments allowed), its nesting bounded first.
    public static func value(_ data: Data, maxDepth: Int = maxDepth) throws(JSONInputError) -> Any {
        if let problem = data.withUnsafeBytes({ nestingProblem($0, maxDepth: maxDepth) }) { throw problem }
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw JSONInputError("not JSON: \(Self.reason(error))")
        }
    }

    /// `data` as a JSON object, its nesting bounded first; anything else (an array, a number, not JSON) is refused.
    public static func object(_ data: Data, maxDepth: Int = maxDepth) throws(JSONInputError) -> [String: Any] {
        guard let o = try value(data, maxDepth: maxDepth) as? [String: Any] else {
            throw JSONInputError("not a JSON object")
        }
        return o
    }

    /// `data` decoded as `T` by `JSONDecoder`, its nesting bounded first. A decoding error passes through as
    /// `DecodingError`, so callers can name the field.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, maxDepth: Int = maxDepth) throws -> T {
        if let problem = data.withUnsafeBytes({ nestingProblem($0, maxDepth: maxDepth) }) { throw problem }
        return try JSONDecoder().decode(type, from: data)
    }

    /// Foundation's reason without its domain and code noise.
    static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        return (ns.userInfo[NSDebugDescriptionErrorKey] as? String) ?? ns.localizedDescription
    }
}
