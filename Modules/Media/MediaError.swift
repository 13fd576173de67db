import CFFmpeg

/// A libav* call failed, or a media file was not what it should be. Names the operation, the file and libav's reason.
public struct MediaError: Error, Sendable, CustomStringConvertible {
    /// The libav error code (negative), or 0 when the failure is ppc's own check.
    public let code: Int32
    public let operation: String
    public let path: String?
    public let message: String

    public init(code: Int32 = 0, operation: String, path: String? = nil, _ message: String) {
        self.code = code
        self.operation = operation
        self.path = path
        self.message = message
    }

    /// From a libav return code, with av_strerror's text.
    init(averror: Int32, operation: String, path: String? = nil) {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(averror, &buffer, buffer.count)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.init(code: averror, operation: operation, path: path, text)
    }

    public var description: String {
        if let path { return "\(operation) \(path): \(message)" }
        return "\(operation): \(message)"
    }
}

/// Runs a libav call; a negative result becomes a ``MediaError``.
@discardableResult
func check(_ result: Int32, _ operation: @autoclosure () -> String, path: String? = nil) throws(MediaError) -> Int32 {
    if result < 0 { throw MediaError(averror: result, operation: operation(), path: path) }
    return result
}

/// libav logs only errors, through its own logger, unless asked otherwise.
public enum MediaLog {
    public static func quiet() { av_log_set_level(AV_LOG_ERROR) }
}

/// 90 kHz: the MPEG-TS clock, and the encoder's time base.
public let mpegTimeBase = ppc_rational(1, 90_000)

/// Nanoseconds to 90 kHz ticks (rounded down).
@inlinable public func ticks90k(_ ns: Int64) -> Int64 { ns * 9 / 100_000 }
