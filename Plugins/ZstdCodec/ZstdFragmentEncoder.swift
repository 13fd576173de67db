import Compression
import Config
import FragmentRing
import Pipeline

/// `zstd`: lossless NV12 fragments — every frame compressed with libzstd on its own, each fragment self-contained.
/// The reference against which a lossy bitrate's cost can be measured (seed 000 E-M2).
///
/// Fragment layout (little-endian):
/// ```
/// "PPCZ" u8 version=1 u8 pixelFormat(1=nv12) u16 0  u32 width  u32 height  u32 fps
/// per frame: i64 captureTimeNs  u32 compressedSize  zstd frame (width×height×3/2 bytes of NV12 when decompressed)
/// ```
public final class ZstdFragmentEncoder: VideoEncoder {
    let compressor: ZstdCompressor
    /// The NV12 frame the source fills: owned storage, allocated once at start.
    var frame = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    var packed: [UInt8] = []
    var output: FragmentOutput?
    var format: VideoFormat?
    var grid = FragmentGrid(fragmentNs: 1, frameIntervalNs: 1)
    var open: (startNs: Int64, frames: Int) = (0, 0)
    public static let magic: [UInt8] = Array("PPCZ".utf8)

    public init(level: Int32) { compressor = ZstdCompressor(level: level) }

    deinit { frame.deallocate() }

    public var fragmentExtension: String { "zst" }

    public func start(format: VideoFormat, fragmentNs: Int64, output: FragmentOutput) throws {
        guard format.pixelFormat == .nv12 else {
            throw ZstdCodecError("zstd stores NV12; the source gives \(format.pixelFormat)")
        }
        self.format = format
        grid = FragmentGrid(fragmentNs: fragmentNs, frameIntervalNs: format.frameIntervalNs, cuts: output.fragmentCuts)
        self.output = output
        frame.deallocate()
        frame = .allocate(byteCount: format.frameBytes, alignment: 64)
        frame.initializeMemory(as: UInt8.self, repeating: 0)
        packed = [UInt8](repeating: 0, count: 12 + ZstdCompressor.bound(format.frameBytes))
    }

    public func nextFrameBuffer() throws -> VideoFrameBuffer {
        guard let format else { throw ZstdCodecError("encoder not started") }
        return VideoFrameBuffer(contiguous: frame.baseAddress!, width: format.width, height: format.height)
    }

    public func encodeFrame(_ info: FrameInfo) throws {
        guard let format, let output else { throw ZstdCodecError("encoder not started") }
        let place = grid.place(info.timeNs)
        if place.opens {
            if place.closesPrevious { try close(endNs: info.timeNs) }
            try output.beginFragment()
            var header = Self.magic + [1, 1, 0, 0]
            for v in [UInt32(format.width), UInt32(format.height), UInt32(format.framesPerSecond)] {
                withUnsafeBytes(of: v.littleEndian) { header += $0 }
            }
            try header.withUnsafeBytes { try output.write($0) }
            open = (info.timeNs, 0)
        }
        let src = UnsafeRawBufferPointer(frame)
        let size = try packed.withUnsafeMutableBytes { dst in
            let n = try compressor.compress(src, into: UnsafeMutableRawBufferPointer(rebasing: dst[12...]))
            dst.storeBytes(of: info.timeNs.littleEndian, toByteOffset: 0, as: Int64.self)
            dst.storeBytes(of: UInt32(n).littleEndian, toByteOffset: 8, as: UInt32.self)
            return 12 + n
        }
        try packed.withUnsafeBytes { try output.write(UnsafeRawBufferPointer(rebasing: $0[0..<size])) }
        open.frames += 1
    }

    public func finish() throws {
        guard let format, grid.hasOpenFragment else { return }
        try close(endNs: grid.lastFrameNs + format.frameIntervalNs)
        grid.reset()
    }

    func close(endNs: Int64) throws {
        try output!.endFragment(
            FragmentTiming(
                startNs: open.startNs, endNs: endNs, frameCount: UInt32(open.frames), startsWithKeyframe: true,
                codec: .zstdNV12))
    }

    /// Reads a fragment back: each frame's capture time and NV12 bytes. Throws naming what is wrong with a damaged one.
    public static func decode(_ bytes: [UInt8]) throws -> (
        width: Int, height: Int, frames: [(timeNs: Int64, nv12: [UInt8])]
    ) {
        guard bytes.count >= 20, Array(bytes[0..<4]) == magic, bytes[4] == 1, bytes[5] == 1 else {
            throw ZstdCodecError("not a zstd-nv12 fragment (bad magic or version)")
        }
        func u32(_ at: Int) -> Int {
            Int(bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt32.self)) })
        }
        let width = u32(8)
        let height = u32(12)
        let frameBytes = width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
        let d = ZstdDecompressor()
        var frames: [(Int64, [UInt8])] = []
        var at = 20
        while at < bytes.count {
            guard at + 12 <= bytes.count else { throw ZstdCodecError("truncated frame header at byte \(at)") }
            let t = bytes.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: Int64.self)) }
            let n = u32(at + 8)
            guard at + 12 + n <= bytes.count else {
                throw ZstdCodecError("truncated frame at byte \(at): \(n) bytes announced")
            }
            var out = [UInt8](repeating: 0, count: frameBytes)
            let got = try bytes.withUnsafeBytes { src in
                try out.withUnsafeMutableBytes {
                    try d.decompress(UnsafeRawBufferPointer(rebasing: src[(at + 12)..<(at + 12 + n)]), into: $0)
                }
            }
            guard got == frameBytes else {
                throw ZstdCodecError("frame at byte \(at) decompressed to \(got) bytes, expected \(frameBytes)")
            }
            frames.append((t, out))
            at += 12 + n
        }
        return (width, height, frames)
    }

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "zstd", kind: .encoder,
            summary:
                "Lossless NV12 fragments (libzstd, each frame independent): the reference for measuring a lossy bitrate's cost.",
            parameters: [
                .init(
                    "level", .integer, default: .number(1, isInteger: true), minimum: 1, maximum: 19,
                    "zstd level (1 fastest … 19).")
            ]),
        make: { p, _ in ZstdFragmentEncoder(level: Int32(p.integer("level"))) })
}

public struct ZstdCodecError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
