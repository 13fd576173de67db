import Foundation
import Syscall

/// A session's audio kept on disk beside its ring (`OUT/audio-ring/`), so a window cut by hand from the ring at rest
/// (`ppc-tool payload mint`) has its sound too — what makes a swing the detector missed a labelled miss.
///
/// Two files: `samples.f32`, a circle of `capacity` mono Float32 samples (sample k at `(k mod capacity) × 4`), and
/// `anchors.bin`, a 32-byte header (`PPCAUDR1`, sample rate, capacity, anchor slots) and a circle of 24-byte anchors —
/// (sample number, capture-clock ns, a check word) — written about ten times a second from the same clock fit that
/// places t0. Samples a source lost are written as silence, so sample numbers stay on the source's clock. A torn anchor
/// (a crash mid-write) fails its check and is passed over.
public final class AudioRingWriter {
    public static let directoryName = "audio-ring"
    static let magic = Array("PPCAUDR1".utf8)
    static let checkKey: UInt64 = 0x5050_4341_5544_494F
    static let headerBytes = 32, anchorBytes = 24

    let samples: FileDescriptor
    let anchors: FileDescriptor
    public let capacity: Int64
    let anchorSlots: Int64
    var anchorsWritten: Int64 = 0
    /// The next sample number expected (a block past it means samples were lost: written as silence).
    var next: Int64?
    /// Silence for a gap, written from here (never allocated per block).
    let zeros = [Float](repeating: 0, count: 4_800)

    /// A new ring in `directory` (made if missing; what was there is replaced) for `seconds` of audio at `sampleRate`.
    public init(directory: String, sampleRate: Int, seconds: Double) throws {
        try FileSystem.makeDirectory(directory)
        capacity = Int64(max(1, (seconds * Double(sampleRate)).rounded(.up)))
        anchorSlots = Int64(max(64, Int(seconds * 10) + 64))
        samples = try FileDescriptor.open(
            "\(directory)/samples.f32", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        anchors = try FileDescriptor.open(
            "\(directory)/anchors.bin", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        var header = Self.magic
        for v in [Int64(sampleRate), capacity, anchorSlots] { withUnsafeBytes(of: v.littleEndian) { header += $0 } }
        try header.withUnsafeBytes { try anchors.writeAll($0, at: 0) }
    }

    /// Writes a block: samples `first ..< first + count`, silence first for any lost since the last block.
    public func write(first: Int64, _ block: UnsafeBufferPointer<Float>) throws {
        if let n = next, first > n {
            var at = max(n, first - capacity)
            while at < first {
                let k = Int(min(Int64(zeros.count), first - at))
                try zeros.withUnsafeBufferPointer { try put(at, UnsafeBufferPointer(rebasing: $0[0..<k])) }
                at += Int64(k)
            }
        }
        try put(first, block)
        next = first + Int64(block.count)
    }

    /// Samples from `first` into the circle: one write, or two where it wraps.
    func put(_ first: Int64, _ block: UnsafeBufferPointer<Float>) throws {
        guard !block.isEmpty, first >= 0 else { return }
        let slot = first % capacity
        let head = Int(min(Int64(block.count), capacity - slot))
        try samples.writeAll(
            UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(block)[0..<(head * 4)]), at: slot * 4)
        if head < block.count {
            try samples.writeAll(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(block)[(head * 4)...]), at: 0)
        }
    }

    /// Records that sample `sample` lies at `captureNs` on the capture clock.
    public func anchor(sample: Int64, captureNs: Int64) throws {
        var record = (
            sample.littleEndian, captureNs.littleEndian,
            (UInt64(bitPattern: sample) ^ UInt64(bitPattern: captureNs) ^ Self.checkKey).littleEndian
        )
        let offset = Int64(Self.headerBytes) + (anchorsWritten % anchorSlots) * Int64(Self.anchorBytes)
        try withUnsafeBytes(of: &record) { try anchors.writeAll($0, at: offset) }
        anchorsWritten += 1
    }
}

/// Reads a session's audio at rest (`AudioRingWriter`): the samples between two capture-clock times, placed as the
/// session placed them.
public enum AudioRingAtRest {
    public struct Cut: Sendable {
        public let samples: [Float]
        public let sampleRate: Int
        /// Capture-clock time of `samples[0]`, and the period between samples there (ns), from the anchors around it.
        public let firstSampleNs: Int64
        public let nsPerSample: Double
    }

