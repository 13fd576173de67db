/// An optional that is written as JSON `null` when it has no value, where a synthesised `Encodable` would leave the key
/// out: the studio's API and a session's report promise every documented field, with `null` for "not known".
///
/// Read back, a missing key and `null` are both `nil` (`KeyedDecodingContainer.decode(_:forKey:)` below).
@propertyWrapper
public struct Nullable<Value> {
    public var wrappedValue: Value?
    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }
}

extension Nullable: Sendable where Value: Sendable {}
extension Nullable: Equatable where Value: Equatable {}

extension Nullable: Encodable where Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

extension Nullable: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }
}

extension KeyedDecodingContainer {
    /// A `Nullable` field whose key is missing reads as `nil`, as `null` does.
    public func decode<V: Decodable>(_ type: Nullable<V>.Type, forKey key: Key) throws -> Nullable<V> {
        try decodeIfPresent(type, forKey: key) ?? Nullable(wrappedValue: nil)
    }
}
