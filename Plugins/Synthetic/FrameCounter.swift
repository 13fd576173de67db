/// A machine-readable frame counter drawn into the luma plane: 32 bits of the frame index and an 8-bit check, as
/// black/white blocks along the top-left edge. Blocks are large enough to survive lossy encoding, so a test can read
/// the counter back from decoded frames and prove no frame was lost, duplicated or reordered.
public enum FrameCounter {
    static let bits = 40
    /// Narrowest frame the counter fits in (40 blocks of 4 pixels).
    public static let minimumWidth = 160
    static let black: UInt8 = 16
    static let white: UInt8 = 235

    /// Block size for a frame width and height: 40 blocks fit in the left 5/6 of the width.
    static func block(width: Int, height: Int) -> (w: Int, h: Int) {
        (max(4, width * 5 / 6 / bits), max(8, height / 24))
    }

    static func check(_ index: UInt32) -> UInt8 {
        let b = withUnsafeBytes(of: index.littleEndian) { Array($0) }
        return b[0] ^ b[1] ^ b[2] ^ b[3] ^ 0xA5
    }

    /// Draws `index` into the luma plane `y` (row stride `stride`).
    public static func draw(_ index: Int64, into y: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int) {
        precondition(width >= minimumWidth, "the frame counter needs a frame at least \(minimumWidth) pixels wide")
        let (bw, bh) = block(width: width, height: height)
        let v = UInt32(truncatingIfNeeded: index)
        let word = UInt64(v) | UInt64(check(v)) << 32
        for bit in 0..<bits {
            let value = (word >> UInt64(bit)) & 1 == 1 ? white : black
            let x0 = bit * bw
            for row in 0..<bh {
                (y + row * stride + x0).update(repeating: value, count: bw)
            }
        }
    }

    /// Reads the counter back from a luma plane; nil when the check does not match (not a synthetic frame, or
    /// damaged beyond reading).
    public static func read(from y: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int) -> Int64? {
        let (bw, bh) = block(width: width, height: height)
        guard y.count >= (bh - 1) * stride + bits * bw else { return nil }
        var word: UInt64 = 0
        for bit in 0..<bits {
            let sample = y[(bh / 2) * stride + bit * bw + bw / 2]
            if sample >= 128 { word |= 1 << UInt64(bit) }
        }
        let v = UInt32(truncatingIfNeeded: word)
        guard UInt8(truncatingIfNeeded: word >> 32) == check(v) else { return nil }
        return Int64(v)
    }
}
