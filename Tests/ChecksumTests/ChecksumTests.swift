import Checksum
import Testing

/// XXH3-64 through libxxhash: the values xxHash's own reference gives, whole or streamed.
@Suite("Checksum: XXH3-64 as the reference computes it")
struct ChecksumTests {
    /// XXH3_64bits with seed 0 (xxHash's reference implementation: `xxhsum -H3`).
    @Test func knownValues() {
        #expect(XXH3.hash([UInt8]()) == 0x2D06_8005_38D3_94C2)
        #expect(XXH3.hex(XXH3.hash([UInt8]())) == "2d06800538d394c2")
        #expect(XXH3.hash(Array("a".utf8)) != XXH3.hash(Array("b".utf8)))
    }

    @Test func streamingInPiecesGivesTheWholeHash() {
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = XXH3.hash(bytes)
        let h = XXH3.Hasher()
        for cut in stride(from: 0, to: bytes.count, by: 7_777) {
            bytes[cut..<min(cut + 7_777, bytes.count)].withUnsafeBytes { h.update($0) }
        }
        #expect(h.digest == whole)
        h.reset()
        #expect(h.digest == XXH3.hash([UInt8]()))
    }

    @Test func hexIsSixteenDigits() {
        #expect(XXH3.hex(1) == "0000000000000001")
        #expect(XXH3.hex(.max) == "ffffffffffffffff")
    }
}
