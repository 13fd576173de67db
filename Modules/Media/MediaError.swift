import CFFmpeg
import Foundation

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

    /// From a libav return code, with av_strerror's text and what libav logged on this thread about it.
    init(averror: Int32, operation: String, path: String? = nil) {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(averror, &buffer, buffer.count)
        var text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let said = MediaLog.takeRecent()
        if !said.isEmpty { text += " (libav: \(said.joined(separator: "; ")))" }
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

/// libav's own log, routed through ppc: nothing libav says is printed raw. Its warnings and errors are kept, per thread,
/// and the next ``MediaError`` raised on that thread carries them in its message ("… (libav: moov atom not found)"), so
/// a person reads one message from ppc that names the file and says why.
public enum MediaLog {
    /// Installs the router (idempotent). Lines below warning level are dropped.
    public static func quiet() {
        av_log_set_level(AV_LOG_WARNING)
        av_log_set_callback { avcl, level, format, args in
            guard level <= AV_LOG_WARNING, let format, let args else { return }
            var line = [CChar](repeating: 0, count: 512)
            var printPrefix: Int32 = 0
            av_log_format_line2(avcl, level, format, args, &line, Int32(line.count), &printPrefix)
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty { MediaLog.keep(text) }
        }
    }

    /// The most lines kept per thread (the newest win).
    static let kept = 4

    static func keep(_ line: String) {
        var lines = Thread.current.threadDictionary[key] as? [String] ?? []
        if lines.last == line { return }
        lines.append(line)
        if lines.count > kept { lines.removeFirst(lines.count - kept) }
        Thread.current.threadDictionary[key] = lines
    }

    /// What libav said on this thread since the last take, oldest first; cleared.
    public static func takeRecent() -> [String] {
        let lines = Thread.current.threadDictionary[key] as? [String] ?? []
        Thread.current.threadDictionary[key] = nil
        return lines
    }

    static let key = "ppc.libav.log"
}

/// 90 kHz: the MPEG-TS clock, and the encoder's time base.
public let mpegTimeBase = ppc_rational(1, 90_000)

/// Nanoseconds to 90 kHz ticks (rounded down).
@inlinable public func ticks90k(_ ns: Int64) -> Int64 { ns * 9 / 100_000 }
