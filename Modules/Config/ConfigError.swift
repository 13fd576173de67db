/// A configuration was refused. Carries every problem found, each naming the key and value that was wrong.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One thing wrong with one key.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        public let code: Code
        /// The parameter key at fault, when there is one.
        public let key: String?
        /// A sentence a person can act on: names the key, the value and what was expected.
        public let message: String

        public init(_ code: Code, key: String?, _ message: String) {
            self.code = code
            self.key = key
            self.message = message
        }

        public var description: String { message }
    }

    /// Extensible error code (a struct, so new codes do not break callers that switch on a few).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let unknownKey = Code("unknown-key")
        public static let wrongType = Code("wrong-type")
        public static let derivedNotSettable = Code("derived-not-settable")
        public static let invalidValue = Code("invalid-value")
        public static let invalidMeasurement = Code("invalid-measurement")
        public static let constraintViolated = Code("constraint-violated")
        public static let malformedOverride = Code("malformed-override")
    }

    public let problems: [Problem]

    public init(_ problems: [Problem]) { self.problems = problems }

    public var description: String { problems.map(\.message).joined(separator: "\n") }
}
