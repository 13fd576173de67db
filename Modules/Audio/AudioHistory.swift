/// The last seconds of mono audio, so a candidate's window (detect.audioWindowNs with detect.audioPreNs of pre-roll)
/// can be cut after the detector has decided. One writer (the audio thread); `window` is called by that same thread.
/// Appending copies into preallocated storage: nothing is allocated per block.
public final class AudioHistory {
    public let sampleRate: Int
    let capacity: Int
    var storage: [Float]
    /// Samples ever appended (the absolute index of the next one).
    public private(set) var written: Int64 = 0

    public init(sampleRate: Int, seconds: Double) {
        self.sampleRate = sampleRate
        capacity = max(1, Int(Double(sampleRate) * seconds))
        storage = [Float](repeating: 0, count: capacity)
    }

    public func append(_ samples: UnsafeBufferPointer<Float>) {
        storage.withUnsafeMutableBufferPointer { s in
            for x in samples {
                s[Int(written % Int64(capacity))] = x
                written += 1
            }
        }
    }

    /// `count` samples the stream lost: held as silence (at most the capacity is written), so sample numbers stay on
    /// the source's clock.
    public func skip(_ count: Int64) {
        guard count > 0 else { return }
        let zeros = min(count, Int64(capacity))
        written += count - zeros
        storage.withUnsafeMutableBufferPointer { s in
            for _ in 0..<zeros {
                s[Int(written % Int64(capacity))] = 0
                written += 1
            }
        }
    }

    /// Samples [first, first + count) if all are still held; the part not held is reported as `missing` and zero-filled
    /// (a window cut near the start of a stream).
    public func window(first: Int64, count: Int) -> (samples: [Float], missing: Int) {
        var out = [Float](repeating: 0, count: count)
        var missing = 0
        let oldest = max(0, written - Int64(capacity))
        for i in 0..<count {
            let n = first + Int64(i)
            if n >= oldest && n < written { out[i] = storage[Int(n % Int64(capacity))] } else { missing += 1 }
        }
        return (out, missing)
    }
}

/// Writes mono 32-bit float WAV (WAVE_FORMAT_IEEE_FLOAT): exact samples, readable by every tool.
public enum WAVWriter {
    public static func data(samples: [Float], sampleRate: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(58 + samples.count * 4)
        func put(_ s: String) { out += Array(s.utf8) }
        func put32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        func put16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        let dataBytes = UInt32(samples.count * 4)
        put("RIFF")
        put32(50 + dataBytes)
        put("WAVE")
        put("fmt ")
        put32(18)
        put16(3)
        put16(1)
        put32(UInt32(sampleRate))
        put32(UInt32(sampleRate * 4))
        put16(4)
        put16(32)
        put16(0)
        put("fact")
        put32(4)
        put32(UInt32(samples.count))
        put("data")
        put32(dataBytes)
        samples.withUnsafeBytes { out += $0 }
        return out
    }
}
