import CXXHash

/// XXH3-64 (libxxhash): the checksum of every fragment, index record and transfer chunk.
///
/// The only Swift code that imports `CXXHash`; everything else uses this.
public enum XXH3 {
    /// The XXH3-64 of `bytes`.
    @inlinable
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        ppc_xxh3_64(bytes.baseAddress, bytes.count)
    }

    /// The XXH3-64 of a collection of bytes.
    public static func hash<C: ContiguousBytes>(_ bytes: C) -> UInt64 {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// A checksum as sixteen lowercase hex digits, as ppc writes them in JSON.
    public static func hex(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// A streaming XXH3-64 over data that arrives in pieces; owns its libxxhash state.
    public final class Hasher {
        private let state: OpaquePointer

        public init() {
            guard let s = XXH3_createState() else { fatalError("XXH3_createState: out of memory") }
            state = s
            XXH3_64bits_reset(state)
        }

        deinit { XXH3_freeState(state) }

        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            ppc_xxh3_64_update(state, bytes.baseAddress, bytes.count)
        }

        public func reset() { XXH3_64bits_reset(state) }

        public var digest: UInt64 { XXH3_64bits_digest(state) }
    }
}

/// Types whose bytes can be read in place (Array<UInt8>, Data, …).
public protocol ContiguousBytes {
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}
extension Array: ContiguousBytes where Element == UInt8 {}
extension ArraySlice: ContiguousBytes where Element == UInt8 {}
