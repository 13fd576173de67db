import Compression
import Testing

/// zstd with reused contexts: what goes in comes out, and damage is an error, never wrong bytes.
@Suite("Compression: zstd round trips, reused contexts, damage refused")
struct CompressionTests {
    func frame(_ n: Int, seed: UInt8) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: ($0 / 64) &+ Int(seed)) } }

    @Test func whatIsCompressedComesBackWholeThroughOneReusedContextEach() throws {
        let c = ZstdCompressor(level: 1)
        let d = ZstdDecompressor()
        for seed in 0..<5 {
            let plain = frame(460_800, seed: UInt8(seed))  // 640x480 NV12
            var packed = [UInt8](repeating: 0, count: ZstdCompressor.bound(plain.count))
            let n = try plain.withUnsafeBytes { p in try packed.withUnsafeMutableBytes { try c.compress(p, into: $0) } }
            #expect(n < plain.count / 10, "a smooth frame compresses")
            var back = [UInt8](repeating: 0, count: plain.count)
            let m = try packed[..<n].withUnsafeBytes { p in
                try back.withUnsafeMutableBytes { try d.decompress(p, into: $0) }
            }
            #expect(m == plain.count && back == plain)
        }
    }

    @Test func damageOrTooSmallARoomIsAnErrorNamingZstd() throws {
        let c = ZstdCompressor()
        let d = ZstdDecompressor()
        let plain = frame(10_000, seed: 3)
        var packed = [UInt8](repeating: 0, count: ZstdCompressor.bound(plain.count))
        let n = try plain.withUnsafeBytes { p in try packed.withUnsafeMutableBytes { try c.compress(p, into: $0) } }
        var back = [UInt8](repeating: 0, count: plain.count)
        var damaged = Array(packed[..<n])
        damaged[0] ^= 0xFF  // the frame's magic number
        #expect {
            try damaged.withUnsafeBytes { p in try back.withUnsafeMutableBytes { try d.decompress(p, into: $0) } }
        } throws: { "\($0)".hasPrefix("zstd: ") }
        var small = [UInt8](repeating: 0, count: 100)
        #expect(throws: ZstdError.self) {
            try packed[..<n].withUnsafeBytes { p in try small.withUnsafeMutableBytes { try d.decompress(p, into: $0) } }
        }
    }
}
