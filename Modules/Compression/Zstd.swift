import CZstd

/// libzstd (Debian `libzstd-dev`): the only importer of `CZstd`. One-shot compression with a reused context, so a
/// per-frame caller allocates nothing.
public final class ZstdCompressor {
    private let context: OpaquePointer
    public let level: Int32

    public init(level: Int32 = 1) {
        guard let c = ZSTD_createCCtx() else { fatalError("ZSTD_createCCtx: out of memory") }
        context = c
        self.level = level
    }

    deinit { ZSTD_freeCCtx(context) }

    /// The largest compressed size of `count` bytes.
    public static func bound(_ count: Int) -> Int { ZSTD_compressBound(count) }

    /// Compresses `source` into `destination` (at least `bound(source.count)` long); returns the compressed size.
    public func compress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer)
        throws(ZstdError) -> Int
    {
        let n = ZSTD_compressCCtx(
            context, destination.baseAddress, destination.count, source.baseAddress, source.count, level)
        if ZSTD_isError(n) != 0 { throw ZstdError(n) }
        return n
    }
}

/// Decompression with a reused context.
public final class ZstdDecompressor {
    private let context: OpaquePointer

    public init() {
        guard let c = ZSTD_createDCtx() else { fatalError("ZSTD_createDCtx: out of memory") }
        context = c
    }

    deinit { ZSTD_freeDCtx(context) }

    /// Decompresses one zstd frame into `destination`; returns the decompressed size.
    public func decompress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer)
        throws(ZstdError) -> Int
    {
        let n = ZSTD_decompressDCtx(
            context, destination.baseAddress, destination.count, source.baseAddress, source.count)
        if ZSTD_isError(n) != 0 { throw ZstdError(n) }
        return n
    }
}

public struct ZstdError: Error, Sendable, CustomStringConvertible {
    public let code: Int
    public let message: String
    init(_ code: Int) {
        self.code = code
        self.message = String(cString: ZSTD_getErrorName(code))
    }
    public var description: String { "zstd: \(message)" }
}