    public struct AtRestError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The audio from `fromNs` to `toNs` (capture clock). Refused, saying what the ring holds, when that span is not
    /// (or no longer) in it.
    public static func read(directory: String, fromNs: Int64, toNs: Int64) throws -> Cut {
        let anchorPath = "\(directory)/anchors.bin"
        let samplePath = "\(directory)/samples.f32"
        guard FileSystem.isRegularFile(anchorPath), FileSystem.isRegularFile(samplePath) else {
            throw AtRestError(
                description: "\(directory): no audio at rest (a session without an audio source, or older)")
        }
        let raw = try FileSystem.readSmallFile(anchorPath, limit: 64 << 20, regularFileOnly: true)
        func int64(_ at: Int) -> Int64 {
            raw[at..<(at + 8)].enumerated().reduce(Int64(0)) { $0 | Int64($1.element) << (8 * $1.offset) }
        }
        guard raw.count >= AudioRingWriter.headerBytes, Array(raw[0..<8]) == AudioRingWriter.magic else {
            throw AtRestError(description: "\(anchorPath): not an audio ring's anchors")
        }
        let rate = int64(8)
        let capacity = int64(16)
        guard (1_000...384_000).contains(rate), capacity > 0, capacity <= Int64(1) << 34 else {
            throw AtRestError(description: "\(anchorPath): a rate of \(rate) Hz or a capacity of \(capacity) samples")
        }
        var points: [(sample: Int64, ns: Int64)] = []
        var at = AudioRingWriter.headerBytes
        while at + AudioRingWriter.anchorBytes <= raw.count {
            let s = int64(at)
            let ns = int64(at + 8)
            let check = UInt64(bitPattern: int64(at + 16))
            if check == UInt64(bitPattern: s) ^ UInt64(bitPattern: ns) ^ AudioRingWriter.checkKey, s >= 0 {
                points.append((s, ns))
            }
            at += AudioRingWriter.anchorBytes
        }
        points.sort { $0.sample < $1.sample }
        guard let newest = points.last, let oldest = points.first, points.count >= 2 else {
            throw AtRestError(description: "\(directory): fewer than two anchors: no audio placed yet")
        }
        // The samples still held: the newest anchor's capacity back (what is older was written over).
        let heldFrom = max(oldest.sample, newest.sample - capacity + 1)
        let held = points.filter { $0.sample >= heldFrom }
        guard held.count >= 2, let first = held.first else {
            throw AtRestError(description: "\(directory): too few anchors in what the ring still holds")
        }
        func sample(ofNs t: Int64) -> Double {
            // The anchors around t (or the nearest two), linearly between them.
            let i = held.firstIndex { $0.ns >= t } ?? (held.count - 1)
            let (a, b) = i == 0 ? (held[0], held[1]) : (held[i - 1], held[i])
            let slope = Double(b.sample - a.sample) / Double(max(1, b.ns - a.ns))
            return Double(a.sample) + Double(t - a.ns) * slope
        }
        guard fromNs >= first.ns, toNs <= newest.ns, toNs > fromNs else {
            throw AtRestError(
                description:
                    "\(directory): holds audio from \(first.ns) to \(newest.ns) ns; \(fromNs)…\(toNs) ns is not all there"
            )
        }
        let s0 = Int64(sample(ofNs: fromNs).rounded(.up))
        let s1 = Int64(sample(ofNs: toNs).rounded(.down))
        let count = Int(max(0, s1 - s0))
        var out = [Float](repeating: 0, count: count)
        let fd = try FileDescriptor.openRegularFile(samplePath)
        try out.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < count {
                let slot = (s0 + Int64(done)) % capacity
                let n = Int(min(Int64(count - done), capacity - slot))
                let target = UnsafeMutableRawBufferPointer(rebasing: buffer[(done * 4)..<((done + n) * 4)])
                var got = 0
                while got < target.count {
                    let r = try fd.read(
                        into: UnsafeMutableRawBufferPointer(rebasing: target[got...]), at: slot * 4 + Int64(got))
                    guard r > 0 else { throw AtRestError(description: "\(samplePath): shorter than its anchors say") }
                    got += r
                }
                done += n
            }
        }
        // The period between samples there, from the anchors around the cut.
        let a = held.last { $0.sample <= s0 } ?? held[0]
        let b = held.first { $0.sample > s0 + Int64(rate / 2) } ?? newest
        let nsPerSample = b.sample > a.sample ? Double(b.ns - a.ns) / Double(b.sample - a.sample) : 1e9 / Double(rate)
        let firstNs = a.ns + Int64((Double(s0 - a.sample) * nsPerSample).rounded())
        return Cut(samples: out, sampleRate: Int(rate), firstSampleNs: firstNs, nsPerSample: nsPerSample)
    }
}
