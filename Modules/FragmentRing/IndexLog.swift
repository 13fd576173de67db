import Checksum
import Glibc
import Syscall

/// One 64-byte record of `index.log`, little-endian. The log is the ring's commit point: a fragment is visible only
/// once its record is durable, and a record counts only when its own XXH3 checks.
///
/// ```
/// off size field
///  0   4   magic "PPCR"
///  4   1   type: 1 fragment, 2 pin, 3 unpin, 4 generation
///  5   1   flags: bit 0 = starts with a keyframe
///  6   2   codec
///  8   8   sequence            (pin: first sequence)
/// 16   8   startNs             (pin: pin id; unpin: pin id)
/// 24   8   endNs               (pin: last sequence)
/// 32   8   byteLength
/// 40   8   XXH3-64 of the fragment bytes
/// 48   4   frameCount
/// 52   4   generation
/// 56   8   XXH3-64 of bytes 0..<56
/// ```
struct IndexRecord: Equatable {
    enum Kind: UInt8 {
        case fragment = 1
        case pin = 2
        case unpin = 3
        case generation = 4
    }

    static let size = 64
    static let magic: UInt32 = 0x5243_5050  // "PPCR" little-endian

    var kind: Kind
    var flags: UInt8 = 0
    var codec: UInt16 = 0
    var sequence: UInt64 = 0
    var a: Int64 = 0
    var b: Int64 = 0
    var byteLength: UInt64 = 0
    var checksum: UInt64 = 0
    var frameCount: UInt32 = 0
    var generation: UInt32 = 0

    static func fragment(_ f: FragmentInfo) -> IndexRecord {
        IndexRecord(
            kind: .fragment, flags: f.startsWithKeyframe ? 1 : 0, codec: f.codec.rawValue,
            sequence: f.sequence.rawValue,
            a: f.startNs, b: f.endNs, byteLength: UInt64(f.byteLength), checksum: f.checksum, frameCount: f.frameCount,
            generation: f.generation)
    }

    var fragmentInfo: FragmentInfo {
        FragmentInfo(
            sequence: SequenceNumber(sequence), generation: generation, startNs: a, endNs: b, frameCount: frameCount,
            startsWithKeyframe: flags & 1 == 1, codec: FragmentCodec(rawValue: codec), byteLength: Int64(byteLength),
            checksum: checksum)
    }

    func encode(into p: UnsafeMutableRawBufferPointer) {
        precondition(p.count >= Self.size)
        p.storeBytes(of: Self.magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        p.storeBytes(of: kind.rawValue, toByteOffset: 4, as: UInt8.self)
        p.storeBytes(of: flags, toByteOffset: 5, as: UInt8.self)
        p.storeBytes(of: codec.littleEndian, toByteOffset: 6, as: UInt16.self)
        p.storeBytes(of: sequence.littleEndian, toByteOffset: 8, as: UInt64.self)
        p.storeBytes(of: a.littleEndian, toByteOffset: 16, as: Int64.self)
        p.storeBytes(of: b.littleEndian, toByteOffset: 24, as: Int64.self)
        p.storeBytes(of: byteLength.littleEndian, toByteOffset: 32, as: UInt64.self)
        p.storeBytes(of: checksum.littleEndian, toByteOffset: 40, as: UInt64.self)
        p.storeBytes(of: frameCount.littleEndian, toByteOffset: 48, as: UInt32.self)
        p.storeBytes(of: generation.littleEndian, toByteOffset: 52, as: UInt32.self)
        let sum = XXH3.hash(UnsafeRawBufferPointer(rebasing: p[0..<56]))
        p.storeBytes(of: sum.littleEndian, toByteOffset: 56, as: UInt64.self)
    }

    /// Decodes a record; nil when the magic, the type or the record's own checksum is wrong (a torn or damaged record).
    static func decode(_ p: UnsafeRawBufferPointer) -> IndexRecord? {
        guard p.count >= size else { return nil }
        func load<T: FixedWidthInteger>(_ off: Int, _: T.Type) -> T {
            T(littleEndian: p.loadUnaligned(fromByteOffset: off, as: T.self))
        }
        guard load(0, UInt32.self) == magic,
            load(56, UInt64.self) == XXH3.hash(UnsafeRawBufferPointer(rebasing: p[0..<56])),
            let kind = Kind(rawValue: load(4, UInt8.self))
        else { return nil }
        return IndexRecord(
            kind: kind, flags: load(5, UInt8.self), codec: load(6, UInt16.self), sequence: load(8, UInt64.self),
            a: load(16, Int64.self), b: load(24, Int64.self), byteLength: load(32, UInt64.self),
            checksum: load(40, UInt64.self), frameCount: load(48, UInt32.self), generation: load(52, UInt32.self))
    }
}

/// The append-only `index.log`. Appends are serialised by the ring's log lock; each append is made durable with
/// fdatasync when the ring's durability is `.fsync`.
///
/// The file is preallocated with written zeros in steps of ``preallocation`` bytes, so an append overwrites blocks
/// that already exist and its fdatasync flushes one data block without a journal commit for a size change. The log
/// ends at the last valid record; all-zero records after it are preallocation, not damage.
final class IndexLog {
    static let preallocation = 1 << 18

    let path: String
    private(set) var fd: FileDescriptor
    /// End of the last record written (the logical length).
    private(set) var length: Int64
    /// Bytes the file holds (≥ length; the rest is zeros).
    private(set) var allocated: Int64
    let sync: Bool

    init(path: String, sync: Bool) throws(SystemError) {
        self.path = path
        self.sync = sync
        self.fd = try FileDescriptor.open(path, O_RDWR | O_CREAT)
        self.allocated = try fd.size()
        self.length = allocated  // until readAll finds the end
    }

    var records: Int { Int(length) / IndexRecord.size }

    /// Every whole, valid record in order; the offset after the last good one; how many damaged records lie before
    /// it; and how many non-zero bytes lie after it (a torn append).
    func readAll() throws -> (records: [IndexRecord], validLength: Int64, damaged: Int, tornBytes: Int64) {
        let size = try fd.size()
        var out: [IndexRecord] = []
        var badOffsets: [Int64] = []
        var validLength: Int64 = 0
        var lastNonZero: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: Int64 = 0
        while offset < size {
            let n = try buffer.withUnsafeMutableBytes { b in try fd.read(into: b, at: offset) }
            if n == 0 { break }
            buffer.withUnsafeBytes { b in
                for i in stride(from: 0, to: n, by: IndexRecord.size) {
                    let end = min(n, i + IndexRecord.size)
                    let slice = UnsafeRawBufferPointer(rebasing: b[i..<end])
                    guard let last = slice.lastIndex(where: { $0 != 0 }) else { continue }
                    lastNonZero = offset + Int64(i + last + 1)
                    if end - i == IndexRecord.size, let r = IndexRecord.decode(slice) {
                        out.append(r)
                        validLength = offset + Int64(end)
                    } else {
                        badOffsets.append(offset + Int64(i))
                    }
                }
            }
            offset += Int64(n)
        }
        length = validLength
        // Bad records after the last good one are a torn tail, not damage in the middle.
        return (out, validLength, badOffsets.filter { $0 < validLength }.count, max(0, lastNonZero - validLength))
    }

    /// Zeroes everything after `length` (a torn record left by a crash mid-append), keeping the preallocation.
    func truncate(to length: Int64) throws {
        let zeros = [UInt8](repeating: 0, count: Int(max(0, allocated - length)))
        try zeros.withUnsafeBytes { z in try fd.writeAll(z, at: length) }
        self.length = length
    }

    /// Makes sure `bytes` more fit in the preallocated region, growing it by written zeros if not.
    private func reserve(_ bytes: Int) throws {
        guard length + Int64(bytes) > allocated else { return }
        let zeros = [UInt8](repeating: 0, count: Self.preallocation)
        try zeros.withUnsafeBytes { z in try fd.writeAll(z, at: allocated) }
        allocated += Int64(Self.preallocation)
        if sync { try fd.sync() }  // the size changed: a full fsync, once per 4096 records
    }

    func append(_ record: IndexRecord) throws {
        try reserve(IndexRecord.size)
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        try withUnsafeMutableBytes(of: &bytes) { p in
            record.encode(into: p)
            try fd.writeAll(UnsafeRawBufferPointer(p), at: length)
        }
        if sync { try fd.syncData() }
        length += Int64(IndexRecord.size)
    }

    /// Replaces the log with `records`, atomically (write aside, fsync, rename, fsync the directory), preallocated.
    func rewrite(_ records: [IndexRecord], directory: String) throws {
        let tmp = path + ".compact"
        try FileSystem.removeIfPresent(tmp)
        let used = records.count * IndexRecord.size
        let size = (used / Self.preallocation + 1) * Self.preallocation
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { p in
            for (i, r) in records.enumerated() {
                r.encode(
                    into: UnsafeMutableRawBufferPointer(
                        rebasing: p[(i * IndexRecord.size)..<((i + 1) * IndexRecord.size)]))
            }
        }
        do {
            let out = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
            try bytes.withUnsafeBytes { p in try out.writeAll(p) }
            if sync { try out.sync() }
        }
        try FileSystem.rename(tmp, path)
        if sync { try FileSystem.syncDirectory(directory) }
        fd = try FileDescriptor.open(path, O_RDWR)
        length = Int64(used)
        allocated = Int64(size)
    }
}
